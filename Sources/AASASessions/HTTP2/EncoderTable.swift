/// The server's side of one connection's HPACK dynamic table (RFC 7541 §2.3.2, §4): what the
/// client's decoder holds of the response fields sent to it. A prepared head's fields go out once
/// as literals with incremental indexing (§6.2.1, ``HeaderEncoder``); each later response with the
/// same head sends one byte a field, its index (§6.1). The date likewise, once a second. This
/// changes no prepared bytes: which form goes out is decided here, per connection, by counting.
///
/// Nothing is looked up in a copy of the table. Entries are only ever appended, and a decoder
/// evicts the oldest first until what is added fits (§4.4), so the table always holds the longest
/// run of the newest entries whose sizes sum to at most its size. An entry inserted as the n-th,
/// when `before` bytes had been inserted, is therefore at index 62 + (inserted − 1 − n) (§2.3.3)
/// and is still held while `insertedBytes − before ≤ size`.
struct EncoderTable {
    /// SETTINGS_HEADER_TABLE_SIZE's initial value (RFC 9113 §6.5.2), and the most this encoder
    /// uses: a head's fields take about 450 bytes, so a few heads and dates fit.
    static let defaultSize = 4096
    /// Heads remembered: a connection usually asks one site for one file, at most a few variants.
    static let rememberedHeads = 4

    /// The table size both ends use now (the decoder's, as the last size update set it).
    private var size = EncoderTable.defaultSize
    /// The client's SETTINGS_HEADER_TABLE_SIZE, the most `size` may be.
    private var limit = EncoderTable.defaultSize
    /// A size update must begin the next block (§4.2), and the smallest limit announced since
    /// the last block, which must be signalled before the final one.
    private var updatePending = false
    private var smallestLimit = Int.max
    /// Entries inserted into the client's table on this connection, and their sizes summed.
    private var inserted = 0
    private var insertedBytes = 0
    /// Heads whose fields were inserted, with the number of the first entry and the bytes
    /// inserted before it. A head is held strongly: its identity must not pass to another.
    private var heads: [(head: ResponseHead, first: Int, before: Int)] = []
    /// The last date inserted (``ResponseHead/http2DateLength`` bytes), likewise.
    private var date: (bytes: [UInt8], number: Int, before: Int)?

    /// The client's SETTINGS carried SETTINGS_HEADER_TABLE_SIZE: the next block starts with the
    /// size updates it calls for (§4.2: the smallest since the last block, then the final one).
    mutating func limitAnnounced(_ value: Int) {
        limit = value
        let target = min(value, EncoderTable.defaultSize)
        smallestLimit = min(smallestLimit, target)
        if target != size || smallestLimit < size { updatePending = true }
    }

    /// A header block for `head` and `date` (`:status`, the head's fields, `date`), after a
    /// HEADERS frame header's nine bytes left for the caller to fill.
    mutating func write(_ head: ResponseHead, date today: [UInt8], into out: inout [UInt8]) {
        if !updatePending, writeIndexes(of: head, date: today, into: &out) { return }
        if updatePending {
            out.append(contentsOf: head.http2Frame[..<ResponseHead.frameHeaderLength])
            writeSizeUpdates(into: &out)
            writeFields(of: head, frameHeaderWritten: true, into: &out)
        } else {
            writeFields(of: head, frameHeaderWritten: false, into: &out)
        }
        if let date, date.bytes == today, isHeld(since: date.before) {
            HeaderEncoder.indexed(index(of: date.number), into: &out)
        } else {
            let before = insertedBytes
            HeaderEncoder.insertDate(today, into: &out)
            date = (today, insert(size: HeaderEncoder.dateEntrySize(today)), before)
        }
    }

    /// The usual block: the head and the date are both held, and go out as the frame header's
    /// room, `:status` and an index each, in one append (a byte at a time cost 260 instructions
    /// a response, callgrind). False when the block needs more than that.
    private func writeIndexes(of head: ResponseHead, date today: [UInt8], into out: inout [UInt8]) -> Bool {
        guard let date, date.bytes == today, isHeld(since: date.before) else { return false }
        var found = -1
        for i in heads.indices where heads[i].head === head {
            found = i
            break
        }
        guard found >= 0, isHeld(since: heads[found].before) else { return false }
        let prefix = ResponseHead.frameHeaderLength + head.http2StatusLength
        let fields = head.http2IndexedFields
        let top = index(of: heads[found].first)
        let dateIndex = index(of: date.number)
        guard top < 0x7F, dateIndex < 0x7F, prefix + fields + 1 <= 64 else { return false }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 64) { block in
            head.http2Frame.withUnsafeBufferPointer { frame in
                _ = block.initialize(from: frame[..<prefix])
            }
            for j in 0..<fields { block[prefix + j] = 0x80 | UInt8(top - j) }
            block[prefix + fields] = 0x80 | UInt8(dateIndex)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: block[..<(prefix + fields + 1)]))
        }
        return true
    }

    private mutating func writeFields(of head: ResponseHead, frameHeaderWritten: Bool, into out: inout [UInt8]) {
        let start = frameHeaderWritten ? ResponseHead.frameHeaderLength : 0
        if let known = heads.firstIndex(where: { $0.head === head }) {
            let entry = heads[known]
            if isHeld(since: entry.before) {
                out.append(contentsOf: head.http2Frame[start..<(ResponseHead.frameHeaderLength + head.http2StatusLength)])
                var index = index(of: entry.first)
                for _ in 0..<head.http2IndexedFields {
                    HeaderEncoder.indexed(index, into: &out)
                    index -= 1
                }
                return
            }
            heads.remove(at: known)
        }
        out.append(contentsOf: head.http2Frame[start...])
        let before = insertedBytes
        let first = inserted
        inserted += head.http2IndexedFields
        insertedBytes += head.http2TableSize
        // Fields that do not fit the table together empty it or evict each other (§4.4): sent
        // as they are, never referred to.
        guard isHeld(since: before) else { return }
        if heads.count == EncoderTable.rememberedHeads { heads.removeFirst() }
        heads.append((head, first, before))
    }

    /// §4.2; what was inserted before may be evicted by a smaller size and is forgotten.
    private mutating func writeSizeUpdates(into out: inout [UInt8]) {
        let target = min(limit, EncoderTable.defaultSize)
        if smallestLimit < target { HeaderEncoder.sizeUpdate(smallestLimit, into: &out) }
        HeaderEncoder.sizeUpdate(target, into: &out)
        size = target
        smallestLimit = .max
        updatePending = false
        heads.removeAll()
        date = nil
    }

    /// Counts an inserted entry of `size` bytes (§4.1); returns its number.
    private mutating func insert(size: Int) -> Int {
        inserted += 1
        insertedBytes += size
        return inserted - 1
    }

    /// True while every entry inserted from `before` bytes on is in the client's table.
    private func isHeld(since before: Int) -> Bool { insertedBytes - before <= size }

    /// The index of entry number `n` now: 62 for the newest (§2.3.3).
    private func index(of n: Int) -> Int { HeaderEncoder.staticTableCount + inserted - n }
}
