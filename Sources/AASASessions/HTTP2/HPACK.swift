import AASAHTTP

/// The request side of HPACK (RFC 7541): decodes a request's header block, keeping the
/// connection's dynamic table, so every block is decoded, including those of streams the server
/// refuses or ignores. The table's limit is SETTINGS_HEADER_TABLE_SIZE's default, which the server
/// never changes. A field is handed over as bytes valid until the next one: a literal in place in
/// the block, a table entry in the entry's memory, a Huffman-coded string in the decoder's scratch.
package final class HeaderDecoder {
    /// SETTINGS_HEADER_TABLE_SIZE, as announced (the default).
    package static let maxTableSize = 4_096

    /// One dynamic table entry: its memo, then its name and value, one after the other, in
    /// memory of its own (freed when it is evicted, never moved).
    private struct Entry {
        let memo: UnsafeMutablePointer<FieldMemo>
        let nameCount: Int
        let valueCount: Int
        var size: Int { nameCount + valueCount + 32 }  // §4.1
        private var bytes: UnsafeMutablePointer<UInt8> {
            UnsafeMutableRawPointer(memo + 1).assumingMemoryBound(to: UInt8.self)
        }
        var name: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: bytes, count: nameCount) }
        var value: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: bytes + nameCount, count: valueCount) }

        /// A copy of `name` and `value`, with a memo that is entry `serial`'s.
        init(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, serial: Int) {
            let raw = UnsafeMutableRawPointer.allocate(byteCount: MemoryLayout<FieldMemo>.stride + name.count + value.count,
                                                       alignment: MemoryLayout<FieldMemo>.alignment)
            memo = raw.bindMemory(to: FieldMemo.self, capacity: 1)
            memo.initialize(to: FieldMemo(entry: serial))
            nameCount = name.count
            valueCount = value.count
            let bytes = (raw + MemoryLayout<FieldMemo>.stride).bindMemory(to: UInt8.self, capacity: name.count + value.count)
            if let n = name.baseAddress { bytes.update(from: n, count: name.count) }
            if let v = value.baseAddress { (bytes + name.count).update(from: v, count: value.count) }
        }

        func free() { UnsafeMutableRawPointer(memo).deallocate() }
    }

    /// Oldest first; `oldest` marks the first still in the table (evicted ones before it are
    /// freed, and dropped from the array now and then).
    private var entries: [Entry] = []
    private var oldest = 0
    private var tableSize = 0
    /// The table's current limit: `maxTableSize` until a size update lowers it (§6.3).
    private var capacity = HeaderDecoder.maxTableSize
    /// Huffman-decoded strings (§5.2) of the current field: the name, then the value.
    private var scratch: UnsafeMutablePointer<UInt8>?
    private var scratchCapacity = 0
    /// The last Huffman-coded strings and what they decoded to: a client that does not index a
    /// field (`:path`, commonly) sends the same coded bytes on every stream.
    private var recent = RecentStrings()
    /// What the current block could need of the scratch.
    private var blockScratchNeed = 0
    /// A field too large for the table, kept until the next one like it or the end.
    private var transient: Entry?
    /// Fields inserted so far: each entry's memo names it by this count, never reused.
    private var inserted = 0

    /// The static table (Appendix A), read here rather than through its globals: each read of
    /// one was a `swift_once` check (callgrind). Its size is fixed by the RFC.
    private static var staticCount: Int { 61 }
    private let staticBytes = StaticTable.storage.bytes
    private let staticSpans = StaticTable.storage.spans

    package init() { assert(StaticTable.count == HeaderDecoder.staticCount) }

    /// Static table field `index` (1-based).
    private func staticField(_ index: Int) -> (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) {
        let span = staticSpans[index - 1]
        return (UnsafeBufferPointer(start: staticBytes + span.name, count: span.nameCount),
                UnsafeBufferPointer(start: staticBytes + span.value, count: span.valueCount))
    }

    deinit {
        for entry in entries[oldest...] { entry.free() }
        scratch?.deallocate()
        transient?.free()
        recent.free()
    }

    package enum Outcome {
        /// Every field was handed over.
        case done
        /// Not valid HPACK: a connection error, COMPRESSION_ERROR (RFC 9113 §4.3).
        case invalid
        /// `field` asked to stop: the table may be part-updated, and the connection is ending.
        case stopped
    }

    /// Where a decoded field came from, for a reader that remembers what it made of a field
    /// rather than read the same bytes again on every stream.
    package enum Origin {
        /// A literal not added to the table: nothing to remember it by.
        case literal
        /// A static table entry, by index (Appendix A): the same field on every connection.
        case staticEntry(Int)
        /// A dynamic table entry, indexed or just added: its memo lives, and its bytes stay the
        /// same, until it is evicted, when a later entry at its index has a memo of its own.
        case dynamicEntry(UnsafeMutablePointer<FieldMemo>)
    }

    /// Decodes a whole header block, handing each field to `field` (which returns false to stop).
    package func decode(_ block: UnsafeRawBufferPointer,
                        _ field: (_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ origin: Origin) -> Bool)
        -> Outcome {
        guard let base = block.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return .done }
        let bytes = UnsafeBufferPointer(start: base, count: block.count)
        blockScratchNeed = max(block.count * 8 / 5 + 2, 256)
        var i = 0
        var sawField = false
        defer { shrinkScratch() }
        while i < bytes.count {
            let first = bytes[i]
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                guard let index = HeaderDecoder.integer(bytes, &i, prefixBits: 7) else { return .invalid }
                sawField = true
                if index <= HeaderDecoder.staticCount {
                    guard index >= 1 else { return .invalid }
                    let (name, value) = staticField(index)
                    if !field(name, value, .staticEntry(index)) { return .stopped }
                } else {
                    guard let entry = dynamicEntry(index) else { return .invalid }
                    if !field(entry.name, entry.value, .dynamicEntry(entry.memo)) { return .stopped }
                }
            } else if first & 0xE0 == 0x20 {
                // Dynamic table size update (§6.3): only at the start of a block (§4.2), and
                // never above the limit the server announced.
                guard !sawField, let size = HeaderDecoder.integer(bytes, &i, prefixBits: 5), size <= HeaderDecoder.maxTableSize else {
                    return .invalid
                }
                capacity = size
                evict(toFit: 0)
            } else {
                // Literal with incremental indexing (§6.2.1), without indexing (§6.2.2) or never
                // indexed (§6.2.3).
                let indexing = first & 0xC0 == 0x40
                guard let (name, value) = literal(bytes, &i, prefixBits: indexing ? 6 : 4) else { return .invalid }
                sawField = true
                if indexing {
                    let (entry, kept) = insert(name, value)
                    if !field(entry.name, entry.value, kept ? .dynamicEntry(entry.memo) : .literal) { return .stopped }
                } else if !field(name, value, .literal) {
                    return .stopped
                }
            }
        }
        return .done
    }

    /// An integer with an N-bit prefix (§5.1), at most 2^28 or so: more is no valid size.
    /// Inlined: nearly every one fits its prefix (an index, a short length), and a call each cost
    /// some 14 instructions, 8 a request (callgrind).
    @inline(__always)
    private static func integer(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, prefixBits: Int) -> Int? {
        let limit = (1 << prefixBits) - 1
        let value = Int(bytes[i]) & limit
        i += 1
        guard value == limit else { return value }
        return continued(bytes, &i, limit)
    }

    /// The bytes after a full prefix (§5.1).
    private static func continued(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, _ prefix: Int) -> Int? {
        var value = prefix
        var shift = 0
        while i < bytes.count {
            let b = bytes[i]
            i += 1
            value += Int(b & 0x7F) << shift
            if b & 0x80 == 0 { return value }
            shift += 7
            if shift > 21 { return nil }
        }
        return nil
    }

    /// A field by index: the static table (Appendix A), then the dynamic table, newest first.
    private func lookUp(_ index: Int) -> (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>)? {
        if index >= 1, index <= HeaderDecoder.staticCount { return staticField(index) }
        guard let entry = dynamicEntry(index) else { return nil }
        return (entry.name, entry.value)
    }

    /// The dynamic table's entry at `index` (above the static table's), newest first.
    private func dynamicEntry(_ index: Int) -> Entry? {
        let k = index - HeaderDecoder.staticCount
        guard k >= 1, k <= entries.count - oldest else { return nil }
        return entries[entries.count - k]
    }

    /// A literal's name (by index, or a string) and value, at `i` (§6.2).
    private func literal(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, prefixBits: Int)
        -> (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>)? {
        guard let index = HeaderDecoder.integer(bytes, &i, prefixBits: prefixBits) else { return nil }
        var used = 0
        let name: UnsafeBufferPointer<UInt8>
        if index == 0 {
            guard let n = string(bytes, &i, scratchOffset: &used, isLast: false) else { return nil }
            name = n
        } else {
            guard let (n, _) = lookUp(index) else { return nil }
            name = n
        }
        guard let value = string(bytes, &i, scratchOffset: &used, isLast: true) else { return nil }
        return (name, value)
    }

    /// A string literal (§5.2): in place, or Huffman-decoded into the scratch from `scratchOffset`.
    /// `isLast`: the field's value, after which no string is decoded before the field is handed
    /// over, so a remembered one is handed over from its slot, not copied.
    private func string(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int, scratchOffset: inout Int,
                        isLast: Bool) -> UnsafeBufferPointer<UInt8>? {
        guard i < bytes.count else { return nil }
        let huffman = bytes[i] & 0x80 != 0
        guard let length = HeaderDecoder.integer(bytes, &i, prefixBits: 7), length <= bytes.count - i else { return nil }
        let coded = UnsafeBufferPointer(rebasing: bytes[i..<(i + length)])
        i += length
        guard huffman else { return coded }
        // The shortest code is 5 bits: at most 8 symbols for every 5 bytes, so a block of n bytes
        // decodes to at most n * 8 / 5 + 2 in a field's two strings. Made that large before the
        // block's first Huffman string, it never moves while a field's name is in it.
        if scratchCapacity < blockScratchNeed {
            scratch?.deallocate()
            scratch = .allocate(capacity: blockScratchNeed)
            scratchCapacity = blockScratchNeed
        }
        let start = scratch! + scratchOffset
        if let known = recent.decoded(coded) {
            if isLast { return known }
            // Copied out: the value may take its slot.
            if let k = known.baseAddress { start.update(from: k, count: known.count) }
            scratchOffset += known.count
            return UnsafeBufferPointer(start: start, count: known.count)
        }
        guard let count = Huffman.decode(coded, into: start) else { return nil }
        scratchOffset += count
        let decoded = UnsafeBufferPointer(start: start, count: count)
        recent.remember(coded, decoded)
        return decoded
    }

    /// Adds a field to the dynamic table (§4.4), evicting the oldest to make room; a field
    /// larger than the whole table empties it and is not added (false). Returns the field's
    /// entry, copied before anything is evicted (the name may be an entry's).
    private func insert(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> (Entry, kept: Bool) {
        let entry = Entry(name, value, serial: inserted)
        inserted += 1
        evict(toFit: entry.size)
        if entry.size > capacity {
            // The table is now empty; the field is handed over from memory freed later.
            transient?.free()
            transient = entry
            return (entry, false)
        }
        entries.append(entry)
        tableSize += entry.size
        return (entry, true)
    }

    /// Evicts the oldest entries until `incoming` more bytes fit (§4.4).
    private func evict(toFit incoming: Int) {
        while oldest < entries.count, tableSize + incoming > capacity { evictOne() }
        if oldest > 32, oldest * 2 > entries.count {
            entries.removeFirst(oldest)
            oldest = 0
        }
    }

    private func evictOne() {
        let entry = entries[oldest]
        tableSize -= entry.size
        entry.free()
        oldest += 1
    }

    /// A large scratch is given back after the block.
    private func shrinkScratch() {
        guard scratchCapacity > 4_096 else { return }
        scratch?.deallocate()
        scratch = nil
        scratchCapacity = 0
    }
}

