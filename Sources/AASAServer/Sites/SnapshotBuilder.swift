import AASACore
import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

/// Builds a new snapshot from the config and certs directories, reusing what did not change.
/// Runs off the hot path (at start and on the control thread); the loops only ever see the
/// finished result.
struct SnapshotBuilder {
    var configDirectory: String
    var certsDirectory: String?
    var defaultCertificate: String?
    var cacheControl: String
    var usesTLS: Bool
    var log: Log

    /// The largest file read; anything larger is over the AASA limit anyway, and refusing it
    /// early keeps a runaway file from taking the server's memory.
    static let readLimit = 4 * AASAFile.maximumSize

    func build(previous: SiteSnapshot?) -> SiteSnapshot {
        let previous = previous ?? .empty
        let certificates = loadCertificates(previous: previous)
        var sites: [Site]
        do {
            sites = try loadSites(previous: previous)
        } catch {
            log.error("config: cannot read \(configDirectory): \(error); every site keeps serving as it was")
            return SiteSnapshot(sites: previous.sites, certificates: certificates.store, certificateFingerprint: certificates.fingerprint)
        }
        if usesTLS {
            // Coverage goes into new Site objects, never into ones already published (a reused
            // site may be read by a loop right now).
            sites = sites.map { site in
                let probe = site.name.isWildcard ? "a." + site.name.host : site.name.host
                let covered = certificates.store.covers(probe)
                if !covered, previous.index[site.name]?.certificateCovers != false {
                    log.warning("site \(site.name): no certificate in \(certsDirectory ?? "--certs") covers it; HTTPS clients will see a name mismatch")
                }
                return site.with(certificateCovers: covered)
            }
        }
        return SiteSnapshot(sites: sites, certificates: certificates.store, certificateFingerprint: certificates.fingerprint)
    }

    private func loadSites(previous: SiteSnapshot) throws(SystemError) -> [Site] {
        var sites: [Site] = []
        for name in try DirectoryListing.names(in: configDirectory) where !name.hasPrefix(".") {
            let folder = configDirectory + "/" + name
            guard DirectoryListing.isDirectory(folder) else { continue }
            guard let siteName = SiteName(name) else {
                log.debug("config: \(folder) is not a site (folder names are lower-case host names or *.host)")
                continue
            }
            let old = previous.index[siteName]
            // A folder with any of the association files is a site (SPEC 2.1).
            let files = AssociationFileKind.allCases.compactMap { kind in
                loadFile(kind, in: folder, site: siteName, old: old?.file(kind), isNewSite: old == nil)
            }
            guard !files.isEmpty else { continue }
            if let old, old.files.count == files.count, zip(old.files, files).allSatisfy({ $0 === $1 }) {
                // Nothing changed: the same object.
                sites.append(old)
            } else {
                sites.append(Site(name: siteName, folder: folder, files: files, certificateCovers: old?.certificateCovers))
            }
        }
        return sites
    }

    /// One association file of a site folder: nil when the folder has none of this kind.
    private func loadFile(_ kind: AssociationFileKind, in folder: String, site: SiteName, old: SiteFile?, isNewSite: Bool) -> SiteFile? {
        let path = folder + "/" + kind.fileName
        // Messages name the file, except the AASA file, which is what a site is known for.
        let subject = kind == .aasa ? "site \(site)" : "site \(site) \(kind.fileName)"
        let bytes: [UInt8]
        let mtime: Int
        do {
            guard let read = try SnapshotBuilder.read(path) else { return nil }
            (bytes, mtime) = read
        } catch {
            if let old, old.refusal == error {
                // Refused for the same reason as last time: said already.
                return old
            }
            if let old, let served = old.served {
                // Present but refused: keep the last good version (SPEC 3.4).
                log.error("\(path): \(error.message); the last good version keeps serving")
                return SiteFile(kind: kind, path: path, served: served, newest: old.newest, refusal: error)
            }
            log.error("\(path): \(error.message); \(subject) not served")
            return SiteFile(kind: kind, path: path, served: nil, newest: AssociationFile(kind: kind, bytes: []), refusal: error)
        }
        if let old, old.refusal == nil, old.newest.bytes == bytes {
            // Unchanged: the same object, prepared responses and all. A valid file touched
            // without a change gets a new Last-Modified; a rejected one stays as it was.
            if old.served?.lastModified == mtime || !old.newest.isValid { return old }
        }
        let file = AssociationFile(kind: kind, bytes: bytes)
        if file.isValid {
            let served = ServedVersion(file: file, lastModified: mtime, cacheControl: cacheControl)
            for d in file.diagnostics { log.warning("\(path):\(d.line):\(d.column): warning: \(d.message) [\(d.code.rawValue)]") }
            if !isNewSite || old != nil { log.info("\(subject): serving version \(served.version)") }
            return SiteFile(kind: kind, path: path, served: served, newest: file)
        }
        for d in file.diagnostics where d.severity == .error {
            log.error("\(path):\(d.line):\(d.column): error: \(d.message) [\(d.code.rawValue)]")
        }
        let kept = old?.served
        log.error("\(subject): file rejected; \(kept.map { "version \($0.version) keeps serving" } ?? "not served")")
        return SiteFile(kind: kind, path: path, served: kept, newest: file)
    }

