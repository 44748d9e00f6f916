import AASACore
import AASAPostgres
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// PostgreSQL as the store that replicas share (docs/replicas.md). The tables `aasa_files` and
/// `aasa_certificates` are a public contract a platform may write with SQL; triggers on both
/// record every change in `aasa_changes` (a revision per row changed) and `NOTIFY` the replicas.
///
/// Each replica keeps a local copy of the rows in folders of the config directory's layout,
/// which the snapshot builder reads as it reads any config: a row reaches what is served by the
/// same road a file does. The copy is made again at every start; it is what keeps a replica
/// serving while PostgreSQL is away.
final class PostgresStore: SiteStore, @unchecked Sendable {
    let url: String
    /// The local copy the snapshot builder reads.
    let copy: FolderStore
    private let log: Log
    /// The write API's connection (its writes are one at a time: ``WriteAPI``'s lock), made
    /// when first needed and again after it broke.
    private var writer: PostgresConnection?
    /// Changes a transaction made, applied to the copy once it committed.
    private var pending: [StoreChange] = []

    /// `--store-secret-file`: the keys this server writes are sealed with it.
    private let sealer: KeySealer?

    init(url: String, copy: FolderStore, sealer: KeySealer?, log: Log) {
        self.url = url
        self.copy = copy
        self.sealer = sealer
        self.log = log
    }

    private func connection() throws(StoreError) -> PostgresConnection {
        if let writer, writer.isConnected { return writer }
        writer = nil
        do {
            let made = try PostgresConnection(url: url)
            writer = made
            return made
        } catch {
            throw StoreError(message: error.message, isUnavailable: true)
        }
    }

    @discardableResult
    private func run<R>(_ body: (PostgresConnection) throws(PostgresError) -> R) throws(StoreError) -> R {
        let c = try connection()
        do {
            return try body(c)
        } catch {
            if error.connectionLost { writer = nil }
            throw StoreError(message: error.message, isUnavailable: error.connectionLost)
        }
    }

    /// One transaction; tried again once, on a new connection, when the connection turns out
    /// broken before COMMIT was sent (PostgreSQL restarted since the last write: the old
    /// connection looks fine until it is used, and the transaction it began is gone with it).
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R {
        do throws(Attempt) {
            return try attempt(body)
        } catch {
            guard error.beforeCommit, error.error.isUnavailable else { throw error.error }
            log.info("store: the write's connection to PostgreSQL was broken; trying once more on a new one")
            do throws(Attempt) { return try attempt(body) } catch { throw error.error }
        }
    }

    /// A failed transaction, and whether it failed before COMMIT was sent.
    private struct Attempt: Error {
        var error: StoreError
        var beforeCommit: Bool
    }

    private func attempt<R>(_ body: () throws(StoreError) -> R) throws(Attempt) -> R {
        pending = []
        do {
            try run { c throws(PostgresError) in try c.execute("BEGIN") }
        } catch {
            throw Attempt(error: error, beforeCommit: true)
        }
        let result: R
        var committing = false
        do {
            result = try body()
            committing = true
            try run { c throws(PostgresError) in try c.execute("COMMIT") }
        } catch {
            pending = []
            _ = try? run { c throws(PostgresError) in try c.execute("ROLLBACK") }
            throw Attempt(error: error, beforeCommit: !committing)
        }
        // Committed: this replica's copy follows now, so the caller publishes before it answers.
        let changes = pending
        pending = []
        do {
            for change in changes { _ = try change.apply(to: copy) }
        } catch {
            var committed = error
            committed.isCommitted = true
            committed.uncopied = changes.map(\.key)
            throw Attempt(error: committed, beforeCommit: false)
        }
        return result
    }

    // MARK: - Files

    func file(_ site: SiteName, _ kind: AssociationFileKind) throws(StoreError) -> [UInt8]? {
        // In a transaction the row stays locked until it ends: a racing writer on another
        // replica waits, then sees this one's write (docs/platforms.md, "Writing safely").
        let rows = try run { c throws(PostgresError) in
            try c.execute("SELECT content FROM aasa_files WHERE host = $1 AND name = $2 FOR UPDATE",
                          [.text(site.description), .text(kind.fileName)])
        }
        return rows.count == 0 ? nil : rows[0, 0] ?? []
    }

    func putFile(_ site: SiteName, _ kind: AssociationFileKind, _ bytes: [UInt8]) throws(StoreError) -> ReloadScope {
        try run { c throws(PostgresError) in
            try c.execute("""
                INSERT INTO aasa_files (host, name, content, updated_at) VALUES ($1, $2, $3, now())
                ON CONFLICT (host, name) DO UPDATE SET content = EXCLUDED.content, updated_at = now()
                """, [.text(site.description), .text(kind.fileName), .bytes(bytes)])
        }
        pending.append(.file(site, kind, bytes))
        return ReloadScope(sites: [site.description])
    }

    func deleteFile(_ site: SiteName, _ kind: AssociationFileKind) throws(StoreError) -> ReloadScope? {
        let rows = try run { c throws(PostgresError) in
            try c.execute("DELETE FROM aasa_files WHERE host = $1 AND name = $2", [.text(site.description), .text(kind.fileName)])
        }
        guard rows.affected > 0 else { return nil }
        pending.append(.file(site, kind, nil))
        return ReloadScope(sites: [site.description])
    }

