import AASACore
import AASAPostgres
import AASATransport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Keeps a replica's local copy of the PostgreSQL store current (docs/replicas.md), on a thread
/// of its own that only writes the copy and publishes through the one road every change takes
/// (``SnapshotPublisher``): the event loops never wait on PostgreSQL.
///
/// At start it loads every row; then it listens on ``PostgresSchema/channel`` and, on each
/// notification (and every few seconds in any case), reads the change log past the last
/// revision it applied and reads again only the rows those changes name. A notification sent
/// while the connection was down is lost, so after a reconnection it catches up from the change
/// log the same way; what it cannot catch up that way (the log was pruned past it) it loads
/// whole, deletions included. While PostgreSQL is away the copy, and so what is served, stays
/// as it was.
final class StoreSync: @unchecked Sendable {
    private let url: String
    private let copy: FolderStore
    private let publisher: SnapshotPublisher
    private let state: ServerState
    private let log: Log
    /// The last revision of `aasa_changes` applied; nil before the first load.
    private var applied: Int64?
    /// Revisions above `applied - window` already applied: a transaction that took its revision
    /// early and committed late is still seen (revisions are not handed out in commit order).
    private var recent: Set<Int64> = []
    private static let window: Int64 = 1000
    /// How long `aasa_changes` keeps a change (each replica prunes it when it connects).
    static let changeLogDays = 7
    /// Set by SIGHUP: the next pass loads everything.
    let fullLoadRequested = Atomic<Bool>(false)
    let stopping = Atomic<Bool>(false)

    /// `--store-secret-file`: opens the keys the servers sealed.
    private let sealer: KeySealer?

    init(url: String, copy: FolderStore, sealer: KeySealer?, publisher: SnapshotPublisher, state: ServerState, log: Log) {
        self.sealer = sealer
        self.url = url
        self.copy = copy
        self.publisher = publisher
        self.state = state
        self.log = log
    }

    func start() {
        _ = startThread { self.run() }
    }

    private func run() {
        var backoff: UInt32 = 1
        while !stopping.load(ordering: .relaxed) {
            do throws(PostgresError) {
                let c = try PostgresConnection(url: url)
                try PostgresSchema.prepare(c)
                // The change log keeps a week: a replica away longer loads everything again.
                try c.execute("DELETE FROM aasa_changes WHERE at < now() - interval '\(StoreSync.changeLogDays) days'")
                try c.execute("LISTEN \(PostgresSchema.channel)")
                try catchUp(c)
                connected(true, nil)
                backoff = 1
                var lastPass = monotonicMilliseconds()
                while !stopping.load(ordering: .relaxed) {
                    var fds = pollfd(fd: c.socket, events: Int16(POLLIN), revents: 0)
                    _ = poll(&fds, 1, 1000)
                    let notified = !(try c.notifications()).isEmpty
                    let now = monotonicMilliseconds()
                    if notified || fullLoadRequested.load(ordering: .relaxed) || now - lastPass >= 5000 {
                        lastPass = now
                        try catchUp(c)
                    }
                }
            } catch {
                if error.state == "aasa-schema" {
                    // A newer aasa changed the schema while this one ran: retrying cannot help,
                    // and reading an unknown schema could serve the wrong thing. What was
                    // loaded keeps serving.
                    log.error("store: \(error.message); no longer following the store")
                    state.storeProblem.withLock { $0 = error.message }
                    return
                }
                connected(false, error.message)
                log.error("store: \(redacted(error.message)); \(applied == nil ? "not ready until the first load" : "serving what was loaded") (retry in \(backoff) s)")
                for _ in 0..<(backoff * 10) where !stopping.load(ordering: .relaxed) { usleep(100_000) }
                backoff = min(backoff * 2, 30)
            }
        }
    }

    /// A connection string's password never reaches the log.
    private func redacted(_ message: String) -> String {
        url.isEmpty ? message : message.replacing(url, with: "--store URL")
    }

    private func connected(_ up: Bool, _ problem: String?) {
        state.storeStatus.withLock { status in
            if status.connected != up { status.since = wallClockMilliseconds() }
            status.connected = up
        }
        state.storeProblem.withLock { $0 = problem }
    }

    // MARK: - Catching up

    private func catchUp(_ c: PostgresConnection) throws(PostgresError) {
        let bounds = try c.execute("SELECT coalesce(min(revision), 0), coalesce(max(revision), 0) FROM aasa_changes")
        let low = bounds.int64(0, 0) ?? 0, high = bounds.int64(0, 1) ?? 0
        guard let applied, !fullLoadRequested.load(ordering: .relaxed), low <= applied + 1 || high == applied else {
            fullLoadRequested.store(false, ordering: .relaxed)
            try loadEverything(c, upTo: high)
            return
        }
        let rows = try c.execute("SELECT revision, kind, host, name FROM aasa_changes WHERE revision > $1 ORDER BY revision LIMIT 100000",
                                 [.text(String(max(0, applied - StoreSync.window)))])
        var files: Set<String> = []
        var certificates: Set<String> = []
        var keys: [(kind: String, host: String, name: String)] = []
        var newest = applied
        for i in 0..<rows.count {
            guard let revision = rows.int64(i, 0), !recent.contains(revision) else { continue }
            recent.insert(revision)
            newest = max(newest, revision)
            let kind = rows.text(i, 1) ?? "", host = rows.text(i, 2) ?? "", name = rows.text(i, 3) ?? ""
            let key = kind + "\u{0}" + host + "\u{0}" + name
            guard kind == "file" ? files.insert(key).inserted : certificates.insert(key).inserted else { continue }
            keys.append((kind, host, name))
        }
        recent = recent.filter { $0 > newest - StoreSync.window }
        self.applied = newest
        guard !keys.isEmpty else { return }
        var scope = ReloadScope()
        for key in keys {
            let change: StoreChange?
            if key.kind == "file" {
                change = try fileChange(c, host: key.host, name: key.name)
            } else {
                change = try certificateChange(c, name: key.name)
            }
            guard let change else { continue }
            do {
                if let s = try change.apply(to: copy) { scope.formUnion(s) }
            } catch {
                log.error("store: cannot write the local copy: \(error.message)")
            }
        }
        if !scope.isEmpty { publisher.reload(scope) }
    }

