/// When the control loop reloads after changes (docs/serving.md, "Validation and hot reload"): a
/// burst of writes becomes one reload, due a quiet time after the last change and never later
/// than a longest delay after the first while changes keep coming, so a deploy tool writing
/// many files is read once, well within a second. Times are monotonic milliseconds.
struct ReloadDebounce {
    /// Quiet time after the last change before a reload.
    let quiet: Int64
    /// The longest a reload waits after the first change of a burst.
    let longest: Int64
    private var firstChange: Int64?
    private var lastChange: Int64 = 0

    init(quiet: Int64 = 100, longest: Int64 = 300) {
        self.quiet = quiet
        self.longest = longest
    }

    /// A change seen at `now`.
    mutating func changed(at now: Int64) {
        if firstChange == nil { firstChange = now }
        lastChange = now
    }

    /// When the reload of the changes seen is due; nil when none is waiting.
    var due: Int64? {
        firstChange.map { min(lastChange + quiet, $0 + longest) }
    }

    /// Whether the reload is due at `now`; when it is, the burst is over and the next change
    /// starts another.
    mutating func takeDue(now: Int64) -> Bool {
        guard let due, now >= due else { return false }
        firstChange = nil
        return true
    }

    /// The changes were read by another reload (SIGHUP's): nothing is waiting.
    mutating func reset() {
        firstChange = nil
    }
}
