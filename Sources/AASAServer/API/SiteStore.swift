import AASACore

/// Where sites' files and certificates are kept, as the write API sees it (docs/platforms.md):
/// read, write and delete one file or certificate. Each write is durable when it returns and
/// says what it changed as a ``ReloadScope``, which the caller hands to the one road every
/// change takes to what is served (``SnapshotPublisher``).
protocol SiteStore: Sendable {
    /// Runs `body` — reads that decide a condition, then the writes they guard — as one step:
    /// one transaction, whose reads lock what they read. What it wrote is durable and visible
    /// to the snapshot builder when this returns.
    func transaction<R>(_ body: () throws(StoreError) -> R) throws(StoreError) -> R

    /// The stored bytes of a site's file; nil when there is none.
    func file(_ site: SiteName, _ kind: AssociationFileKind) throws(StoreError) -> [UInt8]?
    func putFile(_ site: SiteName, _ kind: AssociationFileKind, _ bytes: [UInt8]) throws(StoreError) -> ReloadScope
    /// nil when there was nothing to delete.
    func deleteFile(_ site: SiteName, _ kind: AssociationFileKind) throws(StoreError) -> ReloadScope?
    /// Every file of the site; nil when it has none.
    func deleteSite(_ site: SiteName) throws(StoreError) -> ReloadScope?

    /// The stored chain (PEM) of a certificate; nil when there is none.
    func certificateChain(_ name: String) throws(StoreError) -> String?
    func putCertificate(_ name: String, chain: String, key: String) throws(StoreError) -> ReloadScope
    func deleteCertificate(_ name: String) throws(StoreError) -> ReloadScope?
}

/// A store that could not do what it was asked: the write API answers 500 (507 when the
/// disk is full), and nothing served changes.
struct StoreError: Error, Sendable {
    var message: String
    /// No space left (ENOSPC, EDQUOT).
    var isFull = false
    /// The store cannot be reached (PostgreSQL away): 503, try again.
    var isUnavailable = false
    /// What is there would be served instead of what was written: 409, nothing written.
    var isConflict = false
    /// The write was committed to a shared store (other replicas serve it), but this replica
    /// could not make it its own (its local copy failed): 500 saying so, never "nothing changed".
    var isCommitted = false
    /// With `isCommitted`: the rows this replica's copy does not hold yet.
    var uncopied: [RowKey] = []
}
