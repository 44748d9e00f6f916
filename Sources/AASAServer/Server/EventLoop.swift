import AASACore
import AASAHTTP
import CLinux
import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A bound listening socket. Every loop watches the same HTTPS and HTTP listeners with
/// EPOLLEXCLUSIVE, so the kernel hands each new connection to one loop.
struct Listener: Sendable {
    let fd: Int32
    let kind: ListenerKind
    let address: SocketAddress
}

/// Timeouts and limits of SPEC 3.3, in milliseconds where they are times.
public struct ConnectionLimits: Sendable {
    public var handshakeTimeout: Int64 = 10_000
    public var headerTimeout: Int64 = 10_000
    public var idleTimeout: Int64 = 60_000
    /// How long a closing connection waits for the client to close after our response.
    public var lingerTimeout: Int64 = 2_000
    public var http = HTTPLimits()
    /// Stop reading a connection's requests while this much response is unsent (pipelining
    /// backpressure).
    public var outputHighWater = 256 * 1024
    /// Expect a PROXY protocol header on HTTPS and HTTP connections (never on admin ones).
    public var proxyProtocol = false

    public init() {}
}

/// One epoll loop on its own thread: accepts, handshakes, parses, responds, times out.
final class EventLoop: @unchecked Sendable {
    private enum Tag: UInt64 {
        case connection = 0
        case listener = 1
        case wake = 2
    }

    let id: Int
    private let epfd: Int32
    private let wake: EventFD
    private let state: ServerState
    private let limits: ConnectionLimits
    private let listeners: [Listener]
    private let log: Log
    private var listenersActive = false
    private var connections: [Connection?] = []
    private var snapshot: SiteSnapshot
    private var generation: Int
    private var date: [UInt8] = []
    private var dateSecond = -1
    private var now: Int64 = 0
    private var accessLog: AccessLog
    private let counters: LoopCounters
    private let scratch: UnsafeMutableRawBufferPointer
    private var drainDeadline: Int64?
    private var missingCertificateLogged = false

    init(id: Int, state: ServerState, listeners: [Listener], limits: ConnectionLimits, log: Log, accessLogFormat: LogFormat) throws(SystemError) {
        self.id = id
        self.epfd = try Epoll.create()
        self.wake = try EventFD()
        self.state = state
        self.limits = limits
        self.listeners = listeners
        self.log = log
        self.accessLog = AccessLog(format: accessLogFormat)
        self.counters = state.loopCounters[id]
        (self.snapshot, self.generation) = state.snapshots.load()
        self.scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
        try Epoll.add(epfd, wake.fd, events: Epoll.readable, data: Tag.wake.rawValue << 32)
        for l in listeners where l.kind == .admin {
            try Epoll.add(epfd, l.fd, events: Epoll.readable, data: Tag.listener.rawValue << 32 | UInt64(UInt32(bitPattern: l.fd)))
        }
        try resumeListeners()
    }

    deinit {
        scratch.deallocate()
        close(epfd)
        close(wake.fd)
    }

    /// Wakes the loop from another thread (shutdown, reload).
    func signal() { wake.signal() }

    // MARK: - The loop