/// What the reader of a connection's request fields made of one dynamic table entry, kept in
/// the entry's memory: a client indexes the fields it sends on every stream (`:authority`,
/// `user-agent`, `accept`...), and a lookup then costs less than matching the name, checking
/// the value and comparing it with the last one again (``RequestFieldReader``).
package struct FieldMemo {
    /// Which entry: the fields inserted before it on the connection. Never reused, so what the
    /// reader keeps by it cannot be taken for a later entry's.
    package let entry: Int
    /// The reader's; 0 until it sets it.
    package var kind: UInt8 = 0
}

/// HPACK's static table (RFC 7541 Appendix A): 61 fields, their bytes made once.
enum StaticTable {
    static let fields: [(name: String, value: String)] = [
        (":authority", ""), (":method", "GET"), (":method", "POST"), (":path", "/"), (":path", "/index.html"),
        (":scheme", "http"), (":scheme", "https"), (":status", "200"), (":status", "204"), (":status", "206"),
        (":status", "304"), (":status", "400"), (":status", "404"), (":status", "500"), ("accept-charset", ""),
        ("accept-encoding", "gzip, deflate"), ("accept-language", ""), ("accept-ranges", ""), ("accept", ""),
        ("access-control-allow-origin", ""), ("age", ""), ("allow", ""), ("authorization", ""), ("cache-control", ""),
        ("content-disposition", ""), ("content-encoding", ""), ("content-language", ""), ("content-length", ""),
        ("content-location", ""), ("content-range", ""), ("content-type", ""), ("cookie", ""), ("date", ""), ("etag", ""),
        ("expect", ""), ("expires", ""), ("from", ""), ("host", ""), ("if-match", ""), ("if-modified-since", ""),
        ("if-none-match", ""), ("if-range", ""), ("if-unmodified-since", ""), ("last-modified", ""), ("link", ""),
        ("location", ""), ("max-forwards", ""), ("proxy-authenticate", ""), ("proxy-authorization", ""), ("range", ""),
        ("referer", ""), ("refresh", ""), ("retry-after", ""), ("server", ""), ("set-cookie", ""),
        ("strict-transport-security", ""), ("transfer-encoding", ""), ("user-agent", ""), ("vary", ""), ("via", ""),
        ("www-authenticate", ""),
    ]
    static let count = fields.count

