import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// What a look at waiting bytes found.
package enum Peek: Equatable {
    /// This many bytes were copied (and are still waiting).
    case bytes(Int)
    case wouldBlock
    /// The peer closed, or the socket failed.
    case closed
}

/// How the server's end of a TLS handshake stands after one step.
package enum ServerHandshake: Equatable {
    /// Wait until the socket is readable (or writable), then step again.
    case wantRead
    case wantWrite
    /// Done: the protocol ALPN settled on and the certificate SNI chose.
    case established(alpn: String?, certificate: TLSCertificate?)
    /// The client spoke plain HTTP to the TLS port.
    case plainHTTP
    case failed

    static package func == (a: ServerHandshake, b: ServerHandshake) -> Bool {
        switch (a, b) {
        case (.wantRead, .wantRead), (.wantWrite, .wantWrite), (.plainHTTP, .plainHTTP), (.failed, .failed): return true
        case let (.established(x, c), .established(y, d)): return x == y && c === d
        default: return false
        }
    }
}

/// Everything a ``Connection`` asks of its socket and of TLS over it, so that the connection's
/// stages run over a fake byte stream in tests (``SocketIO`` is the real one). Reads and writes
/// answer in ``TLSStream/Progress`` terms whether TLS is on or not.
package protocol ConnectionIO {
    /// Copies waiting bytes into `buffer` without taking them.
    mutating func peek(into buffer: UnsafeMutableRawBufferPointer) -> Peek
    /// Takes `count` bytes already seen by ``peek(into:)``.
    mutating func discard(_ count: Int)
    mutating func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSStream.Progress
    mutating func write(_ bytes: UnsafeRawPointer, count: Int) -> TLSStream.Progress
    /// The same, told that a large write follows (a response's head, then its body): TLS keeps
    /// these records to send them with the next write's.
    mutating func write(_ bytes: UnsafeRawPointer, count: Int, moreFollows: Bool) -> TLSStream.Progress
    /// Bytes already read from the socket and waiting inside TLS.
    var hasBufferedInput: Bool { get }
    /// Bytes ``write(_:count:)`` took that TLS has not yet handed to the socket (the records
    /// of a large body, sent together).
    var hasPendingOutput: Bool { get }
    /// Sends them: `.done` once all are out, `.wantWrite` while the socket is full.
    mutating func flushPendingOutput() -> TLSStream.Progress
    /// Whether the stream has buffers it gives back after each use (TLS's record buffers).
    var hasBuffers: Bool { get }
    /// Keeps them between uses (a busy connection), or gives them back after each use again.
    mutating func keepBuffers(_ keep: Bool)
    /// Starts the server's end of TLS in the context of `settings`, serving the certificate of
    /// `certificates` that SNI picks. False when TLS could not be set up, or when there is
    /// nothing to serve: no default certificate and no ACME challenge that could be pending.
    mutating func startTLS(certificates: CertificateStore, settings: TLSServerSettings) -> Bool
    /// One step of the handshake.
    mutating func handshake() -> ServerHandshake
    /// Drops TLS: after plain HTTP came to the TLS port, or when the connection ends.
    mutating func dropTLS()
    /// Sends close_notify when TLS is on (best effort).
    mutating func sendCloseNotify()
    /// Shuts our side of the socket: the response is out, and what the client still sends is
    /// read and dropped (lingering).
    mutating func shutdownWrite()
    /// Reads and drops what arrived on the socket itself, under any TLS (a lingering connection
    /// waits for the client to close). False once the client closed or the socket failed; true
    /// when nothing more is waiting.
    mutating func dropIncoming(scratch: UnsafeMutableRawBufferPointer) -> Bool
}

extension ConnectionIO {
    /// A stream that sends every write at once.
    mutating package func write(_ bytes: UnsafeRawPointer, count: Int, moreFollows: Bool) -> TLSStream.Progress {
        write(bytes, count: count)
    }
}

/// ``ConnectionIO`` on a non-blocking socket, with ``TLSStream`` over it.
package struct SocketIO: ConnectionIO {
    package let fd: Int32
    private var stream: ByteStream

    package init(fd: Int32) {
        self.fd = fd
        self.stream = .plain(fd)
    }

    mutating package func peek(into buffer: UnsafeMutableRawBufferPointer) -> Peek {
        switch try? syscall("recv", { recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_PEEK | MSG_DONTWAIT)) }) {
        case .wouldBlock?: return .wouldBlock
        case .done(let n)? where n > 0: return .bytes(n)
        default: return .closed
        }
    }

    mutating package func discard(_ count: Int) {
        var left = count
        var sink = [UInt8](repeating: 0, count: min(count, 4096))
        while left > 0 {
            let n = recv(fd, &sink, min(left, sink.count), 0)
            guard n > 0 else { return }
            left -= n
        }
    }

    mutating package func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSStream.Progress {
        stream.read(into: buffer, count: count)
    }

    mutating package func write(_ bytes: UnsafeRawPointer, count: Int) -> TLSStream.Progress {
        stream.write(bytes, count: count)
    }

    mutating package func write(_ bytes: UnsafeRawPointer, count: Int, moreFollows: Bool) -> TLSStream.Progress {
        stream.write(bytes, count: count, moreFollows: moreFollows)
    }

    package var hasBufferedInput: Bool { stream.hasBufferedInput }

    package var hasPendingOutput: Bool { stream.hasPendingOutput }

    mutating package func flushPendingOutput() -> TLSStream.Progress { stream.flushPendingOutput() }

    package var hasBuffers: Bool { stream.hasBuffers }

    mutating package func keepBuffers(_ keep: Bool) { stream.keepBuffers(keep) }

    mutating package func startTLS(certificates: CertificateStore, settings: TLSServerSettings) -> Bool {
        // With --acme and no certificate yet, only a TLS-ALPN-01 challenge can complete.
        guard certificates.defaultCertificate != nil || settings.challenges != nil,
              let tls = try? TLSStream(server: settings, certificates: certificates, fd: fd) else { return false }
        stream = .tls(tls)
        return true
    }

    mutating package func handshake() -> ServerHandshake {
        guard case .tls(let tls) = stream else { return .failed }
        switch tls.handshake() {
        case .done:
            return .established(alpn: tls.negotiatedProtocol, certificate: tls.endHandshake())
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        case .closed, .failed: return tls.receivedPlainHTTP ? .plainHTTP : .failed
        }
    }

    mutating package func dropTLS() {
        stream = .plain(fd)
    }

    mutating package func sendCloseNotify() {
        if case .tls(let tls) = stream { tls.shutdown() }
    }

    mutating package func shutdownWrite() {
        Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    mutating package func dropIncoming(scratch: UnsafeMutableRawBufferPointer) -> Bool {
        while true {
            switch try? syscall("recv", { recv(fd, scratch.baseAddress, scratch.count, 0) }) {
            case .done(let n)? where n > 0: continue
            case .wouldBlock?: return true
            default: return false
            }
        }
    }
}
