/// A connection's open streams by id: a small open-addressing table indexed by the id's low bits.
/// A client numbers its streams 1, 3, 5, … (RFC 9113 §5.1.1), so the open ones fall in
/// consecutive slots and a lookup is one comparison, where a dictionary hashed every id (some 250
/// instructions a stream more, bench/instr.py). Made when the first stream opens (a connection that never
/// opens one holds no slots), then kept: the slots of 100 streams are 2 KiB.
struct StreamTable {
    /// A power of two, at least twice the most streams open at once.
    private let capacity: Int
    private var slots: [HTTP2Stream?] = []
    private(set) var count = 0

    init(maxOpen: Int) {
        var capacity = 16
        while capacity < 2 * maxOpen { capacity *= 2 }
        self.capacity = capacity
    }

    var isEmpty: Bool { count == 0 }

    private func home(_ id: Int32) -> Int { Int(id >> 1) & (capacity - 1) }

    subscript(id: Int32) -> HTTP2Stream? {
        guard count > 0 else { return nil }
        var i = home(id)
        while let stream = slots[i] {
            if stream.id == id { return stream }
            i = (i + 1) & (capacity - 1)
        }
        return nil
    }

    /// Adds a stream whose id is not in the table (the table has room: at most half full).
    mutating func insert(_ stream: HTTP2Stream) {
        if slots.isEmpty { slots = [HTTP2Stream?](repeating: nil, count: capacity) }
        var i = home(stream.id)
        while slots[i] != nil { i = (i + 1) & (capacity - 1) }
        slots[i] = stream
        count += 1
    }

    /// Removes the stream with `id`, moving back any that probed past its slot (linear probing's
    /// deletion, so no lookup stops early at the gap).
    mutating func remove(_ id: Int32) {
        guard count > 0 else { return }
        var i = home(id)
        while let stream = slots[i], stream.id != id { i = (i + 1) & (capacity - 1) }
        guard slots[i] != nil else { return }
        slots[i] = nil
        count -= 1
        var j = (i + 1) & (capacity - 1)
        while let moved = slots[j] {
            let k = home(moved.id)
            // `moved` may fill the gap at i unless its home lies cyclically in (i, j].
            let inRange = i <= j ? (i < k && k <= j) : (i < k || k <= j)
            if !inRange {
                slots[i] = moved
                slots[j] = nil
                i = j
            }
            j = (j + 1) & (capacity - 1)
        }
    }

    /// Calls `body` with every open stream, in no particular order.
    func forEach(_ body: (HTTP2Stream) -> Void) {
        guard count > 0 else { return }
        for case let stream? in slots { body(stream) }
    }
}