    /// Every name and value, one after the other, and where each starts; written once, never
    /// changed or freed (`nonisolated(unsafe)`: a pointer is not Sendable, the bytes are constant).
    nonisolated(unsafe) fileprivate static let storage: (bytes: UnsafeMutablePointer<UInt8>, spans: [(name: Int, nameCount: Int, value: Int, valueCount: Int)]) = {
        let total = fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        let bytes = UnsafeMutablePointer<UInt8>.allocate(capacity: total)
        var at = 0
        var spans: [(Int, Int, Int, Int)] = []
        for (name, value) in fields {
            let n = Array(name.utf8), v = Array(value.utf8)
            (bytes + at).initialize(from: n, count: n.count)
            (bytes + at + n.count).initialize(from: v, count: v.count)
            spans.append((at, n.count, at + n.count, v.count))
            at += n.count + v.count
        }
        return (bytes, spans)
    }()

    /// Field `index` (1-based).
    static func field(_ index: Int) -> (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) {
        let span = storage.spans[index - 1]
        return (UnsafeBufferPointer(start: storage.bytes + span.name, count: span.nameCount),
                UnsafeBufferPointer(start: storage.bytes + span.value, count: span.valueCount))
    }
}

/// HPACK's Huffman code (RFC 7541 Appendix B), decoded bit by bit over a tree made once.
enum Huffman {
    /// Each symbol's code (right-aligned) and length in bits, symbols 0-255 then EOS (256).
    static let codes: [(code: UInt32, length: Int)] = [
        (0x1ff8, 13), (0x7fffd8, 23), (0xfffffe2, 28), (0xfffffe3, 28), (0xfffffe4, 28), (0xfffffe5, 28),
        (0xfffffe6, 28), (0xfffffe7, 28), (0xfffffe8, 28), (0xffffea, 24), (0x3ffffffc, 30), (0xfffffe9, 28),
        (0xfffffea, 28), (0x3ffffffd, 30), (0xfffffeb, 28), (0xfffffec, 28), (0xfffffed, 28), (0xfffffee, 28),
        (0xfffffef, 28), (0xffffff0, 28), (0xffffff1, 28), (0xffffff2, 28), (0x3ffffffe, 30), (0xffffff3, 28),
        (0xffffff4, 28), (0xffffff5, 28), (0xffffff6, 28), (0xffffff7, 28), (0xffffff8, 28), (0xffffff9, 28),
        (0xffffffa, 28), (0xffffffb, 28), (0x14, 6), (0x3f8, 10), (0x3f9, 10), (0xffa, 12),
        (0x1ff9, 13), (0x15, 6), (0xf8, 8), (0x7fa, 11), (0x3fa, 10), (0x3fb, 10),
        (0xf9, 8), (0x7fb, 11), (0xfa, 8), (0x16, 6), (0x17, 6), (0x18, 6),
        (0x0, 5), (0x1, 5), (0x2, 5), (0x19, 6), (0x1a, 6), (0x1b, 6),
        (0x1c, 6), (0x1d, 6), (0x1e, 6), (0x1f, 6), (0x5c, 7), (0xfb, 8),
        (0x7ffc, 15), (0x20, 6), (0xffb, 12), (0x3fc, 10), (0x1ffa, 13), (0x21, 6),
        (0x5d, 7), (0x5e, 7), (0x5f, 7), (0x60, 7), (0x61, 7), (0x62, 7),
        (0x63, 7), (0x64, 7), (0x65, 7), (0x66, 7), (0x67, 7), (0x68, 7),
        (0x69, 7), (0x6a, 7), (0x6b, 7), (0x6c, 7), (0x6d, 7), (0x6e, 7),
        (0x6f, 7), (0x70, 7), (0x71, 7), (0x72, 7), (0xfc, 8), (0x73, 7),
        (0xfd, 8), (0x1ffb, 13), (0x7fff0, 19), (0x1ffc, 13), (0x3ffc, 14), (0x22, 6),
        (0x7ffd, 15), (0x3, 5), (0x23, 6), (0x4, 5), (0x24, 6), (0x5, 5),
        (0x25, 6), (0x26, 6), (0x27, 6), (0x6, 5), (0x74, 7), (0x75, 7),
        (0x28, 6), (0x29, 6), (0x2a, 6), (0x7, 5), (0x2b, 6), (0x76, 7),
        (0x2c, 6), (0x8, 5), (0x9, 5), (0x2d, 6), (0x77, 7), (0x78, 7),
        (0x79, 7), (0x7a, 7), (0x7b, 7), (0x7ffe, 15), (0x7fc, 11), (0x3ffd, 14),
        (0x1ffd, 13), (0xffffffc, 28), (0xfffe6, 20), (0x3fffd2, 22), (0xfffe7, 20), (0xfffe8, 20),
        (0x3fffd3, 22), (0x3fffd4, 22), (0x3fffd5, 22), (0x7fffd9, 23), (0x3fffd6, 22), (0x7fffda, 23),
        (0x7fffdb, 23), (0x7fffdc, 23), (0x7fffdd, 23), (0x7fffde, 23), (0xffffeb, 24), (0x7fffdf, 23),
        (0xffffec, 24), (0xffffed, 24), (0x3fffd7, 22), (0x7fffe0, 23), (0xffffee, 24), (0x7fffe1, 23),
        (0x7fffe2, 23), (0x7fffe3, 23), (0x7fffe4, 23), (0x1fffdc, 21), (0x3fffd8, 22), (0x7fffe5, 23),
        (0x3fffd9, 22), (0x7fffe6, 23), (0x7fffe7, 23), (0xffffef, 24), (0x3fffda, 22), (0x1fffdd, 21),
        (0xfffe9, 20), (0x3fffdb, 22), (0x3fffdc, 22), (0x7fffe8, 23), (0x7fffe9, 23), (0x1fffde, 21),
        (0x7fffea, 23), (0x3fffdd, 22), (0x3fffde, 22), (0xfffff0, 24), (0x1fffdf, 21), (0x3fffdf, 22),
        (0x7fffeb, 23), (0x7fffec, 23), (0x1fffe0, 21), (0x1fffe1, 21), (0x3fffe0, 22), (0x1fffe2, 21),
        (0x7fffed, 23), (0x3fffe1, 22), (0x7fffee, 23), (0x7fffef, 23), (0xfffea, 20), (0x3fffe2, 22),
        (0x3fffe3, 22), (0x3fffe4, 22), (0x7ffff0, 23), (0x3fffe5, 22), (0x3fffe6, 22), (0x7ffff1, 23),
        (0x3ffffe0, 26), (0x3ffffe1, 26), (0xfffeb, 20), (0x7fff1, 19), (0x3fffe7, 22), (0x7ffff2, 23),
        (0x3fffe8, 22), (0x1ffffec, 25), (0x3ffffe2, 26), (0x3ffffe3, 26), (0x3ffffe4, 26), (0x7ffffde, 27),
        (0x7ffffdf, 27), (0x3ffffe5, 26), (0xfffff1, 24), (0x1ffffed, 25), (0x7fff2, 19), (0x1fffe3, 21),
        (0x3ffffe6, 26), (0x7ffffe0, 27), (0x7ffffe1, 27), (0x3ffffe7, 26), (0x7ffffe2, 27), (0xfffff2, 24),
        (0x1fffe4, 21), (0x1fffe5, 21), (0x3ffffe8, 26), (0x3ffffe9, 26), (0xffffffd, 28), (0x7ffffe3, 27),
        (0x7ffffe4, 27), (0x7ffffe5, 27), (0xfffec, 20), (0xfffff3, 24), (0xfffed, 20), (0x1fffe6, 21),
        (0x3fffe9, 22), (0x1fffe7, 21), (0x1fffe8, 21), (0x7ffff3, 23), (0x3fffea, 22), (0x3fffeb, 22),
        (0x1ffffee, 25), (0x1ffffef, 25), (0xfffff4, 24), (0xfffff5, 24), (0x3ffffea, 26), (0x7ffff4, 23),
        (0x3ffffeb, 26), (0x7ffffe6, 27), (0x3ffffec, 26), (0x3ffffed, 26), (0x7ffffe7, 27), (0x7ffffe8, 27),
        (0x7ffffe9, 27), (0x7ffffea, 27), (0x7ffffeb, 27), (0xffffffe, 28), (0x7ffffec, 27), (0x7ffffed, 27),
        (0x7ffffee, 27), (0x7ffffef, 27), (0x7fffff0, 27), (0x3ffffee, 26), (0x3fffffff, 30),
    ]

