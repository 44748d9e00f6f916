/// What a ``MinHeap`` orders by: a time, earliest first.
public protocol HeapOrdered {
    var heapKey: Int64 { get }
}

/// A binary min-heap: the loops' deadlines (``TimerHeap``) and the CDN watch's schedule
/// (``DueHeap``). Entries are never removed from the middle: an entry that no longer holds is
/// left in and skipped when it surfaces, so moving a deadline costs a push at most.
public struct MinHeap<Element: HeapOrdered> {
    @usableFromInline var entries: [Element] = []

    @inlinable
    public init() {}

    @inlinable
    public var isEmpty: Bool { entries.isEmpty }
    @inlinable
    public var count: Int { entries.count }
    /// The earliest entry.
    @inlinable
    public var first: Element? { entries.first }

    @inlinable
    mutating public func push(_ element: Element) {
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
    @inlinable
    @discardableResult
    mutating public func popFirst() -> Element? {
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
