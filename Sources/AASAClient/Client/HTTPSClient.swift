import AASAHTTP
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 request per connection over `https://` (the shared ``TLSStream``) or
/// `http://`, blocking from the caller's view and bounded by one time-out for the whole
/// exchange: resolve, connect, handshake, request and response. It follows no redirect (a
/// 3xx is a response like any other: `aasa check` reports it, as Apple's CDN refuses it).
///
/// Under the hood the socket is non-blocking and every wait is a poll(2) on it with the time
/// left, so a server that accepts and never answers costs exactly the time-out. The deadline
/// is also consulted after every read that returned bytes: a peer that never stops sending
/// (interim responses, trailers, a byte at a time) costs the time-out too, never more.
public final class HTTPSClient: Sendable {
    public struct Configuration: Sendable {
        /// For the whole exchange, in seconds.
        public var timeoutSeconds: Double = 10
        /// A PEM file of trusted CAs instead of the system store (`--cacert`).
        public var caFile: String?
        /// Trust ``caFile`` besides the system store rather than instead of it.
        public var caFileKeepsSystemStore = false
        /// Connect to these addresses instead of resolving the URL's host; SNI, the name
        /// checked and `Host` stay the URL's (curl's `--connect-to`).
        public var connectTo: [SocketAddress]?
        /// The body is read up to this many bytes; more is ``HTTPClientError`` with the head.
        public var maxBodyBytes = 1024 * 1024
        /// When false, a chain or name that does not verify fails the exchange in the `tls`
        /// phase; when true, the exchange goes on and ``HTTPResponse/tls`` says what failed.
        public var allowUnverifiedCertificate = false
        public var userAgent = "aasa/0.1"

        public init(timeoutSeconds: Double = 10, caFile: String? = nil, connectTo: [SocketAddress]? = nil,
                    allowUnverifiedCertificate: Bool = false, userAgent: String = "aasa/0.1") {
            self.timeoutSeconds = timeoutSeconds
            self.caFile = caFile
            self.connectTo = connectTo
            self.allowUnverifiedCertificate = allowUnverifiedCertificate
            self.userAgent = userAgent
        }
    }

    public let configuration: Configuration
    /// Verification is never enforced by OpenSSL itself: the handshake completes, the verdict
    /// is read from the stream, and this client decides (a precise reason instead of a
    /// handshake alert).
    private let context: TLSClientContext

    /// Fails when the CA file (or the system store) cannot be loaded.
    public init(_ configuration: Configuration = Configuration()) throws(HTTPClientError) {
        self.configuration = configuration
        do {
            // Shared by the clients that trust the same: loading the system store is the dearest
            // part of a client, and `aasa monitor` makes a few a check.
            context = try TLSClientContext.shared(caFile: configuration.caFile, keepsSystemStore: configuration.caFileKeepsSystemStore, verifyPeer: false)
        } catch {
            throw HTTPClientError(phase: .tls, message: "cannot load the trusted certificates: \(error)")
        }
        HTTPSClient.ignoreSIGPIPE
    }

