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
            let path = folder + "/apple-app-site-association"
            let old = previous.index[siteName]
            guard let (bytes, mtime) = SnapshotBuilder.read(path) else {
                if let old, let served = old.served {
                    // Present but unreadable: keep the last good version (SPEC 3.4).
                    log.error("\(path): cannot read: \(String(cString: strerror(errno))); the last good version keeps serving")
                    sites.append(Site(name: siteName, path: path, served: served, newest: old.newest))
                } else if DirectoryListing.isFile(path) {
                    log.error("\(path): cannot read: \(String(cString: strerror(errno)))")
                }
                continue
            }
            if let old, old.newest.bytes == bytes {
                // Unchanged: the same object, prepared responses and all.
                if old.served?.lastModified == mtime || old.served == nil { sites.append(old); continue }
            }
            let file = AASAFile(bytes: bytes)
            if file.isValid {
                let served = ServedVersion(file: file, lastModified: mtime, cacheControl: cacheControl)
                for d in file.diagnostics { log.warning("\(path):\(d.line):\(d.column): warning: \(d.message) [\(d.code.rawValue)]") }
                if old != nil { log.info("site \(siteName): serving version \(served.version)") }
                sites.append(Site(name: siteName, path: path, served: served, newest: file))
            } else {
                for d in file.diagnostics where d.severity == .error {
                    log.error("\(path):\(d.line):\(d.column): error: \(d.message) [\(d.code.rawValue)]")
                }
                let kept = old?.served
                log.error("site \(siteName): file rejected; \(kept.map { "version \($0.version) keeps serving" } ?? "not served")")
                sites.append(Site(name: siteName, path: path, served: kept, newest: file))
            }
        }
        return sites
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

    /// The file's bytes and modification time, or nil when it cannot be read.
    static func read(_ path: String) -> ([UInt8], Int)? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(Int(st.st_size), readLimit + 1))
        var chunk = [UInt8](repeating: 0, count: 65536)
        while bytes.count <= readLimit {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 { if errno == EINTR { continue }; return nil }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
        }
        return (bytes, Int(st.st_mtim.tv_sec))
    }
}
