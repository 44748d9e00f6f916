import AASATransport
import AASAClient

/// Where ACME keeps what replicas must share (docs/acme.md): the account, the certificates it
/// issued, the challenges it is answering, the right to order a host, and the order-rate
/// bucket. Folders (``ACMEFolderStore``, in `--certs`) or PostgreSQL (``ACMEPostgresStore``,
/// with `--store`). Used by the ACME thread alone.
protocol ACMEStore: AnyObject {
    /// Makes what is missing (folders, tables).
    func prepare() throws(ACMEError)

    // MARK: Ordering

    /// The right to order `host` now, held until released; nil when another replica holds it.
    func lock(_ host: String) throws(ACMEError) -> ACMELock?
    /// What holds the lock when ``lock(_:)`` gives nil, for `/status`.
    var lockDescription: String { get }
    /// Takes one order from the order-rate bucket (`--acme-order-rate` per 3 hours) if it has one.
    func takeOrder(now: Int64) -> Bool
    /// When the bucket next has an order (monotonic milliseconds; `now` when it has one).
    func nextOrder(now: Int64) -> Int64

    // MARK: Challenges

    /// Publishes a challenge this replica answers, so that every replica answers it.
    func publishChallenge(_ type: ChallengeType, name: String, keyAuthorization: String) throws(ACMEError)
    func withdrawChallenge(_ type: ChallengeType, name: String)
    /// The challenges published (`TYPE/NAME` → key authorization), when the ACME thread is the
    /// one that reads them; nil when they reach the server by another road (the store's own
    /// follower, ``StoreSync``).
    func sharedChallenges() -> [String: String]?

    // MARK: Account

    func accountKey(directory: String, log: Log) throws(ACMEError) -> P256Key
    func accountURL(directory: String) -> String?
    func saveAccount(url: String, directory: String) throws(ACMEError)
    /// Forgets the account URL (the CA forgot the account); the key is kept.
    func forgetAccount(directory: String)

    // MARK: Certificates

    /// Stores an issued certificate for `host`, marked as ACME's; served after the next reload.
    func saveCertificate(host: String, _ issued: Issuance.Issued) throws(ACMEError)
    /// The validity of the ACME certificate stored for `host`, to see what another replica did.
    func issuedValidity(host: String) -> CertificateValidity?
    /// Removes the ACME certificate of `host` (one that covers no site any more).
    func removeCertificate(host: String) throws(ACMEError)
}

/// A held ``ACMEStore/lock(_:)``: released once, by ``release()``.
final class ACMELock {
    private var releasing: (() -> Void)?

    init(_ release: @escaping () -> Void) { releasing = release }

    func release() {
        releasing?()
        releasing = nil
    }

    deinit { release() }
}
