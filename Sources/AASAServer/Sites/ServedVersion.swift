import AASACore
import AASAHTTP

/// One good version of a site's file and its responses, prepared once when it is loaded:
/// the hot path copies these bytes and the current date, nothing else (STYLE: prepared bytes).
public final class ServedVersion: @unchecked Sendable {
    public let file: AASAFile
    /// The strong validator, quoted: `"3f5a…"` (first 16 hex digits of the SHA-256 of the bytes).
    public let etag: String
    /// The file's modification time, seconds since 1970.
    public let lastModified: Int
    let body: [UInt8]
    /// `HTTP/1.1 200 OK` and every header up to `Date: `; the date and the end follow.
    let okHead: [UInt8]
    /// The same for `304 Not Modified` (no body, no Content-Length or Content-Type).
    let notModifiedHead: [UInt8]

    public var version: String { String(etag.dropFirst().dropLast()) }

    init(file: AASAFile, lastModified: Int, cacheControl: String) {
        self.file = file
        self.body = file.bytes
        self.etag = "\"" + Digest.sha256Hex(file.bytes).prefix(16) + "\""
        self.lastModified = lastModified
        let common = "ETag: \(etag)\r\nLast-Modified: \(HTTPDate.format(lastModified))\r\nCache-Control: \(cacheControl)\r\nX-Content-Type-Options: nosniff\r\n"
        okHead = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(file.bytes.count)\r\n\(common)Date: ".utf8)
        notModifiedHead = Array("HTTP/1.1 304 Not Modified\r\n\(common)Date: ".utf8)
    }

    /// RFC 9110 §13.1.2–3: If-None-Match (weak comparison) decides when present; otherwise
    /// If-Modified-Since holds when the file is not newer than the date given.
    func isNotModified(ifNoneMatch: String?, ifModifiedSince: String?) -> Bool {
        if let ifNoneMatch {
            for candidate in ifNoneMatch.split(separator: ",") {
                var tag = candidate.trimmingCharacters(in: " \t")
                if tag == "*" { return true }
                if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
                if tag == etag { return true }
            }
            return false
        }
        if let ifModifiedSince, let date = HTTPDate.parse(ifModifiedSince) {
            return lastModified <= date
        }
        return false
    }
}

extension StringProtocol {
    func trimmingCharacters(in set: String) -> Substring {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return s
    }
}
