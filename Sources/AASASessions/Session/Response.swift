import AASACore
import AASAHTTP

/// A response's status and headers, prepared once (per site version for the association
/// files, per message for the rest) in both wire forms: HTTP/1.1 head bytes up to `Date: `,
/// and header fields for HTTP/2. The `Date` and, for HTTP/1.1, the connection header and the
/// blank line are added by the session that writes it.
///
/// `@unchecked Sendable`: it wraps `nghttp2_nv` fields pointing into memory of its own (fixed
/// addresses, as nghttp2 needs), and nothing changes after `init`.
public final class ResponseHead: @unchecked Sendable {
    public let status: HTTPStatus
    /// `HTTP/1.1 200 OK\r\n…Date: ` — everything before the date's value.
    package let http1: [UInt8]
    /// The body length the head announces (`Content-Length`).
    package let contentLength: Int?
    /// The HTTP/2 fields as bytes, `:status` then the lower-case names and values given to
    /// `init` (no `date` or connection-specific fields, RFC 9113 §8.2.2): each name and value at
    /// an offset in `http2Bytes`, so framing a response copies no String. The fields themselves
    /// are not kept: at 100 000 sites they would be a tenth of the memory.
    let http2Fields: [FieldSpan]
    let http2Bytes: UnsafeMutablePointer<UInt8>

    /// Offsets and lengths in `http2Bytes`, 16 bits each: a head is a few hundred bytes, and
    /// a site keeps two heads (200 and 304) per file version.
    package struct FieldSpan {
        private var storage: (UInt16, UInt16, UInt16, UInt16)
        package var name: Int { Int(storage.0) }
        var nameLength: Int { Int(storage.1) }
        package var value: Int { Int(storage.2) }
        var valueLength: Int { Int(storage.3) }

        package init(name: Int, nameLength: Int, value: Int, valueLength: Int) {
            // A header section is bounded far below 64 KiB (the fields are the server's own).
            precondition(value + valueLength <= Int(UInt16.max), "response head over 64 KiB")
            storage = (UInt16(name), UInt16(nameLength), UInt16(value), UInt16(valueLength))
        }
    }

    package init(status: HTTPStatus, fields: [(name: String, value: String)], contentLength: Int?) {
        self.status = status
        let fields = contentLength.map { fields + [("content-length", String($0))] } ?? fields
        self.contentLength = contentLength
        var head = "\(status.statusLine)\r\n"
        for (name, value) in fields { head += "\(ResponseHead.http1Name(name)): \(value)\r\n" }
        head += "Date: "
        self.http1 = Array(head.utf8)

        var bytes: [UInt8] = []
        var spans: [FieldSpan] = []
        for (name, value) in [(":status", String(status.rawValue))] + fields {
            let nameStart = bytes.count
            bytes += name.utf8
            let valueStart = bytes.count
            bytes += value.utf8
            spans.append(FieldSpan(name: nameStart, nameLength: valueStart - nameStart, value: valueStart,
                                   valueLength: bytes.count - valueStart))
        }
        http2Fields = spans
        http2Bytes = .allocate(capacity: max(bytes.count, 1))
        http2Bytes.initialize(from: bytes, count: bytes.count)
    }

    deinit { http2Bytes.deallocate() }

    /// The conventional capitalisation on HTTP/1.1 (`content-type` → `Content-Type`,
    /// `etag` → `ETag`); field names are case-insensitive, but people read these heads.
    private static func http1Name(_ name: String) -> String {
        switch name {
        case "etag": return "ETag"
        case "x-content-type-options": return "X-Content-Type-Options"
        default:
            var out = ""
            var upper = true
            for c in name {
                out.append(upper ? Character(c.uppercased()) : c)
                upper = c == "-"
            }
            return out
        }
    }
}

/// What a handler answers: a prepared head and the body by reference. The body array's
/// storage is shared with the site's prepared bytes; nothing here copies it.
package struct Response {
    package let head: ResponseHead
    package let body: [UInt8]
    /// False for `HEAD` and for statuses without content: the head only.
    package let sendsBody: Bool
    /// The site's name, or "unknown" when the host is not configured (a fixed label set keeps
    /// the metrics' cardinality bounded whatever hosts clients send); "" for admin requests.
    package let siteLabel: String
    /// The file the request asked for, the metrics' `file` label.
    package var file: RequestedFile = .other

    @inlinable
    package init(head: ResponseHead, body: [UInt8], sendsBody: Bool, siteLabel: String, file: RequestedFile = .other) {
        self.head = head
        self.body = body
        self.sendsBody = sendsBody
        self.siteLabel = siteLabel
        self.file = file
    }

    @inlinable package var status: Int { head.status.rawValue }
    /// Body bytes sent, for the access log.
    @inlinable package var bodyBytes: Int { sendsBody ? body.count : 0 }

    /// A message made for this request (`text/plain` unless told otherwise).
    static package func message(_ status: HTTPStatus, _ text: String, request: HTTPRequest?, site: String,
                        file: RequestedFile = .other, contentType: String = "text/plain; charset=utf-8",
                        extraFields: [(name: String, value: String)] = []) -> Response {
        let body = Array(text.utf8)
        let head = ResponseHead(status: status,
                                fields: [("content-type", contentType)] + extraFields + [("x-content-type-options", "nosniff")],
                                contentLength: body.count)
        return Response(head: head, body: body, sendsBody: request?.method != .head, siteLabel: site, file: file)
    }
}

/// The file a request asked for, as `/metrics` names it: one of the association files, or
/// `other` for any other path (a fixed label set, whatever paths clients send). A small integer,
/// so counting a request indexes an array instead of building a label.
package enum RequestedFile: Int, CaseIterable, Sendable {
    case aasa
    case assetLinks
    case merchantID
    case webAuthn
    case other

    package init(_ kind: AssociationFileKind?) {
        switch kind {
        case .aasa: self = .aasa
        case .assetLinks: self = .assetLinks
        case .merchantID: self = .merchantID
        case .webAuthn: self = .webAuthn
        case nil: self = .other
        }
    }

    /// The `file` label: the association file's name (`apple-app-site-association`, …) or `other`.
    package var label: String {
        switch self {
        case .aasa: return AssociationFileKind.aasa.fileName
        case .assetLinks: return AssociationFileKind.assetLinks.fileName
        case .merchantID: return AssociationFileKind.merchantID.fileName
        case .webAuthn: return AssociationFileKind.webAuthn.fileName
        case .other: return "other"
        }
    }
}
