/// What a ``MinHeap`` orders by: a time, earliest first.
package protocol HeapOrdered {
    var heapKey: Int64 { get }
}

/// A binary min-heap: the loops' deadlines (``TimerHeap``) and the CDN watch's schedule
/// (``DueHeap``). Entries are never removed from the middle: an entry that no longer holds is
/// left in and skipped when it surfaces, so moving a deadline costs a push at most.
package struct MinHeap<Element: HeapOrdered> {
    private var entries: [Element] = []

    package init() {}

    package var isEmpty: Bool { entries.isEmpty }
    package var count: Int { entries.count }
    /// The earliest entry.
    package var first: Element? { entries.first }

    mutating package func push(_ element: Element) {
        entries.append(element)
        var i = entries.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard entries[i].heapKey < entries[parent].heapKey else { break }
            entries.swapAt(i, parent)
            i = parent
        }
    }

    /// Removes and returns the earliest entry.
    @discardableResult
    mutating package func popFirst() -> Element? {
        guard let first = entries.first else { return nil }
        let last = entries.removeLast()
        guard !entries.isEmpty else { return first }
        entries[0] = last
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < entries.count, entries[l].heapKey < entries[smallest].heapKey { smallest = l }
            if r < entries.count, entries[r].heapKey < entries[smallest].heapKey { smallest = r }
            if smallest == i { return first }
            entries.swapAt(i, smallest)
            i = smallest
        }
    }
}
