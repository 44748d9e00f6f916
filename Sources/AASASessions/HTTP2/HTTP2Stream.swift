import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

/// One request stream of an ``HTTP2Session``: the fields the server acts on, collected as
/// nghttp2 decodes them, then the response being sent. In the session's table from the first
/// HEADERS frame to nghttp2's stream close. A class: every callback (each header field, each
/// DATA chunk read) reaches it through the table, and a struct of this size was copied out
/// and destroyed each time (some 800 instructions per access, callgrind).
final package class HTTP2Stream {
    package let startedMicroseconds: Int64
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
    /// Request body bytes received (and discarded).
    package var bodyBytes = 0
    /// We reset it (body over the limit): no response, whatever else arrives.
    var isRefused = false
    /// The client sent RST_STREAM for it (already counted against the reset budget).
    var isResetByClient = false
    /// The client sent END_STREAM: the stream is half-closed (remote), and any DATA or HEADERS
    /// on it is STREAM_CLOSED (RFC 9113 §5.1).
    var isEndedByClient = false
    /// Kept alive until the stream closes: nghttp2 reads DATA from its body lazily, and the
    /// HEADERS frame from its head's prepared field bytes.
    package var response: Response?
    package var bodySent = 0

    package init(startedMicroseconds: Int64) {
        self.startedMicroseconds = startedMicroseconds
    }

    /// A `:authority` or `Host` value, normalized when it arrives: the host it names (lower
    /// case, no port, no trailing dot), or nil when it is not a valid host. The value as sent is
    /// kept only when it differs from that host: it is the target of a request without `:path`
    /// (CONNECT).
    package struct HostField {
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

    /// The request the fields describe, or the 400 an HTTP/1.1 request without a usable Host
    /// gets. nghttp2 has already checked the pseudo-header rules (RFC 9113 §8.3): `:method`
    /// present, `:path` present unless CONNECT, no connection-specific fields.
    package func request() -> Result<HTTPRequest, HTTPError> {
        // RFC 9113 §8.3.1: `:authority` wins over Host when both are present.
        guard let field = authority ?? hostField else {
            return .failure(HTTPError(.badRequest, "HTTP/2 request without :authority or Host"))
        }
        guard let host = field.host else {
            return .failure(HTTPError(.badRequest, "invalid :authority"))
        }
        let target: String, requestPath: String
        if let sentTarget = self.target, let path {
            (target, requestPath) = (sentTarget, path)
        } else {
            target = field.text
            requestPath = Array(target.utf8).withUnsafeBufferPointer { HTTP2Stream.path(of: $0, target: target) }
        }
        return .success(HTTPRequest(method: method ?? .other(""), target: target, path: requestPath, host: host,
                                    version: .http2, keepAlive: true, ifNoneMatch: ifNoneMatch,
                                    ifModifiedSince: ifModifiedSince, userAgent: userAgent,
                                    contentLength: contentLength ?? bodyBytes))
    }
}
