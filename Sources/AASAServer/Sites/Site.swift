import AASACore
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// One association file of a site (docs/serving.md, "Config directory") as last loaded: the version it serves, the newest
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
    /// What the file was when `newest` was read (nil when refused): a rescan that finds the
    /// same stamp does not read the file again.
    let stamp: FileStamp?

    init(kind: AssociationFileKind, path: String, served: ServedVersion?, newest: AssociationFile, refusal: FileRefusal? = nil,
         stamp: FileStamp? = nil) {
        self.kind = kind
        self.path = path
        self.served = served
        self.newest = newest
        self.refusal = refusal
        self.stamp = stamp
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
/// object. The site-level `state`, `served` and `error` describe its AASA file (docs/serving.md, "Admin listener").
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
        guard let file = aasa?.served?.file ?? aasa?.newest else { return nil }
        // Outside development the builder keeps only the bytes (``SnapshotBuilder/keepsDocuments``).
        return file.aasa?.document ?? (file.kind == .aasa ? AASAFile(bytes: file.bytes).document : nil)
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

/// A file as `stat` sees it: a change to its bytes, a rename into place or a symlink swap
/// changes one of these (times at the filesystem's full resolution).
struct FileStamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modified: Int64
    var changed: Int64

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        size = Int64(st.st_size)
        modified = Int64(st.st_mtim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_mtim.tv_nsec)
        changed = Int64(st.st_ctim.tv_sec) &* 1_000_000_000 &+ Int64(st.st_ctim.tv_nsec)
    }

    init?(path: String) {
        self.init(path, in: AT_FDCWD)
    }

    /// `name` in the directory open as `directory` (see ``SnapshotBuilder/read(_:in:)``).
    init?(_ name: String, in directory: Int32) {
        var st = stat()
        guard fstatat(directory, name, &st, 0) == 0 else { return nil }
        self.init(st)
    }
}

/// The counts `/status` opens with, kept as sites change instead of counted again.
public struct SiteSummary: Sendable, Equatable {
    public var sites = 0
    public var serving = 0
    public var rejected = 0
    public var stale = 0
    /// Sites no certificate covers (only with a TLS listener).
    public var uncovered = 0

    mutating func add(_ site: Site, _ sign: Int = 1) {
        sites += sign
        switch site.state {
        case .serving: serving += sign
        case .rejected: rejected += sign
        case .stale: stale += sign
        }
        if site.certificateCovers == false { uncovered += sign }
    }
}

/// Everything a request needs, built whole and published at once (docs/serving.md, "Validation and hot reload"): readers never
/// see half of a reload. A reload makes a new snapshot that shares every unchanged ``Site``
/// object with the one before.
public final class SiteSnapshot: Sendable {
    /// In byte order of the folder name (the host, `*.` first for a wildcard).
    public let sites: ChunkedList<Site>
    public let index: SiteTable
    public let certificates: CertificateStore
    /// The files each certificate was loaded from, and what they were then: a rescan loads a
    /// certificate again only when its stamps changed.
    let certificateFiles: ShardedMap<String, CertificateFiles>
    public let summary: SiteSummary

    init(sites: ChunkedList<Site>, index: SiteTable, certificates: CertificateStore,
         certificateFiles: ShardedMap<String, CertificateFiles>, summary: SiteSummary) {
        self.sites = sites
        self.index = index
        self.certificates = certificates
        self.certificateFiles = certificateFiles
        self.summary = summary
    }

    /// A snapshot of these sites, counted and indexed here (tests, development tools).
    convenience init(sites: [Site], certificates: CertificateStore) {
        var summary = SiteSummary()
        for site in sites { summary.add(site) }
        let sorted = sites.sorted { $0.name.description.utf8.lexicographicallyPrecedes($1.name.description.utf8) }
        self.init(sites: ChunkedList(sorted), index: SiteTable(sorted), certificates: certificates,
                  certificateFiles: ShardedMap(), summary: summary)
    }

    /// Where a site of this name is or would go in ``sites``.
    func position(of name: SiteName) -> Int {
        SiteSnapshot.position(of: name.description, in: sites)
    }

    static func position<C: RandomAccessCollection>(of folder: String, in sites: C) -> Int where C.Element == Site, C.Index == Int {
        var low = sites.startIndex, high = sites.endIndex
        while low < high {
            let mid = (low + high) / 2
            if sites[mid].name.description.utf8.lexicographicallyPrecedes(folder.utf8) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    static let empty = SiteSnapshot(sites: [], certificates: .empty)
}

/// The sites by name, for requests: the exact name first, then the most specific wildcard, as
/// ``SiteIndex`` finds them, over shards a reload copies one at a time (``ShardedMap``).
public struct SiteTable: Sendable {
    private var exact = ShardedMap<String, Site>()
    private var wildcards = ShardedMap<String, Site>()

    init() {}

    init(_ sites: [Site]) {
        exact = ShardedMap(sites.filter { !$0.name.isWildcard }.map { ($0.name.host, $0) })
        wildcards = ShardedMap(sites.filter(\.name.isWildcard).map { ($0.name.host, $0) })
    }

    public subscript(name: SiteName) -> Site? {
        get { name.isWildcard ? wildcards[name.host] : exact[name.host] }
        set {
            if name.isWildcard { wildcards[name.host] = newValue } else { exact[name.host] = newValue }
        }
    }

    public var count: Int { exact.count + wildcards.count }
    public var isEmpty: Bool { count == 0 }

    /// The site that serves `host`, with the name it was found under (see ``SiteIndex/lookup(_:)``:
    /// a wildcard also serves its base name, and the longest suffix wins).
    public func lookup(_ host: String) -> (name: SiteName, value: Site)? {
        if let site = exact[host] { return (site.name, site) }
        guard !wildcards.isEmpty else { return nil }
        if let site = wildcards[host] { return (site.name, site) }
        var rest = Substring(host)
        while let dot = rest.utf8.firstIndex(of: UInt8(ascii: ".")) {
            rest = rest[rest.utf8.index(after: dot)...]
            if let site = wildcards[String(rest)] { return (site.name, site) }
        }
        return nil
    }
}

extension ShardedMap {
    var isEmpty: Bool { count == 0 }
}

/// A certificate's files as loaded: which layout, and their stamps (the paths follow from the
/// name and the layout, so they are not kept for each of 100 000 certificates).
struct CertificateFiles: Equatable, Sendable {
    /// The certificate file's path relative to its pair's name: `.crt`, `.pem` or
    /// `/fullchain.pem` (the certbot layout); anything else kept as its last bytes.
    var layout: Substring
    var certificateStamp: FileStamp?
    var keyStamp: FileStamp?

    init(certificate: String, certificateStamp: FileStamp?, keyStamp: FileStamp?) {
        let suffixes = ["/fullchain.pem", ".crt", ".pem"]
        layout = Substring(suffixes.first { certificate.hasSuffix($0) } ?? certificate)
        self.certificateStamp = certificateStamp
        self.keyStamp = keyStamp
    }
}
