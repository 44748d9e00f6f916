import AASACore
import Synchronization
import AASATransport

/// How the config and certs directories are watched, for `/status`'s summary (docs/serving.md,
/// "Validation and hot reload"): `inotify`, or `poll` when either directory is polled, with the interval and how
/// long the last pass over everything took.
final class WatchStatus: Sendable {
    struct Value: Equatable, Sendable {
        var polls = false
        var pollInterval: Int?
        var lastPassSeconds: Double?
        /// From ready to every folder watched (and what changed meanwhile read); nil before.
        var coveredAfterReadySeconds: Double?
    }

    private let value = Locked(Value())

    func current() -> Value { value.withLock { $0 } }

    func set(_ update: (inout Value) -> Void) { value.withLock { update(&$0) } }
}

extension WatchStatus.Value {
    func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("mode"); w.value(polls ? "poll" : "inotify")
        w.key("pollInterval"); w.value(polls ? pollInterval : nil)
        w.key("lastPassSeconds")
        if polls, let lastPassSeconds {
            // Milliseconds are enough: a pass over 100 000 folders takes a second or so.
            w.raw(String(Double(Int((lastPassSeconds * 1000).rounded())) / 1000))
        } else {
            w.null()
        }
        w.key("coveredAfterReadySeconds")
        if let coveredAfterReadySeconds { w.raw(String(Double(Int((coveredAfterReadySeconds * 1000).rounded())) / 1000)) } else { w.null() }
        w.endObject()
    }
}
