import AASATransport

/// The loop's deadlines, earliest first: a min-heap of (time, connection). A connection keeps
/// at most one live entry, the time the loop keeps for it (`EventLoop.scheduled`); when its
/// deadline moves later the entry stays and is re-filed when it comes due, and when it moves
/// earlier a new entry is pushed and the old one is skipped as stale. So a request costs no heap
/// work at all in the common case, and 100 000 idle connections cost nothing until one of them
/// is due.
struct TimerHeap {
    struct Entry: HeapOrdered {
        let time: Int64
        let fd: Int32
        let serial: UInt64

        var heapKey: Int64 { time }
    }

    private var heap = MinHeap<Entry>()

    var isEmpty: Bool { heap.isEmpty }
    var count: Int { heap.count }
    /// The earliest time, if any.
    var next: Int64? { heap.first?.time }

    mutating func push(_ entry: Entry) { heap.push(entry) }

    /// Removes and returns the earliest entry due at or before `now`.
    mutating func popDue(_ now: Int64) -> Entry? {
        guard let first = heap.first, first.time <= now else { return nil }
        return heap.popFirst()
    }
}