    /// The row as it is now; nil for a row no site can have (logged).
    private func fileChange(_ c: PostgresConnection, host: String, name: String) throws(PostgresError) -> StoreChange? {
        guard let site = SiteName(host), site.description == host,
              let kind = AssociationFileKind.allCases.first(where: { $0.fileName == name }) else {
            log.warning("store: aasa_files row (\(host.debugDescription), \(name.debugDescription)) is not a site's association file; ignored")
            return nil
        }
        let rows = try c.execute("SELECT content FROM aasa_files WHERE host = $1 AND name = $2", [.text(host), .text(name)])
        return .file(site, kind, rows.count == 0 ? nil : rows[0, 0] ?? [])
    }

    private func certificateChange(_ c: PostgresConnection, name: String) throws(PostgresError) -> StoreChange? {
        guard WriteAPI.isCertificateName(name) else {
            log.warning("store: aasa_certificates row \(name.debugDescription) is not a certificate name (letters, digits, . - _); ignored")
            return nil
        }
        let rows = try c.execute("SELECT chain, key FROM aasa_certificates WHERE name = $1", [.text(name)])
        guard rows.count > 0 else { return .certificate(name, chain: nil, key: nil) }
        return opened(name, chain: rows.text(0, 0) ?? "", key: rows.text(0, 1) ?? "")
    }

    /// A certificate row with its key opened; nil (logged, the copy left as it is) when the
    /// key is sealed with a secret this replica does not have.
    private func opened(_ name: String, chain: String, key: String) -> StoreChange? {
        do {
            return .certificate(name, chain: chain, key: try KeySealer.open(key, with: sealer))
        } catch {
            log.error("store: certificate \(name): \(error.description); not loaded")
            return nil
        }
    }

    /// Every row, and the copy made to hold exactly those (deletions included).
    private func loadEverything(_ c: PostgresConnection, upTo revision: Int64) throws(PostgresError) {
        let started = monotonicMilliseconds()
        let files = try c.execute("SELECT host, name, content FROM aasa_files")
        let certificates = try c.execute("SELECT name, chain, key FROM aasa_certificates")
        var keptSites: Set<String> = []
        var keptFiles: Set<String> = []
        var keptCertificates: Set<String> = []
        var problems = 0
        for i in 0..<files.count {
            guard let host = files.text(i, 0), let name = files.text(i, 1), let site = SiteName(host), site.description == host,
                  let kind = AssociationFileKind.allCases.first(where: { $0.fileName == name }) else {
                problems += 1
                continue
            }
            keptSites.insert(host)
            keptFiles.insert(host + "/" + name)
            do { _ = try StoreChange.file(site, kind, files[i, 2] ?? []).apply(to: copy) } catch { log.error("store: \(error.message)") }
        }
        for i in 0..<certificates.count {
            guard let name = certificates.text(i, 0), WriteAPI.isCertificateName(name) else {
                problems += 1
                continue
            }
            keptCertificates.insert(name)
            guard let change = opened(name, chain: certificates.text(i, 1) ?? "", key: certificates.text(i, 2) ?? "") else { continue }
            do { _ = try change.apply(to: copy) } catch { log.error("store: \(error.message)") }
        }
        // What the copy holds that the store no longer does.
        for entry in (try? DirectoryListing.entries(in: copy.configDirectory)) ?? [] where !entry.name.hasPrefix(".") {
            guard let site = SiteName(entry.name) else { continue }
            for kind in AssociationFileKind.allCases where !keptFiles.contains(entry.name + "/" + kind.fileName) {
                _ = try? copy.deleteFile(site, kind)
            }
        }
        if let certs = copy.certsDirectory {
            for entry in (try? DirectoryListing.entries(in: certs)) ?? [] where !entry.name.hasPrefix(".") && !keptCertificates.contains(entry.name) {
                _ = try? copy.deleteCertificate(entry.name)
            }
        }
        if problems > 0 { log.warning("store: \(problems) rows are not a site's association file or a certificate name; ignored") }
        publisher.reload(.everything)
        let first = applied == nil
        applied = revision
        recent = []
        log.info("store: loaded \(keptSites.count) sites (\(files.count) files) and \(certificates.count) certificates from PostgreSQL in \(monotonicMilliseconds() - started) ms")
        if first { state.ready.store(true, ordering: .releasing) }
    }
}

/// `/status`'s `summary.store` (docs/replicas.md).
struct StoreStatus: Sendable {
    var kind = "folders"
    var connected = true
    /// When `connected` last changed (wall clock, milliseconds).
    var since = wallClockMilliseconds()
}
