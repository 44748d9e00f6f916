import AASACore
import AASAHTTP
import Synchronization

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
    private let entries = Mutex<[String: Entry]>([:])

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
        w.beginObject()
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
