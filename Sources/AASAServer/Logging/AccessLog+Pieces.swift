/// The fields a remembered piece of a line was made of, by their bits: a String's two words are
/// its storage and length (or, up to 15 bytes, the bytes themselves), so two Strings with the
/// same words hold the same text as long as one of them is alive, and ``Pieces`` keeps the ones
/// it remembers alive. A keep-alive connection's parser hands over the same Strings for the same
/// host, agent and served path (``RememberedField``, ``InternedTargets``), so a repeated field
/// is found by comparing words, without reading its bytes or touching its reference count.
struct PieceKey: Equatable {
    private var a0: UInt64, a1: UInt64, b0: UInt64, b1: UInt64, c0: UInt64, c1: UInt64
    /// What else the piece depends on (the method, the version); never 0, so no key is that of
    /// a slot never filled.
    private var rest: UInt64

    init(_ a: String?, _ b: String?, _ c: String?, _ rest: UInt64) {
        (a0, a1) = unsafeBitCast(a, to: (UInt64, UInt64).self)
        (b0, b1) = unsafeBitCast(b, to: (UInt64, UInt64).self)
        (c0, c1) = unsafeBitCast(c, to: (UInt64, UInt64).self)
        precondition(rest != 0)
        self.rest = rest
    }

    static let unused = PieceKey()

    private init() {
        (a0, a1, b0, b1, c0, c1, rest) = (0, 0, 0, 0, 0, 0, 0)
    }
}

/// A few pieces of access-log lines, each the bytes some fields gave, remembered with those
/// fields (``PieceKey``): enough for the clients of a loop that come back request after request,
/// replaced in turn when a new one comes. Its storage is reached through constant pointers, so
/// that the log's hot path makes no exclusivity checks and no reference counting.
struct Pieces {
    struct Slot {
        var key = PieceKey.unused
        var bytes: UnsafeMutablePointer<UInt8>?
        var count = 0
        var capacity = 0
        /// Who fetched, for a line's end (``AccessLog/append(timeMilliseconds:client:request:status:bytes:durationMicroseconds:)``).
        var returned: StaticString?
    }

    static let slotCount = 8
    /// Fields longer than this together are written without being remembered.
    static let longestRemembered = 1024

    private let slots: UnsafeMutablePointer<Slot>
    /// The Strings each slot's key was made of, kept alive while the slot holds them.
    private let owners: UnsafeMutablePointer<(String?, String?, String?)>
    /// The slot found last, and the next to be replaced.
    private let cursor: UnsafeMutablePointer<(last: Int, next: Int)>

    init() {
        slots = .allocate(capacity: Pieces.slotCount)
        slots.initialize(repeating: Slot(), count: Pieces.slotCount)
        owners = .allocate(capacity: Pieces.slotCount)
        owners.initialize(repeating: (nil, nil, nil), count: Pieces.slotCount)
        cursor = .allocate(capacity: 1)
        cursor.initialize(to: (0, 0))
    }

    /// Frees the storage; the owner calls it once, from its deinit.
    func deallocate() {
        for i in 0..<Pieces.slotCount { slots[i].bytes?.deallocate() }
        slots.deallocate()
        owners.deinitialize(count: Pieces.slotCount)
        owners.deallocate()
        cursor.deallocate()
    }

    /// The slot remembered for `key`, or -1.
    @inline(__always)
    func find(_ key: PieceKey) -> Int {
        let last = cursor.pointee.last
        if slots[last].key == key { return last }
        for i in 0..<Pieces.slotCount where slots[i].key == key {
            cursor.pointee.last = i
            return i
        }
        return -1
    }

    @inline(__always)
    func slot(_ i: Int) -> Slot { slots[i] }

    /// Writes a piece for `key` into the next slot, keeping `fields` (what the key was made of)
    /// alive; at most `longest` bytes are written.
    func remember(_ key: PieceKey, fields: (String?, String?, String?), longest: Int, returned: StaticString? = nil,
                  _ write: (inout LineWriter) -> Void) -> Int {
        let i = cursor.pointee.next
        cursor.pointee.next = (i + 1) % Pieces.slotCount
        cursor.pointee.last = i
        if slots[i].capacity < longest {
            slots[i].bytes?.deallocate()
            slots[i].bytes = .allocate(capacity: longest)
            slots[i].capacity = longest
        }
        let start = slots[i].bytes!
        var w = LineWriter(at: start)
        write(&w)
        slots[i].count = w.at - start
        precondition(slots[i].count <= longest)
        slots[i].key = key
        slots[i].returned = returned
        owners[i] = fields
        return i
    }
}
