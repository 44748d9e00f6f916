/// A request target's query (RFC 3986 §3.4) as HTML forms encode it
/// (`application/x-www-form-urlencoded`: `+` is a space), read by the admin endpoints and the
/// dashboard's API, and `aasa monitor`'s admin listener.
package enum QueryString {
    /// The first parameter `name` of `target`'s query, percent-decoded; "" when it has no `=`,
    /// nil when it is absent.
    package static func value(_ name: String, in target: String) -> String? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first == Substring(name) {
                let raw = parts.count > 1 ? String(parts[1].map { $0 == "+" ? " " : $0 }) : ""
                return URLParts.percentDecoded(raw)
            }
        }
        return nil
    }
}
