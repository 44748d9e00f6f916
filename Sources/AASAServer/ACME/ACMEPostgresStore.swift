import AASAPostgres
import AASATransport
import AASAClient

/// ACME's shared state in the PostgreSQL store (docs/replicas.md, "ACME with the store"):
///
/// - the account: `aasa_acme_accounts` (directory, key, URL), one per ACME directory;
/// - certificates: rows of `aasa_certificates` named after their host (what every replica
///   serves, like any certificate row), marked as ACME's by a row of `aasa_acme_certificates`;
/// - challenges: `aasa_acme_challenges`, which every replica's ``StoreSync`` follows, so the
///   CA's validation is answered by whichever replica it reaches;
/// - the right to order a host: a session-level advisory lock on the host's name, which
///   PostgreSQL releases when the session holding it ends (a replica that dies mid-order);
/// - the order-rate bucket: one row of `aasa_acme_orders`, updated under its row lock by
///   every replica, so the CA's limit holds for all of them together.
///
/// Keys this server writes (the account's, each certificate's) are sealed when
/// `--store-secret-file` is given (``KeySealer``). One connection, used by the ACME thread
/// alone, made again after it broke; while PostgreSQL is away nothing is ordered.
final class ACMEPostgresStore: ACMEStore {
    private let url: String
    private let sealer: KeySealer?
    private let orderRate: Int
    private var connection: PostgresConnection?
    /// The bucket's period, in seconds (3 hours, as Let's Encrypt counts new orders).
    private static let periodSeconds = OrderBucket.defaultPeriod / 1000

    init(url: String, sealer: KeySealer?, orderRate: Int) {
        self.url = url
        self.sealer = sealer
        self.orderRate = max(1, orderRate)
    }

    @discardableResult
    private func run<R>(_ what: String, _ body: (PostgresConnection) throws(PostgresError) -> R) throws(ACMEError) -> R {
        do {
            if connection?.isConnected != true { connection = try PostgresConnection(url: url) }
            return try body(connection!)
        } catch {
            if error.connectionLost { connection = nil }
            throw ACMEError(.storage, "store: \(what): \(error.message)")
        }
    }

    /// The tables come with the store's schema (``PostgresSchema``); the bucket's row is made here.
    func prepare() throws(ACMEError) {
        try run("prepare") { c throws(PostgresError) in
            try c.execute("INSERT INTO aasa_acme_orders (id, tokens, updated_at) VALUES (1, $1::float8, now()) ON CONFLICT (id) DO NOTHING",
                          [.text(String(orderRate))])
        }
    }

    // MARK: - Ordering

    var lockDescription: String { "another replica (a PostgreSQL advisory lock)" }