    /// The decoding tree: node `n` has children `tree[2n]` (bit 0) and `tree[2n + 1]` (bit 1);
    /// a child below 0 is the leaf of symbol `-child - 1`, 0 is no child. Node 0 is the root;
    /// a complete code of 257 leaves has 256 inner nodes.
    private static let tree: [Int16] = {
        var tree = [Int16](repeating: 0, count: 2)
        for (symbol, (code, length)) in codes.enumerated() {
            var node = 0
            for bit in stride(from: length - 1, through: 0, by: -1) {
                let slot = 2 * node + Int(code >> UInt32(bit) & 1)
                if bit == 0 {
                    tree[slot] = Int16(-symbol - 1)
                } else {
                    if tree[slot] == 0 {
                        tree[slot] = Int16(tree.count / 2)
                        tree += [0, 0]
                    }
                    node = Int(tree[slot])
                }
            }
        }
        return tree
    }()

    private static let emits: UInt32 = 1 << 16, fails: UInt32 = 1 << 17

    /// The tree walked four bits at a time: entry `16 * node + nibble` is the node reached, the
    /// symbol completed on the way if any (`emits`; codes are at least 5 bits, so at most one),
    /// or `fails` when the way reaches EOS.
    private static let steps: [UInt32] = {
        var steps = [UInt32](repeating: 0, count: tree.count / 2 * 16)
        for node in 0..<(tree.count / 2) {
            for nibble in 0..<16 {
                var at = node
                var entry: UInt32 = 0
                for shift in stride(from: 3, through: 0, by: -1) {
                    let child = Int(tree[2 * at + (nibble >> shift & 1)])
                    if child < 0 {
                        let symbol = -child - 1
                        if symbol == 256 { entry |= fails }
                        entry |= emits | UInt32(symbol & 0xFF) << 8
                        at = 0
                    } else {
                        at = child
                    }
                }
                steps[16 * node + nibble] = entry | UInt32(at)
            }
        }
        return steps
    }()