    /// A peer that closes while OpenSSL writes would otherwise kill the process (swift-nio
    /// ignores SIGPIPE once, process-wide, too).
    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN); return () }()

    public func get(_ url: HTTPURL, headers: [(name: String, value: String)] = [], deadline: Int64? = nil) throws(HTTPClientError) -> HTTPResponse {
        try send(HTTPClientRequest(url: url, headers: headers), deadline: deadline)
    }

    /// One exchange, ended by the configured time-out or by `deadline` (a monotonic time in
    /// milliseconds, ``monotonicMilliseconds()``), whichever comes first: several exchanges
    /// can share one budget (`aasa check`'s legacy location, an ACME order).
    public func send(_ request: HTTPClientRequest, deadline: Int64? = nil) throws(HTTPClientError) -> HTTPResponse {
        let timeoutMilliseconds = Int64(configuration.timeoutSeconds * 1000)
        var end = monotonicMilliseconds() + timeoutMilliseconds
        if let deadline { end = min(end, deadline) }
        let exchange = Exchange(deadline: end, timeoutText: Exchange.seconds(configuration.timeoutSeconds))
        let url = request.url
        let addresses: [SocketAddress]
        if let connectTo = configuration.connectTo {
            addresses = connectTo
        } else {
            do {
                addresses = try Resolver.addresses(of: url.host, port: url.port)
            } catch {
                throw HTTPClientError(phase: .resolve, message: "\(url.host) does not resolve: \(error.reason)")
            }
        }
        let (fd, address) = try exchange.connect(addresses)
        defer { close(fd) }

        var channel: ByteStream = .plain(fd)
        var summary: TLSSummary?
        if url.isSecure {
            let stream: TLSStream
            do {
                stream = try TLSStream(client: context, fd: fd, serverName: url.host)
            } catch {
                throw HTTPClientError(phase: .tls, message: "\(error)")
            }
            channel = .tls(stream)
            try exchange.handshake(stream, fd: fd, address: address)
            let s = TLSSummary(protocolVersion: stream.protocolVersion, verificationFailure: stream.verificationFailure,
                               peerNotAfter: stream.peerNotAfter, negotiatedProtocol: stream.negotiatedProtocol)
            summary = s
            if let failure = s.verificationFailure, !configuration.allowUnverifiedCertificate {
                throw HTTPClientError(phase: .tls, message: "the certificate does not verify for \(url.host): \(failure)", tls: s)
            }
        }
        defer { if case .tls(let stream) = channel { stream.shutdown() } }

        try exchange.write(request.serialized(userAgent: configuration.userAgent), channel, fd: fd, tls: summary)
        var parser = ResponseParser(limits: .init(maxBodyBytes: configuration.maxBodyBytes),
                                    isResponseToHEAD: request.method == "HEAD")
        try exchange.read(into: &parser, channel, fd: fd, tls: summary)
        guard let head = parser.head else { preconditionFailure("a complete response has a head") }
        return HTTPResponse(head: head, body: parser.body, address: address, tls: summary)
    }
}

/// The steps of one exchange against one deadline.
private struct Exchange {
    let deadline: Int64
    let timeoutText: String

    static func seconds(_ s: Double) -> String {
        s == s.rounded() ? "\(Int(s)) s" : "\(s) s"
    }

    /// Waits until `fd` is ready for `events`; false when the deadline passed first.
    func wait(_ fd: Int32, _ events: Int16) -> Bool {
        while true {
            let left = deadline - monotonicMilliseconds()
            if left <= 0 { return false }
            var p = pollfd(fd: fd, events: events, revents: 0)
            do {
                if case .done(let n) = try syscall("poll", { poll(&p, 1, Int32(min(left, 60_000))) }), n > 0 { return true }
            } catch {
                // poll itself failing (ENOMEM) leaves the next read or write to report it.
                return true
            }
        }
    }

    /// Tries each address in turn with a non-blocking connect; the first that connects wins.
    func connect(_ addresses: [SocketAddress]) throws(HTTPClientError) -> (Int32, SocketAddress) {
        var failures: [String] = []
        for address in addresses {
            let family = address.family == .v6 ? AF_INET6 : AF_INET
            let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else {
                failures.append("\(address): \(SystemError("socket", errno: errno))")
                continue
            }
            var storage = SocketAddress.Storage()
            _ = storage.fill(host: address.host, port: address.port, family: address.family)
            let length = storage.length
            let r = withUnsafePointer(to: &storage.storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
            }
            var error: Int32 = r == 0 ? 0 : errno
            if error == EINPROGRESS || error == EINTR {
                guard wait(fd, Int16(POLLOUT)) else {
                    close(fd)
                    throw HTTPClientError(phase: .connect, message: "connecting to \(address) timed out after \(timeoutText)", isTimeout: true)
                }
                var length = socklen_t(MemoryLayout<Int32>.size)
                if getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 { error = errno }
            }
            if error == 0 {
                try? Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                return (fd, address)
            }
            close(fd)
            failures.append("\(address): \(String(cString: strerror(error)))")
        }
        throw HTTPClientError(phase: .connect, message: "cannot connect to \(failures.joined(separator: "; "))")
    }

