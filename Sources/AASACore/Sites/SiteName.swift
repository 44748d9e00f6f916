/// The name of a site folder in a config directory: a host name (`example.com`) or a wildcard
/// (`*.example.org`: any subdomain of any depth and, through ``SiteIndex``, `example.org` itself
/// when it has no folder of its own). See docs/serving.md, "Config directory".
public struct SiteName: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The host, or for a wildcard the suffix after `*.`.
    public let host: String
    public let isWildcard: Bool

    /// Parses a folder name. Host names must already be in the form a request compares with:
    /// lower case, no port, no trailing dot, IDN as punycode; anything else is not a site.
    public init?(_ name: String) {
        var host = Substring(name)
        var wildcard = false
        if host.hasPrefix("*.") {
            wildcard = true
            host = host.dropFirst(2)
        }
        guard SiteName.isHostName(host) else { return nil }
        self.host = String(host)
        self.isWildcard = wildcard
    }

    public var description: String { isWildcard ? "*." + host : host }

    public static func < (a: SiteName, b: SiteName) -> Bool { a.description < b.description }

    /// RFC 1123 labels: lower-case letters, digits and hyphens (and `_`, which DNS allows),
    /// 1–63 bytes each, 253 bytes in all, no hyphen at either end of a label.
    public static func isHostName(_ host: Substring) -> Bool {
        guard !host.isEmpty, host.utf8.count <= 253 else { return false }
        // One pass over the bytes (a site name is checked for every folder at every start).
        var length = 0
        var previous: UInt8 = UInt8(ascii: ".")
        for c in host.utf8 {
            if c == UInt8(ascii: ".") {
                guard length > 0, previous != UInt8(ascii: "-") else { return false }
                length = 0
            } else {
                guard (c >= 0x61 && c <= 0x7A) || isASCIIDigit(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: "_"),
                      length > 0 || c != UInt8(ascii: "-") else { return false }
                length += 1
                guard length <= 63 else { return false }
            }
            previous = c
        }
        return length > 0 && previous != UInt8(ascii: "-")
    }

    /// Whether `host` (already normalized: lower case, no port, no trailing dot) is this name or,
    /// for a wildcard, one of its subdomains. The base of a wildcard (`example.org` for
    /// `*.example.org`) is served only as a fallback, which takes the whole index: see
    /// ``SiteIndex/lookup(_:)``.
    public func serves(_ host: String) -> Bool {
        if !isWildcard { return host == self.host }
        return host.utf8.count > self.host.utf8.count + 1 && host.hasSuffix("." + self.host)
    }
}

/// Finds the site for a host: the exact name first, then the most specific wildcard
/// (`a.b.example.org` prefers `*.b.example.org` to `*.example.org`). A wildcard also serves its
/// base name (`*.example.org` serves `example.org`) when that has no folder: for an entitlement
/// `applinks:*.example.org`, iOS fetches the file from `example.org` (TN3155).
public struct SiteIndex<Value: Sendable>: Sendable {
    // Each entry keeps its name, so a lookup returns it without building or parsing one.
    private var exact: [String: (name: SiteName, value: Value)] = [:]
    private var wildcards: [String: (name: SiteName, value: Value)] = [:]

    public init() {}

    public init(_ entries: [(SiteName, Value)]) {
        for (name, value) in entries { self[name] = value }
    }

    public subscript(name: SiteName) -> Value? {
        get { name.isWildcard ? wildcards[name.host]?.value : exact[name.host]?.value }
        set {
            let entry = newValue.map { (name: name, value: $0) }
            if name.isWildcard { wildcards[name.host] = entry } else { exact[name.host] = entry }
        }
    }

    public var isEmpty: Bool { exact.isEmpty && wildcards.isEmpty }
    public var count: Int { exact.count + wildcards.count }

    /// The site that serves `host`, with the name it was found under.
    public func lookup(_ host: String) -> (name: SiteName, value: Value)? {
        if let entry = exact[host] { return entry }
        guard !wildcards.isEmpty else { return nil }
        // The host itself first (the base of `*.host`), then one label dropped at a time: the
        // longest suffix, hence the most specific wildcard, comes first. So `b.example.org` goes
        // to `*.b.example.org` rather than `*.example.org`: a device with the entitlement
        // `applinks:*.b.example.org` fetches `b.example.org` and must get that folder's file.
        if let entry = wildcards[host] { return entry }
        var rest = Substring(host)
        while let dot = rest.utf8.firstIndex(of: UInt8(ascii: ".")) {
            rest = rest[rest.utf8.index(after: dot)...]
            if let entry = wildcards[String(rest)] { return entry }
        }
        return nil
    }
}