    /// The nodes a string may end at: reached from the root by at most seven 1 bits, the
    /// beginning of EOS (padding, §5.2).
    private static let endings: [Bool] = {
        var endings = [Bool](repeating: false, count: tree.count / 2)
        var node = 0
        endings[0] = true
        for _ in 0..<7 {
            node = Int(tree[2 * node + 1])
            endings[node] = true
        }
        return endings
    }()

    /// Decodes `coded` into `out` (room for `coded.count * 8 / 5 + 1` bytes); the byte count, or
    /// nil when it holds EOS, or padding longer than 7 bits or not all ones (§5.2).
    static func decode(_ coded: UnsafeBufferPointer<UInt8>, into out: UnsafeMutablePointer<UInt8>) -> Int? {
        steps.withUnsafeBufferPointer { steps in
            var count = 0
            var node = 0
            /// One nibble's step; false when it reached EOS.
            @inline(__always) func take(_ nibble: Int) -> Bool {
                let step = steps[node << 4 | nibble]
                if step & emits != 0 {
                    out[count] = UInt8(truncatingIfNeeded: step >> 8)
                    count += 1
                }
                node = Int(step & 0xFF)
                return step & fails == 0
            }
            for byte in coded {
                guard take(Int(byte >> 4)), take(Int(byte & 0x0F)) else { return nil }
            }
            return endings[node] ? count : nil
        }
    }
}

