/// The Public Suffix List (https://publicsuffix.org/list/): the names under which anyone may
/// register a domain (`com`, `co.uk`, `github.io`). A wildcard site over one of them
/// (`*.com`) would answer for every customer of that registry, so such a name is not a site
/// (docs/serving.md, "Config directory"). The list is read from the system's copy (Debian's
/// `publicsuffix` package keeps it current); this type only parses and asks it.
///
/// Rules follow the list's own algorithm: an exception rule (`!www.ck`) makes its name no
/// suffix, an exact rule (`co.uk`) or a wildcard rule (`*.ck`, any label under `ck`) makes one,
/// and a single label that no rule names is a suffix all the same (the list's default rule
/// `*`). Both the ICANN and the private sections count (`*.github.io` would serve every GitHub
/// Pages site). Rules written in Unicode are kept in their punycode form, as site names are.
public struct PublicSuffixList: Sendable {
    private var exact: Set<String> = []
    private var wildcard: Set<String> = []
    private var exceptions: Set<String> = []

    /// Where Debian's `publicsuffix` package puts the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// A list with no rules: only the default rule (a single label is a suffix) applies.
    public init() {}

    public init(text: String) {
        for raw in text.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            // A rule is the line's first word; `//` starts a comment.
            guard let word = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).first,
                  !word.hasPrefix("//") else { continue }
            var rule = String(word).lowercased()
            var set = \PublicSuffixList.exact
            if rule.hasPrefix("!") {
                rule.removeFirst()
                set = \PublicSuffixList.exceptions
            } else if rule.hasPrefix("*.") {
                rule.removeFirst(2)
                set = \PublicSuffixList.wildcard
            }
            guard let ascii = Punycode.host(rule), !ascii.isEmpty else { continue }
            self[keyPath: set].insert(ascii)
        }
    }

    /// The number of rules read (for the start-up log).
    public var count: Int { exact.count + wildcard.count + exceptions.count }

    /// Whether `name` (lower case, punycode, no trailing dot) is a public suffix.
    public func isPublicSuffix(_ name: String) -> Bool {
        if exceptions.contains(name) { return false }
        if exact.contains(name) { return true }
        guard let dot = name.utf8.firstIndex(of: UInt8(ascii: ".")) else { return true }
        return wildcard.contains(String(name[name.utf8.index(after: dot)...]))
    }

    /// Why `site` cannot be a site name, or nil when it can: an IP address (a certificate and
    /// Apple's CDN ask for host names), or a wildcard whose base is a public suffix.
    public func refusal(of site: SiteName) -> String? {
        if SiteName.isIPAddress(site.host) {
            return "\(site) is an IP address, not a host name: association files are fetched by host name"
        }
        if site.isWildcard, isPublicSuffix(site.host) {
            return "\(site) would answer for every domain under the public suffix \(site.host) (Public Suffix List); name the customer's domain instead (*.example.\(site.host))"
        }
        return nil
    }
}

extension SiteName {
    /// A dotted IPv4 address as a URL parser reads one: the last label numeric (decimal, or
    /// `0x` hex), which no top-level domain is.
    public static func isIPAddress(_ host: String) -> Bool {
        // The last label, found from the end (asked for every site folder at every start).
        let utf8 = host.utf8
        let last = utf8.lastIndex(of: UInt8(ascii: ".")).map { utf8[utf8.index(after: $0)...] } ?? utf8[...]
        if !last.isEmpty, last.allSatisfy(isASCIIDigit) { return true }
        if last.starts(with: "0x".utf8), last.dropFirst(2).allSatisfy({ isASCIIDigit($0) || (0x61...0x66).contains($0) }) { return true }
        return false
    }
}
