import AASACore
import AASAHTTP
import Dispatch
import Synchronization
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// What a reload reads again. A change seen by the watcher names the site folders and the
/// certificates it touched, and only those are read; `everything` (start, SIGHUP, a lost
/// event, a replaced directory) lists both directories and compares every file's stamp,
/// reading only the files whose stamps changed.
struct ReloadScope: Sendable, Equatable {
    /// List the config directory and check every site in it.
    var allSites = false
    /// List the certs directory and check every certificate in it.
    var allCertificates = false
    /// Site folders (names in the config directory) to read again, whatever their stamps.
    var sites: Set<String> = []
    /// Site folders to check: read again only when a file's stamp changed (a folder inotify
    /// could not watch, polled a slice at a time).
    var checkedSites: Set<String> = []
    /// Certificates (names as in the layouts of `--certs`) to load again.
    var certificates: Set<String> = []

    static let everything = ReloadScope(allSites: true, allCertificates: true)

    var isEmpty: Bool { !allSites && !allCertificates && sites.isEmpty && checkedSites.isEmpty && certificates.isEmpty }

    mutating func formUnion(_ other: ReloadScope) {
        allSites = allSites || other.allSites
        allCertificates = allCertificates || other.allCertificates
        sites.formUnion(other.sites)
        checkedSites.formUnion(other.checkedSites)
        certificates.formUnion(other.certificates)
    }
}

/// Builds a new snapshot from the config and certs directories, reusing what did not change.
/// Runs off the hot path (at start and on the control thread); the loops only ever see the
/// finished result.
struct SnapshotBuilder: Sendable {
    var configDirectory: String
    var certsDirectory: String?
    var defaultCertificate: String?
    var cacheControl: String
    var usesTLS: Bool
    var log: Log
    /// Counts coverage lookups and site and certificate loads (tests).
    var work: BuildWork?
    /// Whether sites keep their parsed documents (development: the dashboard and the URL tester
    /// read them all the time). Otherwise a site keeps its bytes and findings, about a third of
    /// the memory, and the rare reader parses again.
    var keepsDocuments = false
    /// The list a wildcard site's base is checked against (`*.com` is no site).
    var publicSuffixes: PublicSuffixes = .system

    /// The largest file read; anything larger is over the AASA limit anyway, and refusing it
    /// early keeps a runaway file from taking the server's memory.
    static let readLimit = 4 * AASAFile.maximumSize

    /// Below this many folders or certificates a load runs on the calling thread; above it on
    /// every core (start-up at 100 000 sites).
    static let parallelThreshold = 256

    /// What one build changed, for the reload's log line and metrics.
    struct Outcome {
        var snapshot: SiteSnapshot
        /// Sites added or replaced (not those only whose coverage changed).
        var changedSites: [Site] = []
        var removedSites = 0
        var changedCertificates = 0
    }

    func build(previous: SiteSnapshot?, scope: ReloadScope = .everything) -> SiteSnapshot {
        buildOutcome(previous: previous, scope: scope).snapshot
    }

    func buildOutcome(previous: SiteSnapshot?, scope: ReloadScope = .everything) -> Outcome {
        let previous = previous ?? .empty
        let findings = StartupFindings(log: log)
        defer { findings.finish() }
        let certificates = updateCertificates(previous: previous, scope: scope, findings: findings)

        // The site folders to look at, and the ones read whatever their stamps.
        let names: [String]
        // What readdir said each entry is (saves a stat per site at start), when listed.
        var isDirectory: [Bool?] = []
        if scope.allSites {
            do {
                // In byte order: a first start's sites are then loaded in the snapshot's order.
                let entries = try DirectoryListing.entries(in: configDirectory)
                names = entries.map(\.name)
                isDirectory = entries.map(\.isDirectory)
            } catch {
                log.error("config: cannot read \(configDirectory): \(error); every site keeps serving as it was")
                return finish(previous: previous, sites: nil, certificates: certificates, findings: findings)
            }
        } else {
            names = Array(scope.sites.union(scope.checkedSites))
        }
        let loaded = loadSites(names, isDirectory: isDirectory, previous: previous, forced: scope.sites, certificates: certificates.store,
                               findings: findings)
        var changes = loaded
        if scope.allSites {
            // Sites whose folders are gone.
            let present = Set(names)
            for site in previous.sites where !present.contains(site.name.description) {
                changes.append((site.name.description, nil))
            }
        }
        return finish(previous: previous, sites: (changes, rebuild: scope.allSites), certificates: certificates, findings: findings)
    }

