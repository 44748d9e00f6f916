import AASATransport

/// The one road from a change to what is served: a scope read again, built on the snapshot
/// published now, then published in its place. The control thread's watch and the write API
/// both come here, one at a time, so neither builds on a snapshot the other is replacing and
/// loses its change.
final class SnapshotPublisher: Sendable {
    private let builder: SnapshotBuilder
    private let state: ServerState
    private let configDirectory: String
    private let log: Log
    /// Held for a whole build and publish (a pthread mutex: see ``Locked``); counts the reloads
    /// (a value of no size made ThreadSanitizer's access checks report the lock's own accesses).
    private let serial = Locked<Int>(0)

    init(builder: SnapshotBuilder, state: ServerState, configDirectory: String, log: Log) {
        self.builder = builder
        self.state = state
        self.configDirectory = configDirectory
        self.log = log
    }

    /// Reads `scope` again and publishes the result. Returns the scope that was read (the
    /// development certificate may add every certificate to it), for the caller's watches.
    /// - Parameter quietIfUnchanged: a pass that found nothing new publishes and logs nothing.
    @discardableResult
    func reload(_ scope: ReloadScope, quietIfUnchanged: Bool = false) -> ReloadScope {
        serial.withLock { reloads in
            reloads += 1
            let started = monotonicMilliseconds()
            let previous = state.snapshots.load().0
            // In development the leaf certificate follows the sites: a new site gets a new leaf.
            let devChanged = state.dev?.ensureCertificates(configDirectory: configDirectory, log: log) ?? false
            var scope = scope
            if devChanged { scope.allCertificates = true }
            let outcome = builder.buildOutcome(previous: previous, scope: scope)
            let next = outcome.snapshot
            if quietIfUnchanged, outcome.changedSites.isEmpty, outcome.removedSites == 0, outcome.changedCertificates == 0,
               next.summary == previous.summary { return scope }
            state.snapshots.publish(next)
            state.metrics.reloads.add(1, ordering: .relaxed)
            // A reload error is a newly read file that was rejected, of any kind.
            let rejected = outcome.changedSites.filter { site in
                let before = previous.index[site.name]
                return site.files.contains { $0.state != .serving && $0.differs(from: before?.file($0.kind)) }
            }
            state.metrics.recordReloadErrors(sites: rejected.map(\.name.description))
            // The counts are those /status shows; "newly" counts files this reload read and refused.
            let counts = next.summary
            log.info("reloaded: \(counts.sites) sites, \(counts.serving) serving, \(counts.stale) stale, \(counts.rejected) rejected (\(rejected.count) newly), in \(monotonicMilliseconds() - started) ms")
            return scope
        }
    }
}
