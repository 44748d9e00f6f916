import AASACore
import AASAClient
import AASAPostgres
import CLinux
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
    /// The identity of the store last followed (``PostgresSchema/identity(_:)``).
    private var storeIdentity: String?
    /// Rows whose copy could not be written (a full $TMPDIR), or whose pass broke off: read
    /// again by the next pass.
    private var failedKeys: [RowKey] = []
    /// The same, handed over by the write API (another thread).
    private let uncopied = Locked<[RowKey]>([])

    /// A write committed through this replica whose copy failed (``WriteAPI``): its rows are
    /// read again by the next pass.
    func retryCopy(_ keys: [RowKey]) {
        uncopied.withLock { $0.append(contentsOf: keys) }
    }

    /// Set by SIGHUP: the next pass loads everything.
    let fullLoadRequested = Atomic<Bool>(false)
    let stopping = Atomic<Bool>(false)

    /// `--store-secret-file`: opens the keys the servers sealed.
    private let sealer: KeySealer?
    /// With `--acme`: where the challenges any replica publishes are answered from.
    private let challenges: PendingChallenges?
    /// The challenges this follower put in ``challenges`` (`TYPE/NAME` → key authorization).
    private var followed: [String: String] = [:]

    init(url: String, copy: FolderStore, sealer: KeySealer?, challenges: PendingChallenges?, publisher: SnapshotPublisher,
         state: ServerState, log: Log) {
        self.sealer = sealer
        self.challenges = challenges
        self.url = url
        self.copy = copy
        self.publisher = publisher
        self.state = state
        self.log = log
    }

    func start() {
        if let error = startDetachedThread({ self.run() }) { log.error("store: cannot start the thread that follows the store: \(error)") }
    }

    private func run() {
        var backoff: UInt32 = 1
        while !stopping.load(ordering: .relaxed) {
            do throws(PostgresError) {
                let c = try PostgresConnection(url: url)
                try PostgresSchema.prepare(c)
                let identity = try PostgresSchema.identity(c)
                if let known = storeIdentity, known != identity {
                    // Recreated, or restored from a backup: its change log starts again, and
                    // revisions already applied would be taken for ones seen. Read it whole.
                    log.warning("store: PostgreSQL came back as another database; reading it again whole")
                    fullLoadRequested.store(true, ordering: .relaxed)
                    recent = []
                }
                storeIdentity = identity
                // The change log keeps a week: a replica away longer loads everything again.
                try c.execute("DELETE FROM aasa_changes WHERE at < now() - interval '\(StoreSync.changeLogDays) days'")
                // A challenge a replica left behind when it died mid-order: the CA gave up on it long ago.
                try c.execute("DELETE FROM aasa_acme_challenges WHERE created_at < now() - interval '1 day'")
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
        // A change log that went back (a store restored from a backup) is read again whole too.
        guard let applied, !fullLoadRequested.load(ordering: .relaxed), high >= applied, low <= applied + 1 || high == applied else {
            fullLoadRequested.store(false, ordering: .relaxed)
            try loadEverything(c, upTo: high)
            return
        }
        let rows = try c.execute("SELECT revision, kind, host, name FROM aasa_changes WHERE revision > $1 ORDER BY revision LIMIT 100000",
                                 [.text(String(max(0, applied - StoreSync.window)))])
        var seen: Set<String> = []
        var keys: [(kind: String, host: String, name: String)] = []
        var newest = applied
        for i in 0..<rows.count {
            guard let revision = rows.int64(i, 0), !recent.contains(revision) else { continue }
            recent.insert(revision)
            newest = max(newest, revision)
            let kind = rows.text(i, 1) ?? "", host = rows.text(i, 2) ?? "", name = rows.text(i, 3) ?? ""
            let key = kind + "\u{0}" + host + "\u{0}" + name
            guard seen.insert(key).inserted else { continue }
            keys.append((kind, host, name))
        }
        recent = recent.filter { $0 > newest - StoreSync.window }
        self.applied = newest
        // Rows whose copy failed last time are read again with these.
        for key in failedKeys + uncopied.withLock({ taken in defer { taken = [] }; return taken })
        where seen.insert(key.kind + "\u{0}" + key.host + "\u{0}" + key.name).inserted {
            keys.append((key.kind, key.host, key.name))
        }
        failedKeys = []
        guard !keys.isEmpty else { return }
        let changes: [StoreChange]
        do throws(PostgresError) {
            try followChallenges(c, names: keys.filter { $0.kind == "challenge" }.map { $0.host + "/" + $0.name })
            changes = try currentRows(c, keys)
        } catch {
            // The revisions are counted as applied: their rows are read at the next pass.
            failedKeys = keys.map { RowKey(kind: $0.kind, host: $0.host, name: $0.name) }
            throw error
        }
        var scope = ReloadScope()
        for change in changes {
            do {
                if let s = try change.apply(to: copy) { scope.formUnion(s) }
            } catch {
                log.error("store: cannot write the local copy: \(error.message); tried again at the next pass")
                failedKeys.append(change.key)
            }
        }
        if !scope.isEmpty { publisher.reload(scope) }
    }

    /// The rows the changes name, as they are now (absent: deleted), read a thousand hosts or
    /// names per query: a catch-up of 10 000 changes is a few round trips, not 10 000.
    private func currentRows(_ c: PostgresConnection, _ keys: [(kind: String, host: String, name: String)]) throws(PostgresError) -> [StoreChange] {
        var wantedFiles: [String: [(SiteName, AssociationFileKind)]] = [:]
        var wantedCertificates: [String] = []
        for key in keys where key.kind != "challenge" {
            if key.kind == "file" {
                guard let site = SiteName(key.host), site.description == key.host,
                      let kind = AssociationFileKind.allCases.first(where: { $0.fileName == key.name }) else {
                    log.warning("store: aasa_files row (\(key.host.debugDescription), \(key.name.debugDescription)) is not a site's association file; ignored")
                    continue
                }
                wantedFiles[key.host, default: []].append((site, kind))
            } else if WriteAPI.isCertificateName(key.name) {
                wantedCertificates.append(key.name)
            } else {
                log.warning("store: aasa_certificates row \(key.name.debugDescription) is not a certificate name (letters, digits, . - _); ignored")
            }
        }
        var changes: [StoreChange] = []
        let hosts = Array(wantedFiles.keys)
        for start in stride(from: 0, to: hosts.count, by: 1000) {
            let batch = Array(hosts[start..<min(hosts.count, start + 1000)])
            let rows = try c.execute("SELECT host, name, content FROM aasa_files WHERE host = ANY($1::text[])", [.text(StoreSync.arrayLiteral(batch))])
            var found: [String: [UInt8]] = [:]
            for i in 0..<rows.count {
                guard let host = rows.text(i, 0), let name = rows.text(i, 1) else { continue }
                found[host + "/" + name] = rows[i, 2] ?? []
            }
            for host in batch {
                for (site, kind) in wantedFiles[host] ?? [] { changes.append(.file(site, kind, found[host + "/" + kind.fileName])) }
            }
        }
        for start in stride(from: 0, to: wantedCertificates.count, by: 1000) {
            let batch = Array(wantedCertificates[start..<min(wantedCertificates.count, start + 1000)])
            let rows = try c.execute("SELECT name, chain, key, \(StoreSync.isACME) FROM aasa_certificates c WHERE name = ANY($1::text[])",
                                     [.text(StoreSync.arrayLiteral(batch))])
            var found: [String: (String, String, Bool)] = [:]
            for i in 0..<rows.count {
                guard let name = rows.text(i, 0) else { continue }
                found[name] = (rows.text(i, 1) ?? "", rows.text(i, 2) ?? "", rows.int64(i, 3) == 1)
            }
            for name in batch {
                if let (chain, key, isACME) = found[name] {
                    if let change = opened(name, chain: chain, key: key, isACME: isACME) { changes.append(change) }
                } else {
                    changes.append(.certificate(name, chain: nil, key: nil))
                }
            }
        }
        return changes
    }

    /// Whether ACME issued the certificate row `c` (a column of the certificates' queries).
    private static let isACME = "(EXISTS (SELECT 1 FROM aasa_acme_certificates a WHERE a.name = c.name))::int::bigint"

    /// Answers the challenges the rows name (`TYPE/NAME`; nil: every row) as they are now, and
    /// stops answering those withdrawn: whichever replica the CA reaches answers it.
    private func followChallenges(_ c: PostgresConnection, names: [String]?) throws(PostgresError) {
        guard let challenges, names?.isEmpty != true else { return }
        var query = "SELECT type, name, key_authorization FROM aasa_acme_challenges"
        if let names {
            query += " WHERE type || '/' || name = ANY('\(StoreSync.arrayLiteral(names).replacing("'", with: "''"))'::text[])"
        }
        let rows = try c.execute(query)
        var now: [String: String] = [:]
        for i in 0..<rows.count {
            guard let type = rows.text(i, 0), let name = rows.text(i, 1), let value = rows.text(i, 2) else { continue }
            now[type + "/" + name] = value
        }
        for key in names ?? Array(Set(followed.keys).union(now.keys)) {
            let parts = key.split(separator: "/", maxSplits: 1).map(String.init)
            guard parts.count == 2, let type = ChallengeType(rawValue: parts[0]), followed[key] != now[key] else { continue }
            if let keyAuthorization = now[key] {
                switch type {
                case .http01:
                    challenges.addToken(parts[1], keyAuthorization: keyAuthorization)
                case .tlsALPN01:
                    do { challenges.addCertificate(try ChallengeCertificate(host: parts[1], keyAuthorization: keyAuthorization)) } catch {
                        log.error("acme: cannot answer the challenge for \(parts[1]): \(error)")
                        continue
                    }
                }
            } else {
                switch type {
                case .http01: challenges.removeToken(parts[1])
                case .tlsALPN01: challenges.removeCertificate(host: parts[1])
                }
            }
            followed[key] = now[key]
        }
    }

    /// A PostgreSQL array literal of text values (`{"a","b"}`), each quoted with `"` and `\`
    /// escaped.
    static func arrayLiteral(_ values: [String]) -> String {
        var out = "{"
        for (i, v) in values.enumerated() {
            if i > 0 { out += "," }
            out += "\""
            for c in v {
                if c == "\"" || c == "\\" { out += "\\" }
                out.append(c)
            }
            out += "\""
        }
        return out + "}"
    }

    /// A certificate row with its key opened; nil (logged, the copy left as it is) when the
    /// key is sealed with a secret this replica does not have.
    private func opened(_ name: String, chain: String, key: String, isACME: Bool) -> StoreChange? {
        do {
            return .certificate(name, chain: chain, key: try KeySealer.open(key, with: sealer), isACME: isACME)
        } catch {
            log.error("store: certificate \(name): \(error.description); not loaded")
            return nil
        }
    }

    /// Every row, and the copy made to hold exactly those (deletions included).
    private func loadEverything(_ c: PostgresConnection, upTo revision: Int64) throws(PostgresError) {
        let started = monotonicMilliseconds()
        let files = try c.execute("SELECT host, name, content FROM aasa_files")
        let certificates = try c.execute("SELECT name, chain, key, \(StoreSync.isACME) FROM aasa_certificates c")
        var keptSites: Set<String> = []
        var keptFiles: Set<String> = []
        var keptCertificates: Set<String> = []
        var problems = 0
        var changes: [StoreChange] = []
        changes.reserveCapacity(files.count + certificates.count)
        for i in 0..<files.count {
            guard let host = files.text(i, 0), let name = files.text(i, 1), let site = SiteName(host), site.description == host,
                  let kind = AssociationFileKind.allCases.first(where: { $0.fileName == name }) else {
                problems += 1
                continue
            }
            keptSites.insert(host)
            keptFiles.insert(host + "/" + name)
            changes.append(.file(site, kind, files[i, 2] ?? []))
        }
        for i in 0..<certificates.count {
            guard let name = certificates.text(i, 0), WriteAPI.isCertificateName(name) else {
                problems += 1
                continue
            }
            keptCertificates.insert(name)
            if let change = opened(name, chain: certificates.text(i, 1) ?? "", key: certificates.text(i, 2) ?? "",
                                   isACME: certificates.int64(i, 3) == 1) { changes.append(change) }
        }
        // One thread: creating entries in one folder from two serialises on the folder's lock
        // anyway (a parallel version measured no faster here).
        var failures = 0
        for change in changes {
            do throws(StoreError) {
                _ = try change.apply(to: copy)
            } catch {
                failures += 1
                if failures <= 20 { log.error("store: cannot write the local copy: \(error.message); tried again at the next pass") }
                failedKeys.append(change.key)
            }
        }
        // What the copy holds that the store no longer does (a copy made at this start holds
        // nothing else).
        if applied != nil {
            for entry in (try? DirectoryListing.entries(in: copy.configDirectory, sorted: false)) ?? [] where !entry.name.hasPrefix(".") {
                guard let site = SiteName(entry.name) else { continue }
                for kind in AssociationFileKind.allCases where !keptFiles.contains(entry.name + "/" + kind.fileName) {
                    _ = try? copy.deleteFile(site, kind)
                }
            }
            if let certs = copy.certsDirectory {
                for entry in (try? DirectoryListing.entries(in: certs, sorted: false)) ?? [] where !entry.name.hasPrefix(".") && !keptCertificates.contains(entry.name) {
                    _ = try? copy.deleteCertificate(entry.name)
                }
            }
        }
        if problems > 0 { log.warning("store: \(problems) rows are not a site's association file or a certificate name; ignored") }
        try followChallenges(c, names: nil)
        publisher.reload(.everything)
        let first = applied == nil
        applied = revision
        // The revisions this load already reflects, so the next pass does not read their rows again.
        let seen = try c.execute("SELECT revision FROM aasa_changes WHERE revision > $1 AND revision <= $2",
                                 [.text(String(max(0, revision - StoreSync.window))), .text(String(revision))])
        recent = Set((0..<seen.count).compactMap { seen.int64($0, 0) })
        log.info("store: loaded \(keptSites.count) sites (\(files.count) files) and \(certificates.count) certificates from PostgreSQL in \(monotonicMilliseconds() - started) ms")
        if first {
            // The first load's result sets are freed, but malloc keeps their pages: give them
            // back (a 10 000-site replica measured 80 MiB before, 63 after, docs/performance.md).
            _ = malloc_trim(0)
            state.ready.store(true, ordering: .releasing)
        }
    }
}

/// `/status`'s `summary.store` (docs/replicas.md).
struct StoreStatus: Sendable {
    var kind = "folders"
    var connected = true
    /// When `connected` last changed (wall clock, milliseconds).
    var since = wallClockMilliseconds()
}
