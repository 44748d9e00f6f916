import AASAHTTP
import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

public enum ListenerKind: UInt8, Sendable {
    case https, http, admin

    /// Where a connection starts once any PROXY header is read.
    var firstPhase: Connection.Phase { self == .https ? .handshake : .open }

    var name: String {
        switch self {
        case .https: return "https"
        case .http: return "http"
        case .admin: return "admin"
        }
    }
}

/// One client connection, owned by the loop that accepted it and touched only by its thread.
final class Connection {
    enum Phase {
        /// Waiting for the PROXY protocol header (`--proxy-protocol`), before TLS or HTTP.
        case proxyHeader
        /// TLS handshake in progress.
        case handshake
        /// Reading requests and writing responses.
        case open
        /// The response that ends the connection is sent and our side is shut: reading and
        /// discarding until the client closes, so unread input cannot turn our close into a
        /// reset that destroys the response in flight (RFC 9112 §9.6).
        case lingering
    }

    let fd: Int32
    let kind: ListenerKind
    /// The client's address: the peer's, or the one a PROXY header gave.
    var client: String
    var phase: Phase
    /// Bytes of a PROXY header that arrived in pieces.
    var proxyBuffer: [UInt8] = []
    var ssl: OpaquePointer?
    /// Keeps the certificate store alive while the ServerName callback may read it.
    var handshakeStore: CertificateStore?
    var certificate: TLSCertificate?
    /// The TLS library asked to wait for writability to make progress on a read (or the reverse).
    var tlsWantsWrite = false

    var input: [UInt8] = []
    var inputStart = 0
    var parser = RequestParser()
    var output: [UInt8] = []
    var outputSent = 0
    /// Body bytes of the current request still to be read and discarded.
    var discardBody = 0
    var closeAfterFlush = false
    /// The last request said `Connection: close` (or was HTTP/1.0 without keep-alive).
    var clientAskedToClose = false

    /// When the request head now being received started, or nil between requests.
    var headStarted: Int64?
    var headStartedMicroseconds: Int64 = 0
    /// Deadline for the current phase; the loop's sweep closes the connection after it.
    var deadline: Int64
    var lastActivity: Int64
    var acceptedAt: Int64
    var requestsServed = 0
    /// The epoll events currently registered.
    var interest: UInt32 = 0

    init(fd: Int32, kind: ListenerKind, client: String, now: Int64, handshakeTimeout: Int64, expectsProxyHeader: Bool) {
        self.fd = fd
        self.kind = kind
        self.client = client
        self.phase = expectsProxyHeader ? .proxyHeader : kind.firstPhase
        self.deadline = now + handshakeTimeout
        self.lastActivity = now
        self.acceptedAt = now
    }

    /// A large body being written straight from a site's prepared bytes, not copied.
    var largeBody: [UInt8]?
    var largeBodySent = 0
    /// The last host this connection asked for, resolved.
    var hostCache = HostCache()

    var hasPendingOutput: Bool { outputSent < output.count || largeBody != nil }
    var hasPartialRequest: Bool { inputStart < input.count || headStarted != nil }

    /// True when nothing is in flight: no partial request, no unsent response.
    var isIdle: Bool { phase == .open && !hasPendingOutput && !hasPartialRequest && discardBody == 0 }

    /// Marks the first byte of a request head: starts the header timeout and the duration
    /// the access log reports.
    func startHead(_ now: Int64) {
        headStarted = now
        headStartedMicroseconds = monotonicMicroseconds()
    }
}
