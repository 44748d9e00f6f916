import AASACore

/// One association file of a site (SPEC 2.1) as last loaded: the version it serves, the newest
/// one read, and what is wrong with it. Immutable; a reload that changes it makes a new one.
public final class SiteFile: Sendable {
    public let kind: AssociationFileKind
    public let path: String
    /// The version being served, if any.
    public let served: ServedVersion?
    /// The newest file read, whether or not it is served.
    public let newest: AssociationFile
    /// Why the file was refused before it could be validated (not a regular file, unreadable,
    /// too large to read), or nil when it was read; `newest` is then the last file read.
    public let refusal: FileRefusal?

    init(kind: AssociationFileKind, path: String, served: ServedVersion?, newest: AssociationFile, refusal: FileRefusal? = nil) {
        self.kind = kind
        self.path = path
        self.served = served
        self.newest = newest
        self.refusal = refusal
    }

    public var state: Site.State {
        if refusal == nil, newest.isValid { return .serving }
        return served == nil ? .rejected : .stale
    }

    /// The first error of the newest file, when it is not served.
    public var error: Diagnostic? {
        if refusal != nil { return nil }
        return newest.isValid ? nil : newest.diagnostics.first { $0.severity == .error }
    }

    /// Whether a reload read something else than `other` had (new bytes, or another refusal).
    func differs(from other: SiteFile?) -> Bool {
        guard let other else { return true }
        return other.newest.bytes != newest.bytes || other.refusal != refusal
    }
}

/// A site of the config directory as last loaded: its association files, each served or not on
/// its own. Immutable once published: a reload that changes anything about a site makes a new
/// object. The site-level `state`, `served` and `error` describe its AASA file (SPEC 3.5).
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
    /// The site's folder.
    public let folder: String
    /// The association files the folder holds, in the order of ``AssociationFileKind/allCases``.
    public let files: [SiteFile]
    /// Whether a certificate covers the site (nil when the server has no TLS listener).
    public let certificateCovers: Bool?

    init(name: SiteName, folder: String, files: [SiteFile], certificateCovers: Bool? = nil) {
        self.name = name
        self.folder = folder
        self.files = files
        self.certificateCovers = certificateCovers
    }

    func file(_ kind: AssociationFileKind) -> SiteFile? {
        files.first { $0.kind == kind }
    }

    /// The AASA file, when the site has one.
    public var aasa: SiteFile? { file(.aasa) }
    /// The AASA file's path (where it is or would be).
    public var path: String { aasa?.path ?? folder + "/" + AssociationFileKind.aasa.fileName }
    /// The AASA version being served, if any.
    public var served: ServedVersion? { aasa?.served }
    public var refusal: FileRefusal? { aasa?.refusal }
    public var error: Diagnostic? { aasa?.error }

    /// The AASA file's state; for a site without one, serving when any of its files serves.
    public var state: State {
        if let aasa { return aasa.state }
        if files.contains(where: { $0.state == .serving }) { return .serving }
        return files.contains(where: { $0.state == .stale }) ? .stale : .rejected
    }

    /// The AASA document the matcher and the entitlement lines read: the served version's,
    /// else the newest one read.
    var document: AASADocument? {
        (aasa?.served?.file ?? aasa?.newest)?.aasa?.document
    }

    /// The same site with its certificate coverage: itself when that is unchanged.
    func with(certificateCovers: Bool?) -> Site {
        if certificateCovers == self.certificateCovers { return self }
        return Site(name: name, folder: folder, files: files, certificateCovers: certificateCovers)
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