    /// Puts the loaded sites and certificates together: patches the previous snapshot's sorted
    /// list and index where sites changed, and recomputes coverage only for the sites whose
    /// certificates changed.
    private func finish(previous: SiteSnapshot, sites: (changes: [(folder: String, site: Site?)], rebuild: Bool)?,
                        certificates: CertificateUpdate, findings: StartupFindings) -> Outcome {
        var list = previous.sites
        var index = previous.index
        var summary = previous.summary
        var outcome = Outcome(snapshot: previous)
        // Above this many changes (a start, a SIGHUP after a deploy) the list and index are
        // built again in one pass; below, each change copies one chunk and one shard.
        let bulkLimit = 1000
        if let sites, previous.index.isEmpty, list.isEmpty {
            // A first build: nothing to replace or remove, and the sites come in byte order
            // (checked) from a sorted listing.
            var merged = sites.changes.compactMap(\.site)
            for site in merged {
                summary.add(site)
                if site.certificateCovers == false { noteNotCovered(site.name, findings) }
            }
            outcome.changedSites = merged
            SnapshotBuilder.sortByName(&merged)
            list = ChunkedList(merged)
            index = SiteTable(merged)
        } else if let sites {
            var replaced: [String: Site?] = [:]
            for (folder, site) in sites.changes {
                let old = SiteName(folder).flatMap { previous.index[$0] }
                if old === site { continue }
                if let old {
                    summary.add(old, -1)
                    outcome.removedSites += site == nil ? 1 : 0
                }
                if let site {
                    // New and replaced sites enter the summary as loaded, coverage included.
                    summary.add(site)
                    outcome.changedSites.append(site)
                    if site.certificateCovers == false, old?.certificateCovers != false { noteNotCovered(site.name, findings) }
                }
                replaced[folder] = site
            }
            if replaced.count > bulkLimit {
                var merged = list.filter { replaced[$0.name.description] == nil }
                // In the order they were listed (byte order of name), so a first start sorts nothing.
                merged.append(contentsOf: sites.changes.compactMap { replaced[$0.folder] != nil ? $0.site : nil })
                SnapshotBuilder.sortByName(&merged)
                list = ChunkedList(merged)
                index = SiteTable(merged)
            } else {
                for (folder, site) in replaced {
                    if let name = SiteName(folder) { index[name] = site }
                    let i = SiteSnapshot.position(of: folder, in: list)
                    let present = i < list.count && list[i].name.description == folder
                    switch (present, site) {
                    case (true, let site?): list.replace(at: i, with: site)
                    case (true, nil): list.remove(at: i)
                    case (false, let site?): list.insert(site, at: i)
                    case (false, nil): break
                    }
                }
            }
        }
        // Coverage of the sites the changed certificates name: the sites loaded now have theirs
        // (all of them in a first build).
        if usesTLS, !previous.index.isEmpty {
            var recheck: Set<SiteName> = []
            if certificates.changedWildcards {
                // A wildcard certificate changed: any site one label under it may have changed;
                // rare enough to look every site up once (lookups, not pairs).
                recheck.formUnion(list.map(\.name))
            } else {
                for dnsName in certificates.changedNames {
                    if let name = SiteName(dnsName), index[name] != nil { recheck.insert(name) }
                    // A wildcard site is covered when `a.` + its host is (see `coverageProbe`).
                    if dnsName.hasPrefix("a."), let name = SiteName("*." + dnsName.dropFirst(2)), index[name] != nil { recheck.insert(name) }
                }
            }
            var updated: [SiteName: Site] = [:]
            for name in recheck {
                guard let site = index[name] else { continue }
                let covered = certificates.store.covers(SnapshotBuilder.coverageProbe(name), work: work)
                // Coverage goes into a new Site object, never into one already published (a
                // reused site may be read by a loop right now).
                let next = site.with(certificateCovers: covered)
                guard next !== site else { continue }
                if !covered { noteNotCovered(name, findings) }
                summary.add(site, -1)
                summary.add(next)
                updated[name] = next
            }
            if updated.count > bulkLimit {
                let merged = list.map { updated[$0.name] ?? $0 }
                list = ChunkedList(merged)
                index = SiteTable(merged)
            } else {
                for (name, next) in updated {
                    index[name] = next
                    let i = SiteSnapshot.position(of: name.description, in: list)
                    if i < list.count, list[i].name == name { list.replace(at: i, with: next) }
                }
            }
        }
        outcome.changedCertificates = certificates.changedCount
        outcome.snapshot = SiteSnapshot(sites: list, index: index, certificates: certificates.store,
                                        certificateFiles: certificates.files, summary: summary)
        return outcome
    }

