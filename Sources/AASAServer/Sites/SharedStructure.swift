/// Collections a reload copies in part: a change to one entry copies one small shard or chunk
/// and the array of references to them, never all 100 000 entries. Each new snapshot shares
/// every untouched shard with the one before (docs/serving.md, "Validation and hot reload"), so the CPU of a change does
/// not grow with the number of sites.

/// A dictionary in ``ShardedMap/shardCount`` shards by hash.
struct ShardedMap<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    static var shardCount: Int { 256 }

    private final class Shard: Sendable {
        let entries: [Key: Value]
        init(_ entries: [Key: Value]) { self.entries = entries }
    }

    private var shards: [Shard?] = Array(repeating: nil, count: ShardedMap.shardCount)
    private(set) var count = 0

    init() {}

    private static func shard(of key: Key) -> Int {
        var hasher = Hasher()
        hasher.combine(key)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(shardCount))
    }

    subscript(key: Key) -> Value? {
        get { shards[ShardedMap.shard(of: key)]?.entries[key] }
        set {
            let i = ShardedMap.shard(of: key)
            var entries = shards[i]?.entries ?? [:]
            let old = newValue == nil ? entries.removeValue(forKey: key) : entries.updateValue(newValue!, forKey: key)
            count += (old == nil ? 0 : -1) + (newValue == nil ? 0 : 1)
            shards[i] = entries.isEmpty ? nil : Shard(entries)
        }
    }

    /// Builds the shards in one pass (a start-up of many entries).
    init(_ pairs: [(Key, Value)]) {
        // Which shard each pair goes to, then each shard's table made at its final size (no
        // doubling as it grows), on every core when there are many (100 000 sites at start).
        var members = Array(repeating: [Int](), count: ShardedMap.shardCount)
        for (i, (key, _)) in pairs.enumerated() { members[ShardedMap.shard(of: key)].append(i) }
        let make: @Sendable (Int) -> Shard? = { [members] shard in
            members[shard].isEmpty ? nil : Shard(ShardedMap.table(pairs, members[shard]))
        }
        shards = pairs.count >= 4096 ? SnapshotBuilder.map(ShardedMap.shardCount, make) : (0..<ShardedMap.shardCount).map(make)
        count = shards.reduce(0) { $0 + ($1?.entries.count ?? 0) }
    }

    /// The pairs at `indexes` as one table; a later pair of the same key wins, as assignment would.
    private static func table(_ pairs: [(Key, Value)], _ indexes: [Int]) -> [Key: Value] {
        var table = [Key: Value](minimumCapacity: indexes.count)
        for i in indexes { table[pairs[i].0] = pairs[i].1 }
        return table
    }

    var values: [Value] { shards.flatMap { $0.map { Array($0.entries.values) } ?? [] } }
    var keys: [Key] { shards.flatMap { $0.map { Array($0.entries.keys) } ?? [] } }
}

/// A sorted array in chunks of at most ``chunkLimit``: replacing, inserting or removing one
/// element copies its chunk and the chunk references, not the whole array.
public struct ChunkedList<Element: Sendable>: RandomAccessCollection, Sendable {
    static var chunkLimit: Int { 512 }

    private final class Chunk: Sendable {
        let elements: [Element]
        init(_ elements: [Element]) { self.elements = elements }
    }

    private var chunks: [Chunk] = []
    /// The index of each chunk's first element.
    private var starts: [Int] = []
    public private(set) var count = 0

    init() {}

    init(_ elements: [Element]) {
        var i = 0
        while i < elements.count {
            let end = Swift.min(elements.count, i + ChunkedList.chunkLimit / 2)
            chunks.append(Chunk(Array(elements[i..<end])))
            i = end
        }
        reindex()
    }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    public subscript(position: Int) -> Element {
        let (c, offset) = locate(position)
        return chunks[c].elements[offset]
    }

    /// The chunk of an index and the offset in it.
    private func locate(_ position: Int) -> (Int, Int) {
        precondition(position >= 0 && position < count, "index out of range")
        var low = 0, high = starts.count - 1
        while low < high {
            let mid = (low + high + 1) / 2
            if starts[mid] <= position { low = mid } else { high = mid - 1 }
        }
        return (low, position - starts[low])
    }

    private mutating func reindex() {
        starts.removeAll(keepingCapacity: true)
        var n = 0
        for chunk in chunks {
            starts.append(n)
            n += chunk.elements.count
        }
        count = n
    }

    mutating func replace(at position: Int, with element: Element) {
        let (c, offset) = locate(position)
        var elements = chunks[c].elements
        elements[offset] = element
        chunks[c] = Chunk(elements)
    }

    mutating func insert(_ element: Element, at position: Int) {
        precondition(position >= 0 && position <= count, "index out of range")
        if chunks.isEmpty {
            chunks = [Chunk([element])]
            reindex()
            return
        }
        let (c, offset) = position == count ? (chunks.count - 1, chunks[chunks.count - 1].elements.count) : locate(position)
        var elements = chunks[c].elements
        elements.insert(element, at: offset)
        if elements.count > ChunkedList.chunkLimit {
            let half = elements.count / 2
            chunks[c] = Chunk(Array(elements[..<half]))
            chunks.insert(Chunk(Array(elements[half...])), at: c + 1)
        } else {
            chunks[c] = Chunk(elements)
        }
        reindex()
    }

    mutating func remove(at position: Int) {
        let (c, offset) = locate(position)
        var elements = chunks[c].elements
        elements.remove(at: offset)
        if elements.isEmpty { chunks.remove(at: c) } else { chunks[c] = Chunk(elements) }
        reindex()
    }
}