/// The response side of HPACK (RFC 7541). A prepared response's block is encoded once: every
/// field a literal with incremental indexing (§6.2.1), so the bytes are the same for every stream
/// of every connection, and a connection's ``EncoderTable`` sends an index for each field after
/// the first response. Names found in the static table (Appendix A) are sent as its index,
/// `:status` values found there as one byte (others as a literal not indexed). No Huffman coding.
package enum HeaderEncoder {
    /// Entries of the static table (Appendix A): the dynamic table's first index is one more.
    static let staticTableCount = 61

    /// `:status`, first in a block (RFC 9113 §8.3).
    package static func status(_ status: Int, into out: inout [UInt8]) {
        if let index = statusIndex[status] {
            indexed(index, into: &out)
        } else {
            // Literal without indexing (§6.2.2), name index 8: a rare status takes no table space.
            integer(8, prefixBits: 4, first: 0x00, into: &out)
            string(String(status), into: &out)
        }
    }

    /// One field, a literal with incremental indexing (§6.2.1); `name` lower-case. Returns the
    /// size of the entry it inserts into the decoder's table (§4.1).
    package static func field(_ name: String, _ value: String, into out: inout [UInt8]) -> Int {
        if let index = staticNames[name] {
            integer(index, prefixBits: 6, first: 0x40, into: &out)
        } else {
            out.append(0x40)
            string(name, into: &out)
        }
        string(value, into: &out)
        return name.utf8.count + value.utf8.count + 32
    }

    /// An indexed field (§6.1).
    static func indexed(_ index: Int, into out: inout [UInt8]) {
        if index < 0x7F { out.append(0x80 | UInt8(index)) } else { integer(index, prefixBits: 7, first: 0x80, into: &out) }
    }

    /// A dynamic table size update (§6.3).
    static func sizeUpdate(_ size: Int, into out: inout [UInt8]) {
        integer(size, prefixBits: 5, first: 0x20, into: &out)
    }

    /// `date`, a literal with incremental indexing, name index 33 (once a second a connection).
    static func insertDate(_ date: [UInt8], into out: inout [UInt8]) {
        out.append(0x40 | 33)
        integer(date.count, prefixBits: 7, first: 0x00, into: &out)
        out.append(contentsOf: date)
    }

    static func dateEntrySize(_ date: [UInt8]) -> Int { 4 + date.count + 32 }

    private static func string(_ text: String, into out: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes in
            integer(bytes.count, prefixBits: 7, first: 0x00, into: &out)
            out.append(contentsOf: bytes)
        }
    }

    /// An integer with an N-bit prefix (§5.1), in its shortest form.
    static func integer(_ value: Int, prefixBits: Int, first: UInt8, into out: inout [UInt8]) {
        let limit = (1 << prefixBits) - 1
        if value < limit {
            out.append(first | UInt8(value))
            return
        }
        out.append(first | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            out.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    /// `:status` values with their own static entry (Appendix A).
    private static let statusIndex: [Int: Int] = [200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14]

    /// Static table names a response may carry (Appendix A).
    private static let staticNames: [String: Int] = [
        "accept-ranges": 18, "access-control-allow-origin": 20, "age": 21, "allow": 22, "cache-control": 24,
        "content-disposition": 25, "content-encoding": 26, "content-language": 27, "content-length": 28,
        "content-location": 29, "content-range": 30, "content-type": 31, "date": 33, "etag": 34, "expires": 36,
        "last-modified": 44, "link": 45, "location": 46, "retry-after": 53, "server": 54, "set-cookie": 55,
        "strict-transport-security": 56, "vary": 59, "via": 60, "www-authenticate": 61,
    ]
}
