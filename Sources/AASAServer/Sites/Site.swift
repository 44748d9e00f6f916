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
    /// Why the file was refused before it could be validated (not a regular file, unreadable,
    /// too large to read), or nil when it was read; `newest` is then the last file read.
    public let refusal: FileRefusal?
    /// Whether a certificate covers the site (nil when the server has no TLS listener).
    public let certificateCovers: Bool?

    public var state: State {
        if refusal == nil, newest.isValid { return .serving }
        return served == nil ? .rejected : .stale
    }

    /// The first error of the newest file, when it is not served.
    public var error: Diagnostic? {
        if refusal != nil { return nil }
        return newest.isValid ? nil : newest.diagnostics.first { $0.severity == .error }
    }

    init(name: SiteName, path: String, served: ServedVersion?, newest: AASAFile, refusal: FileRefusal? = nil,
         certificateCovers: Bool? = nil) {
        self.name = name
        self.path = path
        self.served = served
        self.newest = newest
        self.refusal = refusal
        self.certificateCovers = certificateCovers
    }

    /// The same site with its certificate coverage: itself when that is unchanged.
    func with(certificateCovers: Bool?) -> Site {
        if certificateCovers == self.certificateCovers { return self }
        return Site(name: name, path: path, served: served, newest: newest, refusal: refusal, certificateCovers: certificateCovers)
    }
}

/// A site file the server would not read, in the terms of a diagnostic: a stable code and a
/// message, for the log and `/status`.
public struct FileRefusal: Error, Sendable, Equatable {
    /// `not-regular-file`, `unreadable` or `file-too-large` (the validator's code for it).
    public var code: String
    public var message: String
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
