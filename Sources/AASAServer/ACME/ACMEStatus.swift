import AASACore
import AASAHTTP
import Synchronization
import AASATransport
import AASAClient

/// What the ACME thread is doing per host, for `/status`. Written by the ACME thread, read by
/// the admin endpoint.
public final class ACMEStatus: Sendable {
    public enum State: String, Sendable {
        /// Waiting for its first order (or for the lock another replica holds).
        case pending
        case ordering
        /// Holds an ACME certificate; renewed after `renewAfter`.
        case issued
        /// The last order failed; retried at `nextAttempt`.
        case failed
        /// A wildcard name: it needs DNS-01, which aasa cannot answer; never ordered.
        case wildcard
    }

    struct Entry: Sendable {
        var state: State
        var error: String?
        /// Unix seconds.
        var nextAttempt: Int?
    }

    let directory: String
    let challenge: ChallengeType
    /// What the loops answer challenges from, and the names clients asked for.
    let challenges = PendingChallenges()
    private let entries = Locked<[String: Entry]>([:])

    /// The queue (docs/acme.md): hosts waiting for an order (those under
    /// way excluded), and when the next may start (Unix seconds; nil when nothing waits).
    struct Queue: Sendable, Equatable {
        var queued = 0
        var nextOrderAt: Int?
    }

    private let queue = Locked(Queue())

    func setQueue(_ value: Queue) {
        queue.withLock { $0 = value }
    }

    init(directory: String, challenge: ChallengeType) {
        self.directory = directory
        self.challenge = challenge
    }

    /// A retry (`ordering`, `pending`) keeps the last failure visible until it succeeds.
    func set(_ host: String, _ state: State, error: String? = nil, nextAttempt: Int? = nil) {
        entries.withLock { entries in
            let kept = state == .ordering || state == .pending ? error ?? entries[host]?.error : error
            entries[host] = Entry(state: state, error: kept, nextAttempt: nextAttempt)
        }
    }

    /// Forgets hosts that are no longer configured.
    func keep(only hosts: Set<String>) {
        entries.withLock { $0 = $0.filter { hosts.contains($0.key) } }
    }

    func write(to w: inout JSONWriter) {
        let snapshot = entries.withLock { $0 }
        let queue = queue.withLock { $0 }
        w.beginObject()
        w.key("queued"); w.value(queue.queued)
        w.key("nextOrderAt"); w.value(queue.nextOrderAt.map { HTTPDate.iso8601(milliseconds: Int64($0) * 1000) })
        w.key("ordering")
        w.beginArray()
        for (host, entry) in snapshot.sorted(by: { $0.key < $1.key }) where entry.state == .ordering { w.value(host) }
        w.endArray()
        w.key("directory"); w.value(directory)
        w.key("challenge"); w.value(challenge.rawValue)
        w.key("hosts")
        w.beginArray()
        for (host, entry) in snapshot.sorted(by: { $0.key < $1.key }) {
            w.beginObject()
            w.key("host"); w.value(host)
            w.key("state"); w.value(entry.state.rawValue)
            w.key("error"); w.value(entry.error)
            w.key("nextAttempt"); w.value(entry.nextAttempt.map { HTTPDate.iso8601(milliseconds: Int64($0) * 1000) })
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }
}

/// Names clients asked for in a ClientHello that no certificate covers (docs/acme.md,
/// "Automatic certificates"): the ACME queue orders those first. Bounded: a scan of random names fills
/// it, and then it only forgets.
final class ACMEDemand: Sendable {
    static let capacity = 10_000

    private let enabled = Atomic<Bool>(false)
    private let names = Locked<Set<String>>([])

    /// Off until the ACME thread starts.
    var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }

    func note(_ name: String) {
        names.withLock { names in
            if names.count < ACMEDemand.capacity { names.insert(name) }
        }
    }

    func contains(_ name: String) -> Bool {
        names.withLock { $0.contains(name) }
    }

    func remove(_ name: String) {
        _ = names.withLock { $0.remove(name) }
    }

    /// The names asked for, to order first.
    var current: Set<String> { names.withLock { $0 } }
}