    /// Byte order of name (site names are ASCII, whose String order is byte order); a list
    /// that comes in that order, as a first start's does, is checked, not sorted.
    private static func sortByName(_ sites: inout [Site]) {
        if !zip(sites, sites.dropFirst()).allSatisfy({ $0.name.description < $1.name.description }) {
            sites.sort { $0.name.description < $1.name.description }
        }
    }

    private func noteNotCovered(_ name: SiteName, _ findings: StartupFindings) {
        findings.note(.siteNotCovered, level: .warning,
                      "site \(name): no certificate in \(certsDirectory ?? "--certs") covers it; HTTPS clients will see a name mismatch")
    }

    /// The host a site's coverage is checked with: a wildcard site `*.example.org` is covered
    /// by a certificate that covers one label under it.
    static func coverageProbe(_ name: SiteName) -> String {
        name.isWildcard ? "a." + name.host : name.host
    }

    /// `body` of every index below `count`, in order; run on every core when there are many.
    static func map<T>(_ count: Int, _ body: @Sendable (Int) -> T?) -> [T?] {
        guard count >= parallelThreshold else { return (0..<count).map(body) }
        let chunks = min(count, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) * 8)
        // Each chunk's results are made on its thread and handed over under the lock once.
        let results = Locked<[[T?]]>(Array(repeating: [], count: chunks))
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let part = (chunk * count / chunks..<(chunk + 1) * count / chunks).map(body)
            results.withLock { $0[chunk] = part }
        }
        return results.withLock { $0.flatMap { $0 } }
    }

    // MARK: - Sites

    /// Loads the named folders; nil for a folder that is not (or no longer) a site.
    private func loadSites(_ names: [String], isDirectory: [Bool?], previous: SiteSnapshot, forced: Set<String>,
                           certificates: CertificateStore, findings: StartupFindings) -> [(folder: String, site: Site?)] {
        let results = SnapshotBuilder.map(names.count) { i in
            loadSite(names[i], isDirectory: i < isDirectory.count ? isDirectory[i] : nil, previous: previous,
                     forced: forced.contains(names[i]), certificates: certificates, findings: findings)
        }
        return names.indices.map { (names[$0], results[$0]) }
    }

    /// The site in folder `name`: the previous object when none of its files changed, else a
    /// new one, its coverage looked up in `certificates` (the store this build publishes).
    private func loadSite(_ name: String, isDirectory: Bool?, previous: SiteSnapshot, forced: Bool, certificates: CertificateStore,
                          findings: StartupFindings) -> Site? {
        guard !name.hasPrefix(".") else { return nil }
        let folder = DirectoryListing.path(configDirectory, name)
        guard isDirectory ?? DirectoryListing.isDirectory(folder) else { return nil }
        guard let siteName = SiteName(name) else {
            log.debug("config: \(folder) is not a site (folder names are lower-case host names or *.host)")
            return nil
        }
        work?.add()
        let old = previous.index[siteName]
        // Its files are looked up from the folder, listed once; one that cannot be opened or
        // listed (no read permission) by their paths, which then say what is wrong with each.
        let opened = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if opened >= 0 { close(opened) } }
        let listing = opened >= 0 ? (try? SiteFolderListing(opened)) ?? .unlisted : .unlisted
        if let refusal = publicSuffixes.refusal(of: siteName) {
            return refusedSite(siteName, folder: folder, listing: listing, refusal: FileRefusal(code: "not-a-site-name", message: refusal), old: old)
        }
        // A folder with any of the association files is a site (docs/serving.md, "Config directory").
        let files = AssociationFileKind.allCases.compactMap { kind -> SiteFile? in
            let presence = listing[kind]
            // Not listed: not there, as a failed stat would have said, whatever was there before.
            if presence == .absent { return nil }
            return loadFile(kind, presence: presence, in: folder, directory: opened, site: siteName, old: old?.file(kind),
                            isNewSite: old == nil, forced: forced, findings: findings)
        }
        guard !files.isEmpty else { return nil }
        if let old, old.files.count == files.count, zip(old.files, files).allSatisfy({ $0 === $1 }) {
            // Nothing changed: the same object.
            return old
        }
        // Its coverage now, not in a second object once the snapshot is put together.
        let covers = usesTLS ? certificates.covers(SnapshotBuilder.coverageProbe(siteName), work: work) : nil
        return Site(name: siteName, folder: folder, files: files, certificateCovers: covers)
    }

    /// A folder whose name is no site's (an IP address, `*.com`): listed with its files
    /// rejected, so `/status` and the log say why, and never served, whatever it held before.
    private func refusedSite(_ name: SiteName, folder: String, listing: SiteFolderListing, refusal: FileRefusal, old: Site?) -> Site? {
        let files = AssociationFileKind.allCases.compactMap { kind -> SiteFile? in
            guard listing[kind] != .absent else { return nil }
            return SiteFile(kind: kind, path: DirectoryListing.path(folder, kind.fileName), served: nil,
                            newest: AssociationFile(kind: kind, bytes: []), refusal: refusal)
        }
        guard !files.isEmpty else { return nil }
        if let old, old.files.count == files.count, old.files.allSatisfy({ $0.refusal == refusal && $0.served == nil }) { return old }
        log.error("config: \(folder): \(refusal.message); not served")
        return Site(name: name, folder: folder, files: files, certificateCovers: nil)
    }

    /// One association file of a site folder: nil when the folder has none of this kind.
    private func loadFile(_ kind: AssociationFileKind, presence: SiteFolderListing.Presence, in folder: String, directory opened: Int32,
                          site: SiteName, old: SiteFile?, isNewSite: Bool, forced: Bool, findings: StartupFindings) -> SiteFile? {
        let path = DirectoryListing.path(folder, kind.fileName)
        let (directory, name) = opened >= 0 ? (opened, kind.fileName) : (AT_FDCWD, path)
        if !forced, let old, let stamp = old.stamp, FileStamp(name, in: directory) == stamp {
            // Same file as when it was read: not read again.
            return old
        }
        // Messages name the file, except the AASA file, which is what a site is known for.
        var subject: String { kind == .aasa ? "site \(site)" : "site \(site) \(kind.fileName)" }
        let bytes: [UInt8]
        let mtime: Int
        let stamp: FileStamp
        do {
            guard let read = try SnapshotBuilder.read(name, in: directory, listedAsRegular: presence == .regularFile) else { return nil }
            work?.addRead()
            (bytes, mtime, stamp) = read
        } catch {
            if let old, old.refusal == error {
                // Refused for the same reason as last time: said already.
                return old
            }
            if let old, let served = old.served {
                // Present but refused: keep the last good version (docs/serving.md, "Validation and hot reload").
                log.error("\(path): \(error.message); the last good version keeps serving")
                return SiteFile(kind: kind, path: path, served: served, newest: old.newest, refusal: error)
            }
            log.error("\(path): \(error.message); \(subject) not served")
            return SiteFile(kind: kind, path: path, served: nil, newest: AssociationFile(kind: kind, bytes: []), refusal: error)
        }
        if let old, old.refusal == nil, old.newest.bytes == bytes {
            // Unchanged: the same object, prepared responses and all. A valid file touched
            // without a change gets a new Last-Modified; a rejected one stays as it was.
            if old.served?.lastModified == mtime || !old.newest.isValid {
                return old.stamp == stamp ? old : SiteFile(kind: kind, path: path, served: old.served, newest: old.newest, stamp: stamp)
            }
        }
        let parsed = AssociationFile(kind: kind, bytes: bytes)
        let file = keepsDocuments ? parsed : parsed.compacted()
        if file.isValid {
            let served = ServedVersion(file: file, lastModified: mtime, cacheControl: cacheControl)
            for d in file.diagnostics {
                findings.note(.validationWarning, level: .warning, "\(path):\(d.line):\(d.column): warning: \(d.message) [\(d.code.rawValue)]")
            }
            if !isNewSite || old != nil { findings.note(.siteLoaded, level: .info, "\(subject): serving version \(served.version)") }
            return SiteFile(kind: kind, path: path, served: served, newest: file, stamp: stamp)
        }
        // Every finding of a rejected file: each error on its own line, the warnings folded
        // like any start-up finding (a warning can be what explains the error).
        for d in file.diagnostics {
            if d.severity == .error {
                log.error("\(path):\(d.line):\(d.column): error: \(d.message) [\(d.code.rawValue)]")
            } else {
                findings.note(.validationWarning, level: .warning, "\(path):\(d.line):\(d.column): warning: \(d.message) [\(d.code.rawValue)]")
            }
        }
        if file.unlistedCount > 0 {
            log.error("\(path): \(file.unlistedCount) more findings not listed")
        }
        let kept = old?.served
        log.error("\(subject): file rejected; \(kept.map { "version \($0.version) keeps serving" } ?? "not served")")
        return SiteFile(kind: kind, path: path, served: kept, newest: file, stamp: stamp)
    }

    // MARK: - Certificates

    /// The certificate store after a reload, and what changed in it.
    struct CertificateUpdate {
        var store: CertificateStore
        var files: ShardedMap<String, CertificateFiles>
        /// DNS names of the certificates removed, added or replaced.
        var changedNames: Set<String> = []
        var changedWildcards = false
        var changedCount = 0
    }

    private func updateCertificates(previous: SiteSnapshot, scope: ReloadScope, findings: StartupFindings) -> CertificateUpdate {
        var update = CertificateUpdate(store: previous.certificates, files: previous.certificateFiles)
        guard usesTLS, let certsDirectory else { return update }
        // The names to look at, and where each one's files are now (nil: gone).
        let found: [(name: String, candidate: CertificateStore.Candidate?)]
        if scope.allCertificates {
            guard let candidates = try? CertificateStore.candidates(in: certsDirectory, skipped: { findings.error($0) }) else {
                log.error("certificates: cannot read \(certsDirectory); the certificates loaded before keep serving")
                return update
            }
            var listed = candidates.map { (name: $0.name, candidate: Optional($0)) }
            if !previous.certificateFiles.isEmpty {
                let present = Set(candidates.map(\.name))
                for name in previous.certificateFiles.keys where !present.contains(name) { listed.append((name, nil)) }
            }
            found = listed
        } else {
            found = scope.certificates.map { name in
                (name, CertificateStore.candidate(named: name, in: certsDirectory, skipped: { findings.error($0) }))
            }
        }
        // Each pair's stamps, then its load when they changed or it was named by a change, in
        // one pass on every core: at 100 000 certificates the stamps alone are 200 000 stats.
        let keys = KeyReader()
        let results = SnapshotBuilder.map(found.count) { i -> (files: CertificateFiles, loaded: CertificateStore.Loaded?)? in
            guard let candidate = found[i].candidate else { return nil }
            // The key's stat gives its stamp and its mode (a key readable by others is said).
            var key = stat()
            let keyStamp = stat(candidate.key, &key) == 0 ? FileStamp(key) : nil
            let files = CertificateFiles(certificate: candidate.certificate, certificateStamp: FileStamp(path: candidate.certificate),
                                         keyStamp: keyStamp)
            if previous.certificateFiles[found[i].name] == files, !scope.certificates.contains(found[i].name) { return (files, nil) }
            work?.add()
            work?.addRead()
            return (files, CertificateStore.load(candidate, keyMode: keyStamp != nil ? key.st_mode : nil, directory: certsDirectory,
                                                 findings: findings, keys: keys))
        }
        var toLoad: [(CertificateStore.Candidate, CertificateFiles, CertificateStore.Loaded)] = []
        var removed: Set<String> = []
        for (i, (name, candidate)) in found.enumerated() {
            guard let candidate else {
                if previous.certificateFiles[name] != nil { removed.insert(name) }
                continue
            }
            if let result = results[i], let loaded = result.loaded { toLoad.append((candidate, result.files, loaded)) }
        }
        guard !toLoad.isEmpty || !removed.isEmpty || (update.store.defaultName != defaultCertificate && scope.allCertificates) else {
            return update
        }
        var adding: [TLSCertificate] = []
        adding.reserveCapacity(toLoad.count)
        var acme: Set<String> = []
        // A pair that failed or was skipped may also be in `removed` (it was served before): what
        // it loaded decides, so a skipped pair keeps its stamps. A name listed twice: the last wins.
        var changedFiles: [(name: String, files: CertificateFiles?)] = []
        changedFiles.reserveCapacity(toLoad.count + removed.count)
        for (candidate, files, loaded) in toLoad {
            guard case .serving(let cert, let isACME) = loaded else {
                // A pair that fails to load or is skipped: the one loaded before goes too, as at
                // start. A skipped pair keeps its stamps, so it is not read (nor said) again
                // until its files change; a failed one is tried at every reload.
                if previous.certificates.certificate(named: candidate.name) != nil { removed.insert(candidate.name) }
                if case .skipped = loaded { changedFiles.append((candidate.name, files)) } else { changedFiles.append((candidate.name, nil)) }
                continue
            }
            findings.note(.certificateLoaded, level: .info,
                          "certificate \(cert.name): \(cert.dnsNames.joined(separator: ", ")) (expires \(HTTPDate.format(cert.notAfter)))")
            adding.append(cert)
            if isACME { acme.insert(cert.name) }
            changedFiles.append((candidate.name, files))
        }
        let loadedNames = Set(changedFiles.lazy.map(\.name))
        for name in removed where !loadedNames.contains(name) { changedFiles.append((name, nil)) }
        if update.files.isEmpty {
            // A first load: the map in one pass.
            update.files = ShardedMap(changedFiles.compactMap { change in change.files.map { (change.name, $0) } })
        } else if changedFiles.count > 1000 {
            var all: [String: CertificateFiles] = [:]
            for name in update.files.keys { all[name] = update.files[name] }
            for (name, files) in changedFiles { all[name] = files }
            update.files = ShardedMap(all.map { ($0.key, $0.value) })
        } else {
            for (name, files) in changedFiles { update.files[name] = files }
        }
        // The names whose sites' coverage may have changed: none to look at when there were no
        // sites before (a first start finds each site's coverage as it loads it).
        if !previous.index.isEmpty {
            for name in removed.union(adding.map(\.name)) {
                for dnsName in previous.certificates.certificate(named: name)?.dnsNames ?? [] { update.changedNames.insert(dnsName) }
            }
            for cert in adding { update.changedNames.formUnion(cert.dnsNames) }
            update.changedWildcards = update.changedNames.contains { $0.hasPrefix("*.") }
        }
        update.changedCount = adding.count + removed.subtracting(adding.map(\.name)).count
        update.store = previous.certificates.updating(removing: removed, adding: adding, acmeNames: acme, defaultName: defaultCertificate)
        if update.store.certificates.isEmpty { log.error("certificates: no usable key pair in \(certsDirectory)") }
        return update
    }

    /// The file's bytes and modification time; nil when there is no file (not a site file,
    /// not an error). Never blocks: a FIFO opened for reading would wait for a writer forever,
    /// and a device such as /dev/zero never ends, so the file is opened non-blocking and
    /// anything but a regular file is refused before a byte is read.
    static func read(_ path: String) throws(FileRefusal) -> (bytes: [UInt8], mtime: Int, stamp: FileStamp)? {
        try read(path, in: AT_FDCWD)
    }

    /// `name` in the directory open as `directory` (its descriptor, or AT_FDCWD for a path):
    /// a site's files are looked up from their folder, one path component each, instead of
    /// walking the whole path again for each of the four names. `listedAsRegular`: the folder's
    /// listing says it is a regular file, so the `stat` that keeps a device from being opened
    /// is not needed (the `fstat` of the open file still decides, as after that `stat`).
    static func read(_ name: String, in directory: Int32,
                     listedAsRegular: Bool = false) throws(FileRefusal) -> (bytes: [UInt8], mtime: Int, stamp: FileStamp)? {
        // Refused before it is opened at all, where stat can tell: opening a device can have
        // effects of its own. fstat below decides, in case the file changes in between.
        if !listedAsRegular {
            var before = stat()
            if fstatat(directory, name, &before, 0) == 0 {
                if before.st_mode & S_IFMT != S_IFREG {
                    throw FileRefusal(code: "not-regular-file", message: "not a regular file (\(kind(before.st_mode)))")
                }
            } else if errno == ENOENT || errno == ENOTDIR {
                // No such file: most sites have one or two of the four kinds.
                return nil
            }
        }
        let fd = openat(directory, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
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
        // Capped all the same: a file may grow while it is read.
        let bytes: [UInt8]
        switch FileContents.read(fd, expectedSize: Int(st.st_size), limit: readLimit) {
        case .success(let read): bytes = read
        case .failure(let error): throw FileRefusal(code: "unreadable", message: "cannot read: \(String(cString: strerror(error.errno)))")
        }
        return (bytes, Int(st.st_mtim.tv_sec), FileStamp(st))
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
