import AASAHTTP

/// One request stream of an ``HTTP2Session``: the fields the server acts on, collected as
/// nghttp2 decodes them, then the response being sent. In the session's table from the first
/// HEADERS frame to nghttp2's stream close. A class: every callback (each header field, each
/// DATA chunk read) reaches it through the table, and a struct of this size was copied out
/// and destroyed each time (some 800 instructions per access, callgrind).
final class HTTP2Stream {
    let startedMicroseconds: Int64
    var method: HTTPMethod?
    var path: String?
    var authority: String?
    var hostField: String?
    var ifNoneMatch: String?
    var ifModifiedSince: String?
    var userAgent: String?
    var contentLength: Int?
    /// Request body bytes received (and discarded).
    var bodyBytes = 0
    /// We reset it (body over the limit): no response, whatever else arrives.
    var isRefused = false
    /// The client sent RST_STREAM for it (already counted against the reset budget).
    var isResetByClient = false
    /// Kept alive until the stream closes: nghttp2 reads DATA from its body lazily.
    var response: Response?
    var bodySent = 0

    init(startedMicroseconds: Int64) {
        self.startedMicroseconds = startedMicroseconds
    }

    /// The request the fields describe, or the 400 an HTTP/1.1 request without a usable Host
    /// gets. nghttp2 has already checked the pseudo-header rules (RFC 9113 §8.3): `:method`
    /// present, `:path` present unless CONNECT, no connection-specific fields.
    func request() -> Result<HTTPRequest, HTTPError> {
        // RFC 9113 §8.3.1: `:authority` wins over Host when both are present.
        guard let authority = authority ?? hostField else {
            return .failure(HTTPError(.badRequest, "HTTP/2 request without :authority or Host"))
        }
        guard let host = RequestParser.normalizeHost(authority) else {
            return .failure(HTTPError(.badRequest, "invalid :authority"))
        }
        let target = path ?? authority
        var pathEnd = target.utf8.startIndex
        while pathEnd < target.utf8.endIndex, target.utf8[pathEnd] != UInt8(ascii: "?"), target.utf8[pathEnd] != UInt8(ascii: "#") {
            pathEnd = target.utf8.index(after: pathEnd)
        }
        let requestPath = pathEnd == target.utf8.endIndex ? target : String(target[..<pathEnd])
        return .success(HTTPRequest(method: method ?? .other(""), target: target,
                                    path: requestPath.isEmpty ? "/" : requestPath, host: host,
                                    version: .http2, keepAlive: true, ifNoneMatch: ifNoneMatch,
                                    ifModifiedSince: ifModifiedSince, userAgent: userAgent,
                                    contentLength: contentLength ?? bodyBytes))
    }
}