    func lock(_ host: String) throws(ACMEError) -> ACMELock? {
        let key = "aasa-acme:" + host
        let rows = try run("lock") { c throws(PostgresError) in
            try c.execute("SELECT pg_try_advisory_lock(hashtextextended($1, 0))::int::bigint", [.text(key)])
        }
        guard rows.int64(0, 0) == 1 else { return nil }
        let held = connection
        return ACMELock { [weak self] in
            // A session that ended released it already.
            guard let self, let held, held === self.connection, held.isConnected else { return }
            _ = try? held.execute("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [.text(key)])
        }
    }

    /// The bucket refilled for the time since it was last touched, in SQL, so every replica
    /// counts with the store's clock.
    private var refilled: String {
        "least($1::float8, tokens + extract(epoch FROM now() - updated_at)::float8 * $1::float8 / \(ACMEPostgresStore.periodSeconds))"
    }

    func takeOrder(now: Int64) -> Bool {
        let rows = try? run("order bucket") { c throws(PostgresError) in
            try c.execute("UPDATE aasa_acme_orders SET tokens = \(refilled) - 1, updated_at = now() WHERE id = 1 AND \(refilled) >= 1",
                          [.text(String(orderRate))])
        }
        return rows?.affected == 1
    }

    func nextOrder(now: Int64) -> Int64 {
        let rows = try? run("order bucket") { c throws(PostgresError) in
            try c.execute("SELECT ceil(greatest(0, 1 - \(refilled)) * \(ACMEPostgresStore.periodSeconds * 1000) / $1::float8)::bigint FROM aasa_acme_orders WHERE id = 1",
                          [.text(String(orderRate))])
        }
        // The store away: look again in 5 s.
        guard let wait = rows?.int64(0, 0) else { return now + 5_000 }
        return now + wait
    }

    // MARK: - Challenges

    func publishChallenge(_ type: ChallengeType, name: String, keyAuthorization: String) throws(ACMEError) {
        try run("publish the challenge") { c throws(PostgresError) in
            try c.execute("""
                INSERT INTO aasa_acme_challenges (type, name, key_authorization) VALUES ($1, $2, $3)
                ON CONFLICT (type, name) DO UPDATE SET key_authorization = EXCLUDED.key_authorization, created_at = now()
                """, [.text(type.rawValue), .text(name), .text(keyAuthorization)])
        }
    }

    func withdrawChallenge(_ type: ChallengeType, name: String) {
        _ = try? run("withdraw the challenge") { c throws(PostgresError) in
            try c.execute("DELETE FROM aasa_acme_challenges WHERE type = $1 AND name = $2", [.text(type.rawValue), .text(name)])
        }
    }

    /// Followed by ``StoreSync``, with every other change of the store.
    func sharedChallenges() -> [String: String]? { nil }

    // MARK: - Account

    func accountKey(directory: String, log: Log) throws(ACMEError) -> P256Key {
        if let key = try storedAccountKey(directory) { return key }
        let key = try P256Key.generate()
        let pem = String(decoding: try key.privateKeyPEM(), as: UTF8.self)
        // Two replicas starting together: the first row wins, and both use it.
        let rows = try run("save the account key") { c throws(PostgresError) in
            try c.execute("INSERT INTO aasa_acme_accounts (directory, key) VALUES ($1, $2) ON CONFLICT (directory) DO NOTHING",
                          [.text(directory), .text(sealer?.seal(pem) ?? pem)])
        }
        if rows.affected == 1 { log.info("acme: new account key in the store for \(directory)") }
        guard let stored = try storedAccountKey(directory) else { throw ACMEError(.storage, "store: the account key vanished") }
        return stored
    }

    private func storedAccountKey(_ directory: String) throws(ACMEError) -> P256Key? {
        let rows = try run("read the account key") { c throws(PostgresError) in
            try c.execute("SELECT key FROM aasa_acme_accounts WHERE directory = $1", [.text(directory)])
        }
        guard rows.count > 0, let stored = rows.text(0, 0) else { return nil }
        let pem: String
        do { pem = try KeySealer.open(stored, with: sealer) } catch {
            throw ACMEError(.storage, "store: the ACME account key: \(error.description)")
        }
        return try P256Key(pem: Array(pem.utf8))
    }

    func accountURL(directory: String) -> String? {
        let rows = try? run("read the account") { c throws(PostgresError) in
            try c.execute("SELECT url FROM aasa_acme_accounts WHERE directory = $1", [.text(directory)])
        }
        guard let rows, rows.count > 0 else { return nil }
        return rows.text(0, 0)
    }

    func saveAccount(url accountURL: String, directory: String) throws(ACMEError) {
        try run("save the account") { c throws(PostgresError) in
            try c.execute("UPDATE aasa_acme_accounts SET url = $2 WHERE directory = $1", [.text(directory), .text(accountURL)])
        }
    }

    func forgetAccount(directory: String) {
        _ = try? run("forget the account") { c throws(PostgresError) in
            try c.execute("UPDATE aasa_acme_accounts SET url = NULL WHERE directory = $1", [.text(directory)])
        }
    }

    // MARK: - Certificates

    /// The certificate row and its ACME mark in one transaction: a replica never sees a
    /// certificate of ours without the mark (it would take it for someone else's and never renew it).
    func saveCertificate(host: String, _ issued: Issuance.Issued) throws(ACMEError) {
        let key = String(decoding: issued.privateKeyPEM, as: UTF8.self)
        try run("save the certificate") { c throws(PostgresError) in
            try c.run("BEGIN")
            do throws(PostgresError) {
                try c.execute("""
                    INSERT INTO aasa_certificates (name, chain, key, updated_at) VALUES ($1, $2, $3, now())
                    ON CONFLICT (name) DO UPDATE SET chain = EXCLUDED.chain, key = EXCLUDED.key, updated_at = now()
                    """, [.text(host), .text(String(decoding: issued.chainPEM, as: UTF8.self)), .text(sealer?.seal(key) ?? key)])
                try c.execute("""
                    INSERT INTO aasa_acme_certificates (name, certificate_url, order_url, issued_at) VALUES ($1, $2, $3, now())
                    ON CONFLICT (name) DO UPDATE SET certificate_url = EXCLUDED.certificate_url, order_url = EXCLUDED.order_url, issued_at = now()
                    """, [.text(host), .text(issued.certificateURL), .text(issued.orderURL)])
                try c.run("COMMIT")
            } catch {
                _ = try? c.run("ROLLBACK")
                throw error
            }
        }
    }

    func issuedValidity(host: String) -> CertificateValidity? {
        let rows = try? run("read the certificate") { c throws(PostgresError) in
            try c.execute("SELECT c.chain FROM aasa_certificates c JOIN aasa_acme_certificates a ON a.name = c.name WHERE c.name = $1",
                          [.text(host)])
        }
        guard let rows, rows.count > 0, let chain = rows.text(0, 0) else { return nil }
        return CertificateValidity(pem: Array(chain.utf8), host: host)
    }

    /// Only a certificate ACME marked: a row someone else wrote under that name stays.
    func removeCertificate(host: String) throws(ACMEError) {
        try run("remove the certificate") { c throws(PostgresError) in
            try c.run("BEGIN")
            do throws(PostgresError) {
                try c.execute("DELETE FROM aasa_certificates c USING aasa_acme_certificates a WHERE a.name = c.name AND c.name = $1", [.text(host)])
                try c.execute("DELETE FROM aasa_acme_certificates WHERE name = $1", [.text(host)])
                try c.run("COMMIT")
            } catch {
                _ = try? c.run("ROLLBACK")
                throw error
            }
        }
    }
}
