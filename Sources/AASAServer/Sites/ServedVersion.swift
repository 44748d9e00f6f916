import AASATransport
import AASACore
import AASAHTTP
import AASASessions
import AASAClient

/// One good version of a site's file and its responses, prepared once when it is loaded:
/// the hot path copies these bytes and the current date, nothing else (STYLE: prepared bytes).
public final class ServedVersion: Sendable {
    public let file: AssociationFile
    /// The strong validator, quoted: `"3f5a…"` (first 16 hex digits of the SHA-256 of the bytes).
    public let etag: String
    /// The file's modification time, seconds since 1970.
    public let lastModified: Int
    let body: [UInt8]
    /// `200 OK` with every header but the date.
    let okHead: ResponseHead
    /// The same for `304 Not Modified` (no body, no Content-Length or Content-Type).
    let notModifiedHead: ResponseHead

    public var version: String { String(etag.dropFirst().dropLast()) }

    init(file: AssociationFile, lastModified: Int, cacheControl: String) {
        self.file = file
        self.body = file.bytes
        self.etag = Digest.entityTag(file.bytes)
        self.lastModified = lastModified
        let common: [(name: String, value: String)] = [
            ("etag", etag), ("last-modified", HTTPDate.format(lastModified)), ("cache-control", cacheControl),
            ("x-content-type-options", "nosniff"),
        ]
        // Each kind with its own type (docs/serving.md, "Responses"): JSON, or text/plain for Apple
        // Pay's file.
        okHead = ResponseHead(status: .ok, fields: [("content-type", file.kind.contentType)] + common, contentLength: file.bytes.count)
        notModifiedHead = ResponseHead(status: .notModified, fields: common, contentLength: nil)
    }

    /// If-None-Match decides when present; otherwise If-Modified-Since (RFC 9110 §13.2.2).
    func isNotModified(ifNoneMatch: String?, ifModifiedSince: String?) -> Bool {
        if let ifNoneMatch { return Conditional.ifNoneMatch(ifNoneMatch, matches: etag) }
        if let ifModifiedSince { return Conditional.notModifiedSince(ifModifiedSince, lastModified: lastModified) }
        return false
    }
}

extension ServedVersion: CDNReference {
    package var bytes: [UInt8] { body }

    /// The AASA reading of the version served, read again from its bytes when the builder kept
    /// only those (outside development, ``SnapshotBuilder/keepsDocuments``); nil for another kind.
    package var aasaFile: AASAFile? {
        guard file.kind == .aasa else { return nil }
        return file.aasa ?? AASAFile(bytes: file.bytes)
    }
}
