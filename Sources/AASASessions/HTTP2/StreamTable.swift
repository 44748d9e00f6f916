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
    /// Streams removed, to open again (``HTTP2Stream/reopen(id:startedMicroseconds:sendWindow:receiveWindow:)``):
    /// a stream a request is then not an allocation and a free (some 300 instructions, callgrind).
    private var closed: [HTTP2Stream] = []
    /// About what a client keeps in flight at once.
    private static let closedKept = 16

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

    /// A new stream `id` in the table: a closed one opened again when nothing else holds it
    /// any more (the send queue, the lists of deadlines: a late look at it there must find it
    /// closed, not another stream), else a new one.
    mutating func open(_ id: Int32, startedMicroseconds: Int64, sendWindow: Int, receiveWindow: Int) -> HTTP2Stream {
        let stream: HTTP2Stream
        if var reused = closed.popLast(), isKnownUniquelyReferenced(&reused) {
            reused.reopen(id: id, startedMicroseconds: startedMicroseconds, sendWindow: sendWindow, receiveWindow: receiveWindow)
            stream = reused
        } else {
            stream = HTTP2Stream(id: id, startedMicroseconds: startedMicroseconds, sendWindow: sendWindow, receiveWindow: receiveWindow)
        }
        insert(stream)
        return stream
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
        guard let removed = slots[i] else { return }
        if closed.count < StreamTable.closedKept { closed.append(removed) }
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
