/// The loop's deadlines, earliest first: a binary min-heap of (time, connection). A connection
/// keeps at most one live entry, at `Connection.scheduledAt`; when its deadline moves later
/// the entry stays and is re-filed when it comes due, and when it moves earlier a new entry is
/// pushed and the old one is skipped as stale. So a request costs no heap work at all in the
/// common case, and 100 000 idle connections cost nothing until one of them is due.
struct TimerHeap {
    struct Entry {
        let time: Int64
        let fd: Int32
        let serial: UInt64
    }

    private var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    /// The earliest time, if any.
    var next: Int64? { entries.first?.time }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var i = entries.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard entries[i].time < entries[parent].time else { break }
            entries.swapAt(i, parent)
            i = parent
        }
    }

    /// Removes and returns the earliest entry due at or before `now`.
    mutating func popDue(_ now: Int64) -> Entry? {
        guard let first = entries.first, first.time <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var i = 0
            while true {
                let l = 2 * i + 1, r = l + 1
                var smallest = i
                if l < entries.count, entries[l].time < entries[smallest].time { smallest = l }
                if r < entries.count, entries[r].time < entries[smallest].time { smallest = r }
                if smallest == i { break }
                entries.swapAt(i, smallest)
                i = smallest
            }
        }
        return first
    }
}