    private func loadCertificates(previous: SiteSnapshot) -> (store: CertificateStore, fingerprint: [String]) {
        guard usesTLS, let certsDirectory else { return (.empty, []) }
        guard let candidates = try? CertificateStore.candidates(in: certsDirectory) else {
            log.error("certificates: cannot read \(certsDirectory); the certificates loaded before keep serving")
            return (previous.certificates, previous.certificateFingerprint)
        }
        let fingerprint = candidates.flatMap { [$0.name, SnapshotBuilder.stamp($0.certificate), SnapshotBuilder.stamp($0.key)] }
            + [defaultCertificate ?? ""]
        if fingerprint == previous.certificateFingerprint { return (previous.certificates, fingerprint) }
        guard let store = CertificateStore.load(directory: certsDirectory, defaultName: defaultCertificate, report: { log.error($0) }) else {
            return (previous.certificates, previous.certificateFingerprint)
        }
        if store.certificates.isEmpty { log.error("certificates: no usable key pair in \(certsDirectory)") }
        for cert in store.certificates {
            log.info("certificate \(cert.name): \(cert.dnsNames.joined(separator: ", ")) (expires \(HTTPDate.format(cert.notAfter)))")
        }
        return (store, fingerprint)
    }

    /// Size, modification time and inode: what changes when a file is replaced or rewritten.
    static func stamp(_ path: String) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else { return "missing" }
        return "\(st.st_size)/\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)/\(st.st_ino)"
    }

    /// The file's bytes and modification time; nil when there is no file (not a site file,
    /// not an error). Never blocks: a FIFO opened for reading would wait for a writer forever,
    /// and a device such as /dev/zero never ends, so the file is opened non-blocking and
    /// anything but a regular file is refused before a byte is read.
    static func read(_ path: String) throws(FileRefusal) -> ([UInt8], Int)? {
        // Refused before it is opened at all, where stat can tell: opening a device can have
        // effects of its own. fstat below decides, in case the file changes in between.
        var before = stat()
        if stat(path, &before) == 0, before.st_mode & S_IFMT != S_IFREG {
            throw FileRefusal(code: "not-regular-file", message: "not a regular file (\(kind(before.st_mode)))")
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let error = errno
            if error == ENOENT || error == ENOTDIR { return nil }
            // ENXIO: a Unix socket; ELOOP: a symlink loop; EACCES: permissions.
            throw FileRefusal(code: "unreadable", message: "cannot open: \(String(cString: strerror(error)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else {
            throw FileRefusal(code: "unreadable", message: "cannot stat: \(String(cString: strerror(errno)))")
        }
        guard st.st_mode & S_IFMT == S_IFREG else {
            throw FileRefusal(code: "not-regular-file", message: "not a regular file (\(kind(st.st_mode)))")
        }
        // The real size, not what a capped read would have seen.
        guard st.st_size <= readLimit else {
            throw FileRefusal(code: DiagnosticCode.fileTooLarge.rawValue,
                              message: "the file is \(st.st_size) bytes; iOS stops reading after \(AASAFile.maximumSize) bytes (128 KB)")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(st.st_size))
        var chunk = [UInt8](repeating: 0, count: 65536)
        // Capped all the same: a file may grow while it is read.
        while bytes.count <= readLimit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw FileRefusal(code: "unreadable", message: "cannot read: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return (bytes, Int(st.st_mtim.tv_sec))
    }

    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "FIFO"
        case S_IFSOCK: return "socket"
        case S_IFCHR: return "character device"
        case S_IFBLK: return "block device"
        case S_IFDIR: return "directory"
        default: return "type \(mode & S_IFMT)"
        }
    }
}
