#if canImport(Glibc)
import Glibc
#endif

/// A connection's byte stream: the socket itself, or TLS over it. Both answer in
/// ``TLSStream/Progress`` terms, so the connection drives either the same way.
package enum ByteStream {
    case plain(Int32)
    case tls(TLSStream)

    package func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSStream.Progress {
        switch self {
        case .tls(let stream):
            return stream.read(into: buffer, count: count)
        case .plain(let fd):
            switch try? syscall("recv", { recv(fd, buffer, count, 0) }) {
            case .done(let n)?: return n > 0 ? .done(n) : .closed
            case .wouldBlock?: return .wantRead
            case nil: return .failed(String(cString: strerror(errno)))
            }
        }
    }

    /// `moreFollows`: see ``TLSStream/write(_:count:moreFollows:)``; a plain socket sends at once.
    package func write(_ bytes: UnsafeRawPointer, count: Int, moreFollows: Bool = false) -> TLSStream.Progress {
        switch self {
        case .tls(let stream):
            return stream.write(bytes, count: count, moreFollows: moreFollows)
        case .plain(let fd):
            switch try? syscall("send", { send(fd, bytes, count, Int32(MSG_NOSIGNAL)) }) {
            case .done(let n)?: return .done(n)
            case .wouldBlock?: return .wantWrite
            case nil: return .failed(String(cString: strerror(errno)))
            }
        }
    }

    /// Ciphertext written to the stream and not yet to the socket (TLS only).
    package var hasPendingOutput: Bool {
        if case .tls(let stream) = self { return stream.hasPendingOutput }
        return false
    }

    /// Sends what ``hasPendingOutput`` says is waiting.
    package func flushPendingOutput() -> TLSStream.Progress {
        if case .tls(let stream) = self { return stream.flushPendingOutput() }
        return .done(0)
    }

    /// Whether the stream has buffers it gives back after each use (TLS's record buffers).
    package var hasBuffers: Bool {
        if case .tls = self { return true }
        return false
    }

    /// Keeps them between uses, or gives them back after each again (TLS only).
    package func keepBuffers(_ keep: Bool) {
        if case .tls(let stream) = self { stream.keepBuffers(keep) }
    }

    /// Bytes already read from the socket and waiting inside the stream (TLS only).
    package var hasBufferedInput: Bool {
        if case .tls(let stream) = self { return stream.hasBufferedInput }
        return false
    }
}
