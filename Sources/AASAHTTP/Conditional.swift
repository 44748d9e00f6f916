/// Conditional requests (RFC 9110 §13.1).
public enum Conditional {
    /// Whether an `If-None-Match` field value names `etag` (quoted), or is `*`. Uses the weak
    /// comparison §13.1.2 asks for: `W/"x"` names `"x"`.
    public static func ifNoneMatch(_ field: String, matches etag: String) -> Bool {
        for candidate in field.split(separator: ",") {
            var tag = candidate.trimmingCharacters(in: " \t")
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == etag { return true }
        }
        return false
    }

    /// Whether a resource last modified at `lastModified` (Unix seconds) is unchanged since the
    /// `If-Modified-Since` date; an invalid date is ignored (§13.1.3).
    public static func notModifiedSince(_ field: String, lastModified: Int) -> Bool {
        guard let date = HTTPDate.parse(field) else { return false }
        return lastModified <= date
    }
}
