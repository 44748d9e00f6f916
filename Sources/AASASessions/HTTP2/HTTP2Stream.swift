import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

/// One request stream of an ``HTTP2Session``: the fields the server acts on, collected as its
/// header block is decoded, then the response being sent and the stream's flow-control windows.
/// In the session's table from its HEADERS frame until it closes (the response's last frame
/// written, or a RST_STREAM either way). A class: the session reaches it from its table, its
/// send queue and the block being decoded, and a struct this size was copied out and destroyed
/// at each access (some 800 instructions, callgrind). The session keeps a few closed ones to
/// open again (``reopen(id:startedMicroseconds:sendWindow:receiveWindow:)``), so a stream a
/// request is not an allocation and a free.
final package class HTTP2Stream {
    private(set) package var id: Int32
    private(set) package var startedMicroseconds: Int64
    package var method: HTTPMethod?
    /// `:path` as sent, and its path: the part before any `?` or `#` (`/` when empty). Both are
    /// made from the field's bytes as it arrives, the same String when there is no query.
    private(set) package var target: String?
    private(set) package var path: String?
    private(set) package var authority: HostField?
    private(set) package var hostField: HostField?
    package var ifNoneMatch: String?
    package var ifModifiedSince: String?
    package var userAgent: String?
    package var contentLength: Int?
    /// The request carries `aasa-check` (``RequestParser/ownCheckField``), as HTTP/1.1 honours it.
    package var isOwnCheck = false
    /// Request body bytes received (and discarded).
    package var bodyBytes = 0
    /// DATA payload received, padding included: what the body limit counts.
    var receivedBytes = 0
    /// Where the stream is in its life (RFC 9113 §5.1), as the session moves it.
    var state = State.open

    /// A server's stream states (RFC 9113 §5.1): a client's HEADERS opens it (idle streams are
    /// ``StreamHistory``'s), END_STREAM from the client half-closes it, and its response's last
    /// frame or a RST_STREAM either way closes it.
    enum State {
        /// The request's header block or body is still arriving.
        case open
        /// The client sent END_STREAM: the request is whole, and any DATA or HEADERS on the
        /// stream is STREAM_CLOSED; the response is being sent.
        case halfClosedRemote
        /// Out of the session's table; the send queue skips it.
        case closed
    }

    /// What the stream may still send (RFC 9113 §6.9.1): SETTINGS_INITIAL_WINDOW_SIZE changes
    /// it, and can make it negative (§6.9.2).
    var sendWindow: Int
    /// What the client may still send on it before the server opens the window again.
    var receiveWindow: Int

    /// The response, once the request is complete; its HEADERS frame is written when the
    /// stream's turn in the send queue comes, then DATA from the body.
    package var response: Response?
    var headersSent = false
    package var bodySent = 0
    /// In the ``ResponseScheduler``'s queue.
    var isQueued = false
    /// Out of the queue, on a zero window, until a WINDOW_UPDATE (or SETTINGS) opens it again;
    /// reset at this time if none does.
    var blockedUntil: Int64?

    package init(id: Int32, startedMicroseconds: Int64, sendWindow: Int, receiveWindow: Int) {
        self.id = id
        self.startedMicroseconds = startedMicroseconds
        self.sendWindow = sendWindow
        self.receiveWindow = receiveWindow
    }

    /// Makes this closed stream, which nothing else holds any more (the caller checked), the
    /// new stream `id`: everything as ``init(id:startedMicroseconds:sendWindow:receiveWindow:)``
    /// leaves it.
    func reopen(id: Int32, startedMicroseconds: Int64, sendWindow: Int, receiveWindow: Int) {
        self.id = id
        self.startedMicroseconds = startedMicroseconds
        self.sendWindow = sendWindow
        self.receiveWindow = receiveWindow
        // Most are nil already (moved into the request, or never sent); assigning nil to one
        // released the nothing it held, a call each (some 75 instructions a request, callgrind).
        if method != nil { method = nil }
        if target != nil { target = nil }
        if path != nil { path = nil }
        if authority != nil { authority = nil }
        if hostField != nil { hostField = nil }
        if ifNoneMatch != nil { ifNoneMatch = nil }
        if ifModifiedSince != nil { ifModifiedSince = nil }
        if userAgent != nil { userAgent = nil }
        contentLength = nil
        isOwnCheck = false
        bodyBytes = 0
        receivedBytes = 0
        state = .open
        if response != nil { response = nil }
        headersSent = false
        bodySent = 0
        isQueued = false
        blockedUntil = nil
    }

    /// A `:authority` or `Host` value, normalized when it arrives: the host it names (lower
    /// case, no port, no trailing dot), or nil when it is not a valid host. The value as sent is
    /// kept only when it differs from that host: it is the target of a request without `:path`
    /// (CONNECT). A class: it is made once per connection and value (``RequestFieldReader``
    /// remembers the last), then handed to every stream that sends the same bytes, and a struct
    /// of three references was three retains and releases at each copy (callgrind).
    package final class HostField {
        package let host: String?
        private let sent: String?
        /// The bytes it was made from.
        let bytes: [UInt8]

        package init(_ bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = Array(bytes)
            host = RequestParser.normalizeHost(bytes)
            if let host, HostField.equals(host, bytes) {
                sent = nil
            } else {
                sent = String(decoding: bytes, as: UTF8.self)
            }
        }

        /// memcmp: the generic `elementsEqual` over a String's UTF-8 cost some 1,000
        /// instructions for an 18-byte host (callgrind).
        private static func equals(_ text: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            guard text.utf8.count == bytes.count else { return false }
            if bytes.isEmpty { return true }
            return text.utf8.withContiguousStorageIfAvailable { memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0 }
                ?? text.utf8.elementsEqual(bytes)
        }

        package var text: String { sent ?? host! }
    }

    /// `:path`, one of the server's ``InternedTargets`` (no query, so also the path).
    func setPath(interned: String) { (target, path) = (interned, interned) }

    /// `:path`, any other: its String made from the bytes.
    func setPath(_ bytes: UnsafeBufferPointer<UInt8>) {
        let target = String(decoding: bytes, as: UTF8.self)
        self.target = target
        path = HTTP2Stream.path(of: bytes, target: target)
    }

    func setAuthority(_ field: HostField) { authority = field }
    func setHostField(_ field: HostField) { hostField = field }

    /// The part of `target` (whose bytes are `bytes`) before any `?` or `#`, `/` when empty.
    private static func path(of bytes: UnsafeBufferPointer<UInt8>, target: String) -> String {
        let end = bytes.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? bytes.count
        if end == 0 { return "/" }
        return end == bytes.count ? target : String(decoding: UnsafeBufferPointer(rebasing: bytes[..<end]), as: UTF8.self)
    }

    /// Moves the request the fields describe into `request`, the session's (every field it
    /// may have set before is set again); false, `request` untouched, when `:authority` or Host
    /// names no valid host (``refusal``). The session has already checked the field rules
    /// (``RequestFieldCheck``, RFC 9113 §8.2, §8.3): `:method` present, `:path` present unless
    /// CONNECT, no connection-specific fields. The stream's Strings are moved, not copied: it
    /// is done with them. Filled in place: a request built here and returned was built aside,
    /// then copied whole into place and the first destroyed (Swift 6.3, callgrind).
    package func moveRequest(into request: inout HTTPRequest) -> Bool {
        // RFC 9113 §8.3.1: `:authority` wins over Host when both are present.
        guard let field = authority ?? hostField, let host = field.host else { return false }
        if let sentTarget = target.take(), let path = path.take() {
            request.target = sentTarget
            request.path = path
        } else {
            let sentTarget = field.text
            request.path = Array(sentTarget.utf8).withUnsafeBufferPointer { HTTP2Stream.path(of: $0, target: sentTarget) }
            request.target = sentTarget
        }
        request.method = method.take() ?? .other("")
        request.host = host
        request.ifNoneMatch = ifNoneMatch.take()
        request.ifModifiedSince = ifModifiedSince.take()
        request.userAgent = userAgent.take()
        request.contentLength = contentLength ?? bodyBytes
        request.isOwnCheck = isOwnCheck
        return true
    }

    /// Why ``moveRequest(into:)`` found no request: the 400 a request without a usable host gets.
    package var refusal: HTTPError {
        (authority ?? hostField) == nil ? HTTPError(.badRequest, "HTTP/2 request without :authority or Host")
            : HTTPError(.badRequest, "invalid :authority")
    }
}
