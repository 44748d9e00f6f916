import AASAHTTP

/// A response's status and headers, prepared once (per site version for the association
/// files, per message for the rest) in both wire forms: HTTP/1.1 head bytes up to `Date: `,
/// and an HTTP/2 header block (HPACK). The `Date` and, for HTTP/1.1, the connection header and
/// the blank line are added by the session that writes it.
public final class ResponseHead: Sendable {
    public let status: HTTPStatus
    /// Beside `status`, in the room its alignment leaves: a head lives as long as its site
    /// version, three of them a site (see `http2StatusLength` and the two after it).
    private let statusLength: UInt8
    private let indexedFields: UInt16
    private let tableSize: UInt32
    /// `HTTP/1.1 200 OK\r\n…Date: ` — everything before the date's value.
    package let http1: [UInt8]
    /// The body length the head announces (`Content-Length`).
    package let contentLength: Int?
    /// A HEADERS frame's nine bytes, left for the session to fill in (length, flags, stream), then
    /// the HTTP/2 header block (HPACK): `:status`, then the lower-case names and values given to
    /// `init` (no `date` or connection-specific fields, RFC 9113 §8.2.2), each a literal with
    /// incremental indexing (``HeaderEncoder``). The first response of a connection with this head
    /// sends it whole; later ones send `:status` and an index a field (``EncoderTable``).
    package let http2Frame: [UInt8]
    /// The bytes of `:status` at the start of the block, after the frame header.
    package var http2StatusLength: Int { Int(statusLength) }
    /// The fields the block inserts into the client's table, and their size there (RFC 7541
    /// §4.1: name, value and 32 bytes each).
    package var http2IndexedFields: Int { Int(indexedFields) }
    package var http2TableSize: Int { Int(tableSize) }
    /// The header block alone.
    package var http2Block: ArraySlice<UInt8> { http2Frame[ResponseHead.frameHeaderLength...] }
    package static let frameHeaderLength = 9
    /// An IMF-fixdate's length (RFC 9110 §5.6.7): `Sun, 06 Nov 1994 08:49:37 GMT`.
    package static let http2DateLength = 29

    package init(status: HTTPStatus, fields: [(name: String, value: String)], contentLength: Int?) {
        self.status = status
        self.contentLength = contentLength
        // Both forms in one pass, bytes appended to bytes from each string's own storage: two
        // heads are made for every version of every site at start (docs/performance.md,
        // "Start-up at 100 000 sites").
        var head: [UInt8] = []
        head.reserveCapacity(256)
        // The HEADERS frame's header, filled in by the session that writes it.
        var block = [UInt8](repeating: 0, count: ResponseHead.frameHeaderLength)
        block.reserveCapacity(192)
        ResponseHead.append("HTTP/1.1 ", to: &head)
        ResponseHead.append(String(status.rawValue), to: &head)
        head.append(UInt8(ascii: " "))
        ResponseHead.append(status.reason, to: &head)
        head += [13, 10]
        HeaderEncoder.status(status.rawValue, into: &block)
        statusLength = UInt8(block.count - ResponseHead.frameHeaderLength)
        var tableSize = 0
        func field(_ name: String, _ value: String) {
            ResponseHead.appendHTTP1Name(name, to: &head)
            head += [UInt8(ascii: ":"), UInt8(ascii: " ")]
            ResponseHead.append(value, to: &head)
            head += [13, 10]
            tableSize += HeaderEncoder.field(name, value, into: &block)
        }
        for (name, value) in fields { field(name, value) }
        if let contentLength { field("content-length", String(contentLength)) }
        ResponseHead.append("Date: ", to: &head)
        // A head is a few fields of at most some hundred bytes (a site's file is 128 KB at most).
        indexedFields = UInt16(fields.count + (contentLength == nil ? 0 : 1))
        self.tableSize = UInt32(clamping: tableSize)
        // Kept at their size, not the capacity reserved to build them: two heads live as long as
        // each version of each site (25 MiB at 100 000 sites).
        http1 = ResponseHead.exactCopy(head)
        http2Frame = ResponseHead.exactCopy(block)
    }

    /// The bytes in storage of their size (an Array made from an Array, or from all of one,
    /// shares the storage and keeps its capacity).
    private static func exactCopy(_ bytes: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bytes.count) { out, count in
            count = out.initialize(fromContentsOf: bytes)
        }
    }

    private static func append(_ text: String, to out: inout [UInt8]) {
        var text = text
        text.withUTF8 { out.append(contentsOf: $0) }
    }

    /// The conventional capitalisation on HTTP/1.1 (`content-type` → `Content-Type`,
    /// `etag` → `ETag`); field names are case-insensitive, but people read these heads.
    private static func appendHTTP1Name(_ name: String, to out: inout [UInt8]) {
        switch name {
        case "etag": append("ETag", to: &out)
        case "x-content-type-options": append("X-Content-Type-Options", to: &out)
        default:
            // Field names are ASCII tokens (RFC 9110 §5.1): upper-cased byte by byte.
            var name = name
            name.withUTF8 { bytes in
                var upper = true
                for c in bytes {
                    out.append(upper && c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") ? c - 0x20 : c)
                    upper = c == UInt8(ascii: "-")
                }
            }
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