    func run() {
        let capacity: Int32 = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: Int(capacity))
        defer { events.deallocate() }
        var lastSweep = monotonicMilliseconds()
        while true {
            let n = Epoll.wait(epfd, events, capacity: capacity, timeout: 500)
            now = monotonicMilliseconds()
            refreshDate()
            refreshSnapshot()
            for i in 0..<n {
                let data = events[i].data.u64
                let fd = Int32(truncatingIfNeeded: data & 0xFFFF_FFFF)
                switch Tag(rawValue: data >> 32) {
                case .connection?:
                    if let c = connection(fd) { handle(c, events: events[i].events) }
                case .listener?:
                    if let listener = listeners.first(where: { $0.fd == fd }) { accept(listener) }
                case .wake?:
                    wake.drain()
                case nil:
                    break
                }
            }
            accessLog.flush()
            if now - lastSweep >= 250 {
                lastSweep = now
                sweep()
            }
            if state.draining.load(ordering: .relaxed) {
                if drainStep() { break }
            }
        }
        for c in connections.compactMap({ $0 }) { closeConnection(c) }
        accessLog.flush()
    }

    private func connection(_ fd: Int32) -> Connection? {
        Int(fd) < connections.count ? connections[Int(fd)] : nil
    }

    private func refreshDate() {
        let second = wallClockSeconds()
        if second != dateSecond {
            dateSecond = second
            date = Array(HTTPDate.format(second).utf8)
        }
    }

    private func refreshSnapshot() {
        if state.snapshots.generation != generation {
            (snapshot, generation) = state.snapshots.load()
        }
    }

    // MARK: - Accepting

    private func accept(_ listener: Listener) {
        let counted = listener.kind != .admin
        for _ in 0..<64 {
            if counted, state.metrics.openConnections.load(ordering: .relaxed) >= state.maxConnections {
                pauseListeners()
                return
            }
            guard let (fd, address) = Socket.accept(listener.fd) else { return }
            let c = Connection(fd: fd, kind: listener.kind, client: address.host, now: now,
                               handshakeTimeout: listener.kind == .https ? limits.handshakeTimeout : limits.headerTimeout,
                               expectsProxyHeader: limits.proxyProtocol && listener.kind != .admin)
            if listener.kind == .https {
                guard let cert = snapshot.certificates.defaultCertificate, let ssl = SSL_new(cert.context) else {
                    if !missingCertificateLogged {
                        log.error("https: no certificate loaded; closing TLS connections")
                        missingCertificateLogged = true
                    }
                    close(fd)
                    state.metrics.tlsHandshakeErrors.add(1, ordering: .relaxed)
                    continue
                }
                SSL_set_fd(ssl, fd)
                SSL_set_accept_state(ssl)
                c.handshakeStore = snapshot.certificates
                _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(snapshot.certificates).toOpaque())
                c.ssl = ssl
            }
            if Int(fd) >= connections.count {
                connections.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - connections.count + 64))
            }
            connections[Int(fd)] = c
            if counted { state.metrics.openConnections.add(1, ordering: .relaxed) }
            c.interest = Epoll.readable
            do {
                try Epoll.add(epfd, fd, events: c.interest, data: UInt64(UInt32(bitPattern: fd)))
            } catch {
                closeConnection(c)
                continue
            }
            // With TCP_DEFER_ACCEPT the first bytes are usually here already: start now.
            handle(c, events: Epoll.readable)
        }
    }

    private func pauseListeners() {
        guard listenersActive else { return }
        for l in listeners where l.kind != .admin { Epoll.remove(epfd, l.fd) }
        listenersActive = false
    }

    /// Registers the client listeners (HTTPS, HTTP). The admin listener is registered once, in
    /// `init`, and never paused: health checks must get through a full server.
    private func resumeListeners() throws(SystemError) {
        guard !listenersActive else { return }
        for l in listeners where l.kind != .admin {
            try Epoll.add(epfd, l.fd, events: Epoll.readable | Epoll.exclusive,
                          data: Tag.listener.rawValue << 32 | UInt64(UInt32(bitPattern: l.fd)))
        }
        listenersActive = true
    }

    // MARK: - Connection events

    private func handle(_ c: Connection, events: UInt32) {
        c.lastActivity = now
        if events & Epoll.hangup != 0, events & Epoll.readable == 0 {
            closeConnection(c)
            return
        }
        switch c.phase {
        case .proxyHeader:
            readProxyHeader(c)
            return
        case .handshake:
            handshake(c)
        case .open:
            if events & Epoll.writable != 0 || c.tlsWantsWrite {
                c.tlsWantsWrite = false
                guard flush(c) else { return }
            }
            if events & Epoll.readable != 0 {
                guard readAndProcess(c) else { return }
            }
        case .lingering:
            linger(c)
            return
        }
        if connection(c.fd) === c { updateInterest(c) }
    }

    /// Reads the PROXY header without reading past it: the bytes after it belong to TLS or
    /// HTTP. It peeks, then consumes only what the parser says is header.
    private func readProxyHeader(_ c: Connection) {
        let n: Int
        switch receive(c.fd, scratch.baseAddress, scratch.count, Int32(MSG_PEEK)) {
        case .wouldBlock?: return
        case .done(let count)? where count > 0: n = count
        default: closeConnection(c); return
        }
        let peeked = UnsafeRawBufferPointer(rebasing: scratch[0..<n])
        let result: ProxyHeader.Result
        if c.proxyBuffer.isEmpty {
            result = ProxyHeader.parse(peeked)
        } else {
            result = (c.proxyBuffer + peeked).withUnsafeBytes { ProxyHeader.parse($0) }
        }
        switch result {
        case .needMore:
            // Everything seen so far is header (the parser never asks for more than that).
            c.proxyBuffer.append(contentsOf: peeked)
            _ = receive(c.fd, scratch.baseAddress, n)
        case .invalid(let reason):
            log.debug("\(c.client): closing: \(reason)")
            closeConnection(c)
        case .header(let source, let length):
            _ = receive(c.fd, scratch.baseAddress, length - c.proxyBuffer.count)
            c.proxyBuffer = []
            switch source {
            case .inet(let host, _): c.client = host
            case .unix(let path): c.client = "unix:" + path
            case .local: break
            }
            c.phase = c.kind.firstPhase
            c.acceptedAt = now
            c.deadline = now + (c.kind == .https ? limits.handshakeTimeout : limits.headerTimeout)
            if c.phase == .handshake { handshake(c) } else if readAndProcess(c), connection(c.fd) === c { updateInterest(c) }
        }
    }

    private func handshake(_ c: Connection) {
        guard let ssl = c.ssl else { return }
        TLSError.clearQueue()
        let r = SSL_do_handshake(ssl)
        if r == 1 {
            state.metrics.tlsHandshakes.add(1, ordering: .relaxed)
            let serverName = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)).map { String(cString: $0).lowercased() }
            c.certificate = c.handshakeStore?.select(serverName: serverName)
            _ = SSL_set_ex_data(ssl, 0, nil)
            c.handshakeStore = nil
            c.phase = .open
            c.acceptedAt = now
            // Application data may have arrived with the last handshake flight.
            guard readAndProcess(c) else { return }
            if connection(c.fd) === c { updateInterest(c) }
            return
        }
        switch SSL_get_error(ssl, r) {
        case SSL_ERROR_WANT_READ:
            c.tlsWantsWrite = false
        case SSL_ERROR_WANT_WRITE:
            c.tlsWantsWrite = true
        default:
            state.metrics.tlsHandshakeErrors.add(1, ordering: .relaxed)
            // OpenSSL recognises plain HTTP sent to a TLS port ("http request"): answer it in
            // plain HTTP, as nginx does, then close.
            let plainHTTP = aasa_ERR_GET_REASON(ERR_peek_error()) == SSL_R_HTTP_REQUEST
            TLSError.clearQueue()
            if plainHTTP {
                SSL_free(ssl)
                c.ssl = nil
                c.phase = .open
                Responder.simple(.badRequest, "this port speaks HTTPS; plain HTTP was sent\n", request: nil, date: date, into: &c.output)
                c.closeAfterFlush = true
                if flush(c), connection(c.fd) === c { updateInterest(c) }
                return
            }
            closeConnection(c)
            return
        }
        updateInterest(c)
    }

    /// Reads what is available and answers every complete request. Returns false when the
    /// connection was closed.
    private func readAndProcess(_ c: Connection) -> Bool {
        while c.phase == .open, !c.closeAfterFlush, c.largeBody == nil, c.output.count - c.outputSent < limits.outputHighWater {
            switch read(c) {
            case .data(let n):
                consume(c, count: n)
                guard flush(c) else { return false }
                // Level-triggered epoll reports more data in the socket; only what OpenSSL has
                // already read in needs another read now. Saves a read that would block.
                if n < scratch.count, c.ssl.map({ SSL_has_pending($0) == 0 }) ?? true { return true }
            case .wouldBlock:
                return true
            case .closed:
                // The client is done sending. Finish what it asked for, then close.
                if c.hasPendingOutput {
                    c.closeAfterFlush = true
                    return flush(c)
                }
                closeConnection(c)
                return false
            }
        }
        return true
    }

    private enum ReadResult {
        case data(Int)
        case wouldBlock
        case closed
    }

    private func read(_ c: Connection) -> ReadResult {
        if let ssl = c.ssl {
            var n = 0
            TLSError.clearQueue()
            if SSL_read_ex(ssl, scratch.baseAddress, scratch.count, &n) == 1 { return .data(n) }
            switch SSL_get_error(ssl, 0) {
            case SSL_ERROR_WANT_READ: return .wouldBlock
            case SSL_ERROR_WANT_WRITE: c.tlsWantsWrite = true; return .wouldBlock
            default:
                // ZERO_RETURN (close_notify), and with SSL_OP_IGNORE_UNEXPECTED_EOF a TCP close
                // without close_notify, are both an orderly end.
                TLSError.clearQueue()
                return .closed
            }
        }
        switch receive(c.fd, scratch.baseAddress, scratch.count) {
        case .done(let n)? where n > 0: return .data(n)
        case .wouldBlock?: return .wouldBlock
        default: return .closed
        }
    }

    /// recv(2) through the one syscall helper (EINTR retried, EAGAIN as `.wouldBlock`); nil
    /// when the connection failed. `.done(0)` is the peer's orderly close.
    private func receive(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32 = 0) -> IOResult<Int>? {
        try? syscall("recv") { recv(fd, buffer, count, flags) }
    }

    /// Takes `count` new bytes from the scratch buffer and answers what they complete.
    private func consume(_ c: Connection, count: Int) {
        var bytes = UnsafeRawBufferPointer(rebasing: scratch[0..<count])
        if c.discardBody > 0, c.inputStart == c.input.count {
            let d = min(c.discardBody, bytes.count)
            c.discardBody -= d
            bytes = UnsafeRawBufferPointer(rebasing: bytes[d...])
        }
        if bytes.isEmpty { return }
        if c.headStarted == nil { c.startHead(now) }
        c.input.append(contentsOf: bytes)
        process(c)
    }

    private func process(_ c: Connection) {
        let draining = state.draining.load(ordering: .relaxed)
        while c.inputStart < c.input.count, !c.closeAfterFlush, c.largeBody == nil, c.output.count - c.outputSent < limits.outputHighWater {
            if c.discardBody > 0 {
                let d = min(c.discardBody, c.input.count - c.inputStart)
                c.discardBody -= d
                c.inputStart += d
                continue
            }
            if c.headStarted == nil { c.startHead(now) }
            let start = c.inputStart
            let result = c.input.withUnsafeBytes { c.parser.parse(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            switch result {
            case .needMore:
                compact(c)
                return
            case .error(let e):
                let n = Responder.simple(e.status, e.reason + "\n", request: nil, date: date, into: &c.output)
                record(c, status: e.status.rawValue, site: "unknown", host: "", method: "-", path: "-", bytes: n, userAgent: "")
                c.closeAfterFlush = true
                c.inputStart = c.input.count
            case .request(var request, let headLength):
                c.inputStart += headLength
                c.parser.reset()
                if draining { request.keepAlive = false }
                let status: Int
                let bytes: Int
                let siteLabel: String
                if c.kind == .admin {
                    status = AdminResponder.respond(to: request, state: state, date: date, into: &c.output)
                    bytes = 0
                    siteLabel = ""
                } else if c.kind == .http, let dev = state.dev, Dashboard.handles(request, snapshot: snapshot) {
                    status = Dashboard.respond(to: request, snapshot: snapshot, dev: dev, date: date, into: &c.output)
                    bytes = 0
                    siteLabel = "dashboard"
                } else {
                    let outcome = Responder.respond(to: request, snapshot: snapshot, isTLS: c.kind == .https,
                                                    certificate: c.certificate, date: date, into: &c.output, largeBody: &c.largeBody,
                                                    cache: &c.hostCache)
                    status = outcome.status
                    bytes = outcome.bodyBytes
                    siteLabel = outcome.siteLabel
                }
                if let dev = state.dev, request.path == Responder.wellKnownPath || request.path == Responder.rootPath {
                    dev.fetches.append(timeMilliseconds: wallClockMilliseconds(), client: c.client, host: request.host ?? "",
                                       path: String(request.target.prefix(256)), status: status, userAgent: request.userAgent ?? "")
                }
                if c.kind != .admin {
                    record(c, status: status, site: siteLabel, host: request.host ?? "", method: request.method.text,
                           path: request.target.utf8.count <= 2048 ? request.target : String(request.target.prefix(2048)), bytes: bytes, userAgent: request.userAgent ?? "",
                           proto: request.version.text)
                }
                c.requestsServed += 1
                c.headStarted = nil
                if !request.keepAlive || request.hasUnframedBody {
                    c.closeAfterFlush = true
                    c.clientAskedToClose = !request.keepAlive && !request.hasUnframedBody && !draining
                } else {
                    c.discardBody = request.contentLength
                }
            }
        }
        compact(c)
    }

    private func compact(_ c: Connection) {
        if c.inputStart >= c.input.count {
            if c.input.capacity > 16 * 1024 { c.input = [] } else { c.input.removeAll(keepingCapacity: true) }
            c.inputStart = 0
        } else if c.inputStart > 0 {
            c.input.removeFirst(c.inputStart)
            c.inputStart = 0
        }
    }

    private func record(_ c: Connection, status: Int, site: String, host: String, method: String, path: String,
                        bytes: Int, userAgent: String, proto: String = "HTTP/1.1") {
        counters.count(site: site, status: status)
        let duration = c.headStarted == nil ? 0 : monotonicMicroseconds() - c.headStartedMicroseconds
        accessLog.append(AccessLog.Entry(timeMilliseconds: wallClockMilliseconds(), client: c.client, host: host,
                                         method: method, path: path, status: status, bytes: bytes,
                                         durationMicroseconds: duration, userAgent: userAgent, proto: proto))
    }

    /// Writes pending output: the buffered heads and small bodies, then a large body straight
    /// from its prepared bytes. When everything is out it answers requests still waiting in the
    /// input (pipelined behind a large response). Returns false when the connection was closed.
    private func flush(_ c: Connection) -> Bool {
        while true {
            while c.outputSent < c.output.count {
                let sent = c.output.withUnsafeBytes { write(c, $0.baseAddress! + c.outputSent, c.output.count - c.outputSent) }
                guard let sent else { return connection(c.fd) === c }
                c.outputSent += sent
            }
            if let body = c.largeBody {
                while c.largeBodySent < body.count {
                    let sent = body.withUnsafeBytes { write(c, $0.baseAddress! + c.largeBodySent, body.count - c.largeBodySent) }
                    guard let sent else { return connection(c.fd) === c }
                    c.largeBodySent += sent
                }
                c.largeBody = nil
                c.largeBodySent = 0
            }
            if c.output.capacity > 256 * 1024 { c.output = [] } else { c.output.removeAll(keepingCapacity: true) }
            c.outputSent = 0
            if c.closeAfterFlush {
                startLingering(c)
                return false
            }
            guard c.inputStart < c.input.count else { return true }
            process(c)
            if c.output.isEmpty && c.largeBody == nil { return true }
        }
    }

    /// One write of `count` bytes: the number written, or nil when the socket is full (wait
    /// for writability) or the connection was closed.
    private func write(_ c: Connection, _ bytes: UnsafeRawPointer, _ count: Int) -> Int? {
        c.lastActivity = now
        if let ssl = c.ssl {
            var n = 0
            TLSError.clearQueue()
            if SSL_write_ex(ssl, bytes, count, &n) == 1 { return n }
            switch SSL_get_error(ssl, 0) {
            case SSL_ERROR_WANT_WRITE, SSL_ERROR_WANT_READ:
                return nil
            default:
                TLSError.clearQueue()
                closeConnection(c)
                return nil
            }
        }
        switch try? syscall("send", { send(c.fd, bytes, count, Int32(MSG_NOSIGNAL)) }) {
        case .done(let n)?: return n
        case .wouldBlock?: return nil
        case nil:
            closeConnection(c)
            return nil
        }
    }

    private func startLingering(_ c: Connection) {
        if let ssl = c.ssl { _ = SSL_shutdown(ssl) }
        // Nothing unread, and the last request asked to close: the close cannot reset the
        // response, so there is nothing to linger for.
        if c.clientAskedToClose, c.inputStart >= c.input.count {
            var probe: UInt8 = 0
            if case .wouldBlock? = receive(c.fd, &probe, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) {
                closeConnection(c)
                return
            }
        }
        shutdown(c.fd, Int32(SHUT_WR))
        c.phase = .lingering
        c.deadline = now + limits.lingerTimeout
        updateInterest(c)
    }

    private func linger(_ c: Connection) {
        while true {
            switch receive(c.fd, scratch.baseAddress, scratch.count) {
            case .done(let n)? where n > 0: continue
            case .wouldBlock?: return
            default:
                closeConnection(c)
                return
            }
        }
    }

    private func updateInterest(_ c: Connection) {
        var want: UInt32 = 0
        switch c.phase {
        case .proxyHeader:
            want = Epoll.readable
        case .handshake:
            want = c.tlsWantsWrite ? Epoll.writable : Epoll.readable
        case .open:
            if c.hasPendingOutput || c.tlsWantsWrite { want |= Epoll.writable }
            if !c.closeAfterFlush, c.largeBody == nil, c.output.count - c.outputSent < limits.outputHighWater { want |= Epoll.readable }
        case .lingering:
            want = Epoll.readable
        }
        if want != c.interest {
            c.interest = want
            do {
                try Epoll.modify(epfd, c.fd, events: want, data: UInt64(UInt32(bitPattern: c.fd)))
            } catch {
                closeConnection(c)
            }
        }
    }

    private func closeConnection(_ c: Connection) {
        guard connection(c.fd) === c else { return }
        Epoll.remove(epfd, c.fd)
        if let ssl = c.ssl { SSL_free(ssl) }
        c.ssl = nil
        close(c.fd)
        connections[Int(c.fd)] = nil
        if c.kind != .admin { state.metrics.openConnections.subtract(1, ordering: .relaxed) }
        if !listenersActive, !state.draining.load(ordering: .relaxed),
           state.metrics.openConnections.load(ordering: .relaxed) < state.maxConnections {
            try? resumeListeners()
        }
    }

    // MARK: - Timeouts and draining

    /// Closes connections whose deadline passed: a slow handshake, a request head not complete
    /// within the header timeout (408), an idle keep-alive connection, a stalled writer.
    private func sweep() {
        if !listenersActive, !state.draining.load(ordering: .relaxed),
           state.metrics.openConnections.load(ordering: .relaxed) < state.maxConnections {
            try? resumeListeners()
        }
        for case let c? in connections {
            switch c.phase {
            case .proxyHeader, .handshake, .lingering:
                if now >= c.deadline { closeConnection(c) }
            case .open:
                if c.hasPendingOutput {
                    if now - c.lastActivity >= limits.idleTimeout { closeConnection(c) }
                } else if let started = c.headStarted ?? (c.requestsServed == 0 ? c.acceptedAt : nil) {
                    if now - started >= limits.headerTimeout {
                        if c.headStarted != nil {
                            Responder.simple(.requestTimeout, "request head not complete in time\n", request: nil, date: date, into: &c.output)
                            record(c, status: 408, site: "unknown", host: "", method: "-", path: "-", bytes: 0, userAgent: "")
                            c.closeAfterFlush = true
                            if flush(c) { updateInterest(c) }
                        } else {
                            closeConnection(c)
                        }
                    }
                } else if now - c.lastActivity >= limits.idleTimeout {
                    closeConnection(c)
                }
            }
        }
    }

    /// One step of a graceful stop. Returns true when the loop may exit.
    private func drainStep() -> Bool {
        if drainDeadline == nil {
            drainDeadline = now + state.shutdownGraceMilliseconds
            for l in listeners where l.kind != .admin { Epoll.remove(epfd, l.fd) }
            listenersActive = false
            state.loopsReleasedListeners.add(1, ordering: .releasing)
        }
        // Idle keep-alive connections close now; a client reusing one retries on a new one.
        // A connection that has not yet sent its first request is not idle: it is a request
        // on its way, and it gets its answer.
        for case let c? in connections where c.kind != .admin && c.isIdle && c.requestsServed > 0 {
            closeConnection(c)
        }
        // Every loop stays until the last client connection of any loop is done, so the admin
        // listener (on loop 0) keeps answering /readyz with 503 while others drain.
        return state.metrics.openConnections.load(ordering: .relaxed) == 0 || now >= drainDeadline!
    }
}
