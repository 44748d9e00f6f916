import AASACore

/// A site of the config directory as last loaded: what it serves and what is wrong with it.
/// Immutable once published: a reload that changes anything about a site makes a new object.
public final class Site: Sendable {
    public enum State: String, Sendable {
        /// The newest file is valid and served.
        case serving
        /// The newest file has errors and no earlier version was ever good: 404.
        case rejected
        /// The newest file has errors; an older good version still serves.
        case stale
    }

    public let name: SiteName
    public let path: String
    /// The version being served, if any.
    public let served: ServedVersion?
    /// The newest file read, whether or not it is served.
    public let newest: AASAFile
    /// Whether a certificate covers the site (nil when the server has no TLS listener).
    public let certificateCovers: Bool?

    public var state: State {
        if newest.isValid { return .serving }
        return served == nil ? .rejected : .stale
    }

    /// The first error of the newest file, when it is not served.
    public var error: Diagnostic? {
        newest.isValid ? nil : newest.diagnostics.first { $0.severity == .error }
    }

    init(name: SiteName, path: String, served: ServedVersion?, newest: AASAFile, certificateCovers: Bool? = nil) {
        self.name = name
        self.path = path
        self.served = served
        self.newest = newest
        self.certificateCovers = certificateCovers
    }

    /// The same site with its certificate coverage: itself when that is unchanged.
    func with(certificateCovers: Bool?) -> Site {
        if certificateCovers == self.certificateCovers { return self }
        return Site(name: name, path: path, served: served, newest: newest, certificateCovers: certificateCovers)
    }
}

/// Everything a request needs, built whole and published at once (SPEC 3.4): readers never
/// see half of a reload.
public final class SiteSnapshot: Sendable {
    public let sites: [Site]
    public let index: SiteIndex<Site>
    public let certificates: CertificateStore
    /// Fingerprint of the certificate files the store was built from, to skip rebuilding it.
    let certificateFingerprint: [String]

    init(sites: [Site], certificates: CertificateStore, certificateFingerprint: [String]) {
        self.sites = sites
        self.index = SiteIndex(sites.map { ($0.name, $0) })
        self.certificates = certificates
        self.certificateFingerprint = certificateFingerprint
    }

    static let empty = SiteSnapshot(sites: [], certificates: .empty, certificateFingerprint: [])
}
