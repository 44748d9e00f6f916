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

    /// A count, by reference: the last one counted is kept at hand.
    final class Count {
        var value = 0
    }

    struct Tally {
        var counts: [Key: Count] = [:]
        /// A keep-alive client asks for the same site again and again: comparing its key with
        /// the last one costs less than hashing it (a few hundred instructions, callgrind).
        var last: (key: Key, count: Count)?
    }

    let requests = Locked<Tally>(Tally())

    func count(site: String, status: Int) {
        requests.withLock { tally in
            if let last = tally.last, last.key.status == status, last.key.site == site {
                last.count.value += 1
                return
            }
            let key = Key(site: site, status: status)
            let count = tally.counts[key] ?? Count()
            tally.counts[key] = count
            count.value += 1
            tally.last = (key, count)
        }
    }
}
