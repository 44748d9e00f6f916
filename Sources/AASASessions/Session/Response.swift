import AASAHTTP

/// A response's status and headers, prepared once (per site version for the association
/// files, per message for the rest) in both wire forms: HTTP/1.1 head bytes up to `Date: `,
/// and an HTTP/2 header block (HPACK). The `Date` and, for HTTP/1.1, the connection header and
/// the blank line are added by the session that writes it.
public final class ResponseHead: Sendable {
    public let status: HTTPStatus
    /// `HTTP/1.1 200 OK\r\n…Date: ` — everything before the date's value.
    package let http1: [UInt8]
    /// The body length the head announces (`Content-Length`).
    package let contentLength: Int?
    /// The HTTP/2 header block: `:status` then the lower-case names and values given to `init`
    /// (no `date` or connection-specific fields, RFC 9113 §8.2.2), each a literal without
    /// indexing (``HeaderEncoder``), so every stream of every connection sends these same bytes.
    package let http2Block: [UInt8]
    /// A HEADERS frame of `http2Block` up to the date's value (RFC 9113 §6.2): nine bytes for
    /// the frame header, which the session fills in (length, flags, stream), the block, and the
    /// `date` field's literal prefix for a date of ``http2DateLength`` bytes. Written with the
    /// date in two copies, not five (callgrind).
    package let http2HeadersBeforeDate: [UInt8]
    /// An IMF-fixdate's length (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
    package static let http2DateLength = 29

    package init(status: HTTPStatus, fields: [(name: String, value: String)], contentLength: Int?) {
        self.status = status
        let fields = contentLength.map { fields + [("content-length", String($0))] } ?? fields
        self.contentLength = contentLength
        // Bytes appended to bytes: a head is made for every version of every site at start.
        var head: [UInt8] = []
        head.reserveCapacity(256)
        head += status.statusLine.utf8
        head += [13, 10]
        for (name, value) in fields {
            head += ResponseHead.http1Name(name).utf8
            head += [UInt8(ascii: ":"), UInt8(ascii: " ")]
            head += value.utf8
            head += [13, 10]
        }
        head += "Date: ".utf8
        self.http1 = head
        http2Block = HeaderEncoder.block(status: status.rawValue, fields: fields)
        http2HeadersBeforeDate = [UInt8](repeating: 0, count: 9) + http2Block
            + [HeaderEncoder.datePrefix.0, HeaderEncoder.datePrefix.1, UInt8(ResponseHead.http2DateLength)]
    }

    /// The conventional capitalisation on HTTP/1.1 (`content-type` → `Content-Type`,
    /// `etag` → `ETag`); field names are case-insensitive, but people read these heads.
    private static func http1Name(_ name: String) -> String {
        switch name {
        case "etag": return "ETag"
        case "x-content-type-options": return "X-Content-Type-Options"
        default:
            // Field names are ASCII tokens (RFC 9110 §5.1): upper-cased byte by byte.
            var upper = true
            return String(decoding: name.utf8.map { c -> UInt8 in
                defer { upper = c == UInt8(ascii: "-") }
                return upper && c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") ? c - 0x20 : c
            }, as: UTF8.self)
        }
    }
}

/// A response a session writes: a prepared head and the body by reference. The body array's
/// storage is shared with the site's prepared bytes; nothing here copies it.
package struct Response {
    package let head: ResponseHead
    package let body: [UInt8]
    /// False for `HEAD` and for statuses without content: the head only.
    package let sendsBody: Bool

    @inlinable
    package init(head: ResponseHead, body: [UInt8], sendsBody: Bool) {
        self.head = head
        self.body = body
        self.sendsBody = sendsBody
    }

    @inlinable package var status: Int { head.status.rawValue }
    /// Body bytes sent, for the access log.
    @inlinable package var bodyBytes: Int { sendsBody ? body.count : 0 }

    /// A message made for this request (`text/plain` unless told otherwise).
    static package func message(_ status: HTTPStatus, _ text: String, request: HTTPRequest?,
                                contentType: String = "text/plain; charset=utf-8",
                                extraFields: [(name: String, value: String)] = []) -> Response {
        let body = Array(text.utf8)
        let head = ResponseHead(status: status,
                                fields: [("content-type", contentType)] + extraFields + [("x-content-type-options", "nosniff")],
                                contentLength: body.count)
        return Response(head: head, body: body, sendsBody: request?.method != .head)
    }
}
