/// A connection's open streams by id: a small open-addressing table indexed by the id's low bits.
/// A client numbers its streams 1, 3, 5, … (RFC 9113 §5.1.1), so the open ones fall in
/// consecutive slots and a lookup is one comparison, where a dictionary hashed every id (some 250
/// instructions a stream more, bench/instr.py). Made when the first stream opens (a connection that never
/// opens one holds no slots), then kept: the slots of 100 streams are 3 KiB, ids and streams.
struct StreamTable {
    /// A power of two, at least twice the most streams open at once.
    private let capacity: Int
    /// Each slot's stream id, 0 when empty (no stream has id 0, RFC 9113 §5.1.1): a probe reads
    /// these, not the streams, each of which was retained and released as it was read from its
    /// slot (callgrind: retains and releases in open and remove).
    private var ids: [Int32] = []
    private var slots: [HTTP2Stream?] = []
    private(set) var count = 0
    /// Streams not in their home slot. Usually none (a client's open ids are consecutive), and
    /// then a removal moves nothing back and need not walk the cluster after the gap (some 90
    /// instructions a request with 10 streams in flight, callgrind).
    private var displaced = 0
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

    /// The slot holding `id`, if any.
    private func slot(of id: Int32) -> Int? {
        guard count > 0 else { return nil }
        var i = home(id)
        while true {
            let found = ids[i]
            if found == id { return i }
            if found == 0 { return nil }
            i = (i + 1) & (capacity - 1)
        }
    }

    subscript(id: Int32) -> HTTP2Stream? {
        guard let i = slot(of: id) else { return nil }
        return slots[i]
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
        if slots.isEmpty {
            ids = [Int32](repeating: 0, count: capacity)
            slots = [HTTP2Stream?](repeating: nil, count: capacity)
        }
        let mask = capacity - 1
        let home = home(stream.id)
        var i = home
        ids.withUnsafeMutableBufferPointer { ids in
            while ids[i] != 0 { i = (i + 1) & mask }
            ids[i] = stream.id
        }
        slots[i] = stream
        count += 1
        if i != home { displaced += 1 }
    }

    /// Removes the stream with `id`, moving back any that probed past its slot (linear probing's
    /// deletion, so no lookup stops early at the gap). Through the buffers: each assignment to
    /// an array checked it was unique (callgrind).
    mutating func remove(_ id: Int32) {
        guard let found = slot(of: id) else { return }
        let mask = capacity - 1
        count -= 1
        if found != home(id) { displaced -= 1 }
        let removed = slots.withUnsafeMutableBufferPointer { slots in
            ids.withUnsafeMutableBufferPointer { ids in
                var i = found
                let removed = slots[i].take()
                ids[i] = 0
                var j = (i + 1) & mask
                while displaced > 0, ids[j] != 0 {
                    let k = Int(ids[j] >> 1) & mask
                    // The stream at j may fill the gap at i unless its home lies cyclically in (i, j].
                    let inRange = i <= j ? (i < k && k <= j) : (i < k || k <= j)
                    if !inRange {
                        ids[i] = ids[j]
                        ids[j] = 0
                        slots.swapAt(i, j)
                        if i == k { displaced -= 1 }
                        i = j
                    }
                    j = (j + 1) & mask
                }
                return removed
            }
        }
        if closed.count < StreamTable.closedKept, let removed { closed.append(removed) }
    }

    /// Calls `body` with every open stream, in no particular order.
    func forEach(_ body: (HTTP2Stream) -> Void) {
        guard count > 0 else { return }
        for case let stream? in slots { body(stream) }
    }
}