    func handshake(_ stream: TLSStream, fd: Int32, address: SocketAddress) throws(HTTPClientError) {
        while true {
            if monotonicMilliseconds() >= deadline {
                throw HTTPClientError(phase: .tls, message: "no TLS handshake with \(address) within \(timeoutText)", isTimeout: true)
            }
            let progress = stream.handshake()
            switch progress {
            case .done: return
            case .wantRead, .wantWrite:
                guard wait(fd, progress == .wantWrite ? Int16(POLLOUT) : Int16(POLLIN)) else {
                    throw HTTPClientError(phase: .tls, message: "no TLS handshake with \(address) within \(timeoutText)", isTimeout: true)
                }
            case .closed:
                throw HTTPClientError(phase: .tls, message: "\(address) closed the connection during the TLS handshake")
            case .failed(let reason):
                throw HTTPClientError(phase: .tls, message: "TLS handshake with \(address) failed: \(reason)")
            }
        }
    }

    func write(_ bytes: [UInt8], _ channel: ByteStream, fd: Int32, tls: TLSSummary?) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            let progress = bytes.withUnsafeBytes { channel.write($0.baseAddress! + offset, count: bytes.count - offset) }
            switch progress {
            case .done(let n): offset += n
            case .wantRead, .wantWrite:
                guard wait(fd, progress == .wantRead ? Int16(POLLIN) : Int16(POLLOUT)) else {
                    throw HTTPClientError(phase: .response, message: "sending the request timed out after \(timeoutText)", isTimeout: true, tls: tls)
                }
            case .closed:
                throw HTTPClientError(phase: .response, message: "the server closed the connection before the request was sent", tls: tls)
            case .failed(let reason):
                throw HTTPClientError(phase: .response, message: "sending the request failed: \(reason)", tls: tls)
            }
        }
    }

    func read(into parser: inout ResponseParser, _ channel: ByteStream, fd: Int32, tls: TLSSummary?) throws(HTTPClientError) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        // Whether the peer sent anything: a failure after that is an answer that was no usable
        // response, not a connection that failed (``HTTPClientError/answered``).
        var answered = false
        while !parser.isComplete {
            // Every turn, not only when a read would block: bytes that keep coming must not
            // keep the exchange alive past its deadline.
            if monotonicMilliseconds() >= deadline {
                let what = parser.head == nil ? "no complete response head (bytes kept arriving)" : "the response was not complete"
                throw HTTPClientError(phase: .response, message: "\(what) within \(timeoutText)", isTimeout: true, tls: tls, head: parser.head,
                                      answered: answered)
            }
            let progress = buffer.withUnsafeMutableBytes { channel.read(into: $0.baseAddress!, count: $0.count) }
            switch progress {
            case .done(let n):
                answered = answered || n > 0
                do { try parser.parse(buffer[0..<n]) } catch { throw Exchange.failure(error, parser, tls, answered: answered) }
            case .closed:
                // A body that runs to the close is whole only if the close is TLS's own: a TCP
                // close without close_notify may be a cut (RFC 8446 §6.1, RFC 9112 §8).
                if parser.isCloseDelimited, case .tls(let stream) = channel, stream.closedWithoutNotify {
                    throw HTTPClientError(phase: .response, message: "the response was truncated (TLS closed without close_notify)",
                                          tls: tls, head: parser.head, parseError: .truncated, answered: answered)
                }
                do { try parser.endOfInput() } catch { throw Exchange.failure(error, parser, tls, answered: answered) }
            case .wantRead, .wantWrite:
                guard wait(fd, progress == .wantWrite ? Int16(POLLOUT) : Int16(POLLIN)) else {
                    let what = parser.head == nil ? "no response" : "the response was not complete"
                    throw HTTPClientError(phase: .response, message: "\(what) within \(timeoutText)", isTimeout: true, tls: tls, head: parser.head,
                                          answered: answered)
                }
            case .failed(let reason):
                throw HTTPClientError(phase: .response, message: "reading the response failed: \(reason)", tls: tls, head: parser.head,
                                      answered: answered)
            }
        }
    }

    static func failure(_ error: ResponseParseError, _ parser: ResponseParser, _ tls: TLSSummary?, answered: Bool) -> HTTPClientError {
        HTTPClientError(phase: .response, message: "\(error)", tls: tls, head: parser.head, parseError: error, answered: answered)
    }
}
