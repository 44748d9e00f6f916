/// The services an Associated Domains entitlement may name (docs/aasa-reference.md §4.1).
public enum AssociatedDomainService: String, Sendable, CaseIterable {
    case appLinks = "applinks"
    case webCredentials = "webcredentials"
    case appClips = "appclips"
    case activityContinuation = "activitycontinuation"
    case authServices = "authsrv"

    /// The section of an AASA file that backs it (`applinks` has its own shape).
    public var appList: AppListService? {
        switch self {
        case .appLinks: return nil
        case .webCredentials: return .webCredentials
        case .appClips: return .appClips
        case .activityContinuation: return .activityContinuation
        case .authServices: return .authServices
        }
    }
}

/// One string of `com.apple.developer.associated-domains`: `applinks:example.com`,
/// `webcredentials:*.example.com?mode=developer` (docs/aasa-reference.md §4).
public struct AssociatedDomain: Sendable, Equatable, CustomStringConvertible {
    public var service: AssociatedDomainService
    /// Lower case, without `*.` and without port.
    public var host: String
    public var isWildcard: Bool
    /// Allowed by older iOS releases for services other than `applinks` (docs/aasa-reference.md §4.1).
    public var port: Int?
    /// `developer`, `managed` or `developer+managed`.
    public var mode: String?

    public static let modes = ["developer", "managed", "developer+managed"]

    /// What the entitlement could not be read as, with whatever parts were readable (for the
    /// JSON report).
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        public var service: String?
        public var host: String?
        public var mode: String?
        public var description: String { message }
    }

    /// The host as written in the entitlement, wildcard included: `*.example.com`.
    public var hostPattern: String { (isWildcard ? "*." : "") + host + (port.map { ":\($0)" } ?? "") }

    /// The host iOS fetches the file from: for `*.example.com`, `example.com` itself (TN3155).
    public var fileHost: String { host }

    public var description: String { "\(service.rawValue):\(hostPattern)" + (mode.map { "?mode=\($0)" } ?? "") }

    public init(parsing text: String) throws(ParseError) {
        guard let colon = text.firstIndex(of: ":") else {
            throw ParseError(message: "expected SERVICE:HOST, such as applinks:example.com")
        }
        let serviceText = String(text[..<colon])
        var rest = Substring(text[text.index(after: colon)...])
        guard let service = AssociatedDomainService(rawValue: serviceText) else {
            throw ParseError(message: "unknown service \(JSONWriter.message(serviceText)): use one of \(AssociatedDomainService.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var mode: String?
        if let q = rest.firstIndex(of: "?") {
            let query = rest[rest.index(after: q)...]
            rest = rest[..<q]
            guard query.hasPrefix("mode="), AssociatedDomain.modes.contains(String(query.dropFirst(5))) else {
                throw ParseError(message: "unknown query \(JSONWriter.message(String(query))): the only one is ?mode=developer, ?mode=managed or ?mode=developer+managed",
                                 service: serviceText, host: String(rest))
            }
            mode = String(query.dropFirst(5))
        }
        let lowered = rest.lowercased()
        func fail(_ message: String) -> ParseError {
            ParseError(message: message, service: serviceText, host: String(rest), mode: mode)
        }
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") || rest.contains("://") {
            throw fail("no scheme: write \(serviceText):\(rest.split(separator: "/").dropFirst().first ?? "HOST"), the host name only")
        }
        if let slash = rest.firstIndex(of: "/") {
            throw fail("no path: write \(serviceText):\(rest[..<slash]), the host name only")
        }
        var hostPart = rest
        var port: Int?
        if let c = hostPart.lastIndex(of: ":") {
            let digits = hostPart[hostPart.index(after: c)...]
            guard let p = Int(digits), (1...65535).contains(p) else { throw fail("invalid port \(JSONWriter.message(String(digits)))") }
            port = p
            hostPart = hostPart[..<c]
            if service == .appLinks {
                throw fail("a port is not allowed for applinks (TN3155: applinks:example.com:\(p) never opens the app); serve the file on 443 and write applinks:\(hostPart)")
            }
        }
        if hostPart.hasSuffix(".") {
            throw fail("no trailing dot: write \(serviceText):\(hostPart.dropLast())")
        }
        var wildcard = false
        if hostPart.hasPrefix("*.") {
            wildcard = true
            hostPart = hostPart.dropFirst(2)
            if service == .appClips {
                throw fail("appclips does not support wildcards: name each host, such as appclips:\(hostPart)")
            }
        }
        if hostPart.unicodeScalars.contains(where: { !$0.isASCII }) {
            throw fail("an internationalised host name must be written in punycode (xn--…), as the entitlement is compared byte for byte")
        }
        let host = hostPart.lowercased()
        guard SiteName.isHostName(Substring(host)) else {
            throw fail(host.contains("*") ? "a wildcard is only allowed as a leading *., such as \(serviceText):*.example.com"
                                          : "\(JSONWriter.message(String(hostPart))) is not a host name")
        }
        self.service = service
        self.host = host
        self.isWildcard = wildcard
        self.port = port
        self.mode = mode
    }
}