    func deleteSite(_ site: SiteName) throws(StoreError) -> ReloadScope? {
        let rows = try run { c throws(PostgresError) in
            try c.execute("DELETE FROM aasa_files WHERE host = $1", [.text(site.description)])
        }
        guard rows.affected > 0 else { return nil }
        for kind in AssociationFileKind.allCases { pending.append(.file(site, kind, nil)) }
        return ReloadScope(sites: [site.description])
    }

    // MARK: - Certificates

    func certificateChain(_ name: String) throws(StoreError) -> String? {
        let rows = try run { c throws(PostgresError) in
            try c.execute("SELECT chain FROM aasa_certificates WHERE name = $1 FOR UPDATE", [.text(name)])
        }
        return rows.count == 0 ? nil : rows.text(0, 0) ?? ""
    }

    func putCertificate(_ name: String, chain: String, key: String) throws(StoreError) -> ReloadScope {
        try run { c throws(PostgresError) in
            try c.execute("""
                INSERT INTO aasa_certificates (name, chain, key, updated_at) VALUES ($1, $2, $3, now())
                ON CONFLICT (name) DO UPDATE SET chain = EXCLUDED.chain, key = EXCLUDED.key, updated_at = now()
                """, [.text(name), .text(chain), .text(sealer?.seal(key) ?? key)])
            // A certificate put through the API is the platform's: ACME no longer renews the name.
            try c.execute("DELETE FROM aasa_acme_certificates WHERE name = $1", [.text(name)])
        }
        pending.append(.certificate(name, chain: chain, key: key))
        return ReloadScope(certificates: [name])
    }

    func deleteCertificate(_ name: String) throws(StoreError) -> ReloadScope? {
        let rows = try run { c throws(PostgresError) in
            try c.execute("DELETE FROM aasa_acme_certificates WHERE name = $1", [.text(name)])
            return try c.execute("DELETE FROM aasa_certificates WHERE name = $1", [.text(name)])
        }
        guard rows.affected > 0 else { return nil }
        pending.append(.certificate(name, chain: nil, key: nil))
        return ReloadScope(certificates: [name])
    }
}

/// One row's state, as the local copy takes it: present with its content, or gone. A
/// certificate ACME issued (``ACMEPostgresStore``) carries its mark into the copy, where the
/// loader finds it as it finds ACME's marks in `--certs` (``ACMEFolderStore``).
/// A row as the change log names it (`aasa_changes`: kind, host, name).
struct RowKey: Sendable, Hashable {
    var kind: String
    var host: String
    var name: String
}

enum StoreChange: Sendable {
    case file(SiteName, AssociationFileKind, [UInt8]?)
    case certificate(String, chain: String?, key: String?, isACME: Bool = false)

    /// The change log's key of the row (`aasa_changes`: kind, host, name).
    var key: RowKey {
        switch self {
        case .file(let site, let kind, _): return RowKey(kind: "file", host: site.description, name: kind.fileName)
        case .certificate(let name, _, _, _): return RowKey(kind: "certificate", host: "", name: name)
        }
    }

    /// Writes it into the copy, unless the copy already holds exactly that (a replica's own
    /// write comes back through the notification); the scope to read again, or nil.
    func apply(to copy: FolderStore) throws(StoreError) -> ReloadScope? {
        switch self {
        case .file(let site, let kind, let bytes?):
            if try copy.file(site, kind) == bytes { return nil }
            return try copy.putFile(site, kind, bytes)
        case .file(let site, let kind, nil):
            return try copy.deleteFile(site, kind)
        case .certificate(let name, let chain?, let key?, let isACME):
            let marked = try StoreChange.mark(name, isACME, in: copy)
            if try copy.certificateChain(name) == chain, let certs = copy.certsDirectory,
               (try FolderStore.read(certs + "/" + name + "/" + FolderStore.keyFile)) == Array(key.utf8) {
                return marked ? ReloadScope(certificates: [name]) : nil
            }
            return try copy.putCertificate(name, chain: chain, key: key)
        case .certificate(let name, _, _, _):
            _ = try StoreChange.mark(name, false, in: copy)
            return try copy.deleteCertificate(name)
        }
    }

    /// Puts or removes ACME's mark for `name` in the copy; whether that changed anything.
    private static func mark(_ name: String, _ isACME: Bool, in copy: FolderStore) throws(StoreError) -> Bool {
        guard let certs = copy.certsDirectory else { return false }
        let path = ACMEFolderStore.markerPath(certsDirectory: certs, name: name)
        guard DirectoryListing.isFile(path) != isACME else { return false }
        if !isACME {
            unlink(path)
            return true
        }
        for folder in [certs + "/acme", certs + "/acme/certificates"] where mkdir(folder, 0o755) != 0 && errno != EEXIST {
            throw StoreError(message: "cannot create \(folder): \(String(cString: strerror(errno)))")
        }
        try FolderStore.writeDurably(Array("{\"source\":\"store\"}\n".utf8), to: name + ".json", in: certs + "/acme/certificates", mode: 0o644, durable: false)
        return true
    }
}
