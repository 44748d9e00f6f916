import AASACore
import Synchronization
import AASATransport
import AASASessions

/// Process-wide counters for `/metrics` (docs/serving.md, "Admin listener"). Request counts live per loop (see
/// ``LoopCounters``) so the hot path never contends for a lock with another thread.
public final class Metrics: Sendable {
    let openConnections = Atomic<Int>(0)
    let tlsHandshakes = Atomic<Int>(0)
    let tlsHandshakeErrors = Atomic<Int>(0)
    let reloads = Atomic<Int>(0)
    let reloadErrors = Locked<[String: Int]>([:])
    /// ACME orders by outcome (docs/acme.md).
    let acmeOrdersIssued = Atomic<Int>(0)
    let acmeOrdersFailed = Atomic<Int>(0)
    /// Write API requests by method and status (docs/platforms.md); methods outside the API's
    /// own count as `other`, so a client cannot grow the series.
    let apiRequests = Locked<[String: Int]>([:])
    /// Which sites get a label of their own on `aasa_requests_total`.
    let labels: SiteLabels
    /// The same for `aasa_reload_errors_total`, a table of its own: a rejected file must not
    /// take a slot from a site whose requests would then count as `other` with no series of
    /// its own to show for the slot.
    let reloadErrorLabels: SiteLabels

    init(labels: SiteLabels = SiteLabels()) {
        self.labels = labels
        reloadErrorLabels = SiteLabels(capacity: labels.capacity)
    }

    func countAPIRequest(method: String, status: Int) {
        let known = ["GET", "HEAD", "PUT", "DELETE"].contains(method) ? method : "other"
        apiRequests.withLock { $0["method=\"\(known)\",status=\"\(status)\"", default: 0] += 1 }
    }

    func recordReloadErrors(sites: [String]) {
        guard !sites.isEmpty else { return }
        let labelled = sites.map { reloadErrorLabels.label(for: $0) }
        reloadErrors.withLock { counts in
            for site in labelled { counts[site, default: 0] += 1 }
        }
    }
}

/// The sites that get a `site` label value of their own in `/metrics` (docs/serving.md, "Admin listener"): the
/// first `capacity` to be counted; every other site counts as `other`, so the metrics stay a
/// few hundred KB at 100 000 sites. Shared by every loop; each loop keeps its own copy of the
/// answers it got (``LoopCounters``), so the lock is taken once per site per loop.
final class SiteLabels: Sendable {
    static let defaultCapacity = 1000
    static let other = "other"

    let capacity: Int
    private let admitted = Locked<Set<String>>([])

    init(capacity: Int = SiteLabels.defaultCapacity) {
        self.capacity = max(0, capacity)
    }

    /// Labels that are not sites (unconfigured hosts, the admin listener, the dashboard): they
    /// never take a slot.
    static let fixed: Set<String> = ["", "unknown", "dashboard", SiteLabels.other]

    /// The site itself while there is room or it has its slot already, else `other`.
    func label(for site: String) -> String {
        if SiteLabels.fixed.contains(site) { return site }
        return admitted.withLock { admitted in
            if admitted.contains(site) { return site }
            guard admitted.count < capacity else { return SiteLabels.other }
            admitted.insert(site)
            return site
        }
    }
}

/// One loop's request counts by site, file and status. Written by its own thread; read by the
/// admin endpoint through the same uncontended lock (a pthread mutex: see ``Locked`` for why).
final class LoopCounters: Sendable {
    struct Key: Hashable {
        var site: String
        var status: Int
    }

    /// The counts of one site and status, by reference (the last one counted is kept at hand),
    /// one per ``RequestedFile``, indexed by its raw value. In memory of its own, so counting is
    /// one increment: an array in a class costs an exclusivity check and a uniqueness check per
    /// request (callgrind). Read and written under the tally's lock only.
    final class Count {
        private let slots = UnsafeMutablePointer<Int>.allocate(capacity: RequestedFile.allCases.count)

        init() { slots.initialize(repeating: 0, count: RequestedFile.allCases.count) }
        deinit { slots.deallocate() }

        func add(_ file: RequestedFile) { slots[file.rawValue] += 1 }
        var byFile: [Int] { Array(UnsafeBufferPointer(start: slots, count: RequestedFile.allCases.count)) }
    }

    struct Tally {
        var counts: [Key: Count] = [:]
        /// A keep-alive client asks for the same site again and again: comparing its key with
        /// the last one costs less than hashing it (a few hundred instructions, callgrind).
        var last: (key: Key, site: String, count: Count)?
    }

    let requests = Locked<Tally>(Tally())
    let labels: SiteLabels
    /// This loop's copy of the labels it was given (admitted sites and, up to a bound, sites
    /// that count as `other`).
    private let knownLabels = Locked<[String: String]>([:])

    init(labels: SiteLabels = SiteLabels()) {
        self.labels = labels
    }

    /// The label a site's requests count under: a bounded table (``SiteLabels``), `other` beyond it.
    private func label(_ site: String) -> String {
        knownLabels.withLock { known in
            if let label = known[site] { return label }
            let label = labels.label(for: site)
            if label != SiteLabels.other || known.count < 2 * labels.capacity + 1024 { known[site] = label }
            return label
        }
    }

    func count(site: String, file: RequestedFile, status: Int) {
        requests.withLock { tally in
            if tally.last?.key.status == status, tally.last?.site == site {
                tally.last!.count.add(file)
                return
            }
            let key = Key(site: label(site), status: status)
            let count = tally.counts[key] ?? Count()
            tally.counts[key] = count
            count.add(file)
            tally.last = (key, site, count)
        }
    }
}
