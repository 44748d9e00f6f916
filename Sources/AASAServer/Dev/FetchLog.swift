import Synchronization
import AASATransport

/// The most recent AASA fetches, for the development dashboard (docs/development-mode.md). Only
/// recorded in `--dev`, so the production hot path never takes this lock.
final class FetchLog: Sendable {
    struct Fetch: Sendable {
        var timeMilliseconds: Int64
        var client: String
        var host: String
        var path: String
        var status: Int
        var userAgent: String
        var sequence: Int
    }

    private let state = Locked<(entries: [Fetch], next: Int)>(([], 1))
    let capacity: Int

    init(capacity: Int = 100) {
        self.capacity = capacity
    }

    func append(timeMilliseconds: Int64, client: String, host: String, path: String, status: Int, userAgent: String) {
        state.withLock { s in
            s.entries.append(Fetch(timeMilliseconds: timeMilliseconds, client: client, host: host, path: path,
                                   status: status, userAgent: userAgent, sequence: s.next))
            s.next += 1
            if s.entries.count > capacity { s.entries.removeFirst(s.entries.count - capacity) }
        }
    }

    /// Newest first.
    func recent() -> [Fetch] {
        state.withLock { $0.entries.reversed() }
    }
}
