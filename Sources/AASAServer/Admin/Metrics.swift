import Synchronization

/// Process-wide counters for `/metrics` (SPEC 3.5). Request counts live per loop (see
/// ``LoopCounters``) so the hot path never contends for a lock with another thread.
public final class Metrics: Sendable {
    let openConnections = Atomic<Int>(0)
    let tlsHandshakes = Atomic<Int>(0)
    let tlsHandshakeErrors = Atomic<Int>(0)
    let reloads = Atomic<Int>(0)
    let reloadErrors = Locked<[String: Int]>([:])
    /// ACME orders by outcome (SPEC 3.10).
    let acmeOrdersIssued = Atomic<Int>(0)
    let acmeOrdersFailed = Atomic<Int>(0)

    init() {}

    func recordReloadErrors(sites: [String]) {
        guard !sites.isEmpty else { return }
        reloadErrors.withLock { counts in
            for site in sites { counts[site, default: 0] += 1 }
        }
    }
}

/// One loop's request counts by site and status. Written by its own thread; read by the admin
/// endpoint through the same uncontended lock (a pthread mutex: see ``Locked`` for why).
final class LoopCounters: Sendable {
    struct Key: Hashable {
        var site: String
        var status: Int
    }

    let requests = Locked<[Key: Int]>([:])

    func count(site: String, status: Int) {
        requests.withLock { $0[Key(site: site, status: status), default: 0] += 1 }
    }
}
