import Testing
@testable import AASAServer

@Suite struct SharedStructureTests {
    @Test func aChunkedListStaysEqualToAnArrayThroughInsertsReplacementsAndRemovals() {
        var generator = SystemRandomNumberGenerator()
        var reference = Array(0..<3000)
        var list = ChunkedList(reference)
        for step in 0..<4000 {
            let r = Int.random(in: 0..<3, using: &generator)
            if r == 0 || reference.isEmpty {
                let i = Int.random(in: 0...reference.count, using: &generator)
                reference.insert(-step, at: i)
                list.insert(-step, at: i)
            } else if r == 1 {
                let i = Int.random(in: 0..<reference.count, using: &generator)
                reference[i] = step
                list.replace(at: i, with: step)
            } else {
                let i = Int.random(in: 0..<reference.count, using: &generator)
                reference.remove(at: i)
                list.remove(at: i)
            }
        }
        #expect(list.count == reference.count)
        #expect(Array(list) == reference)
    }

    @Test func aShardedMapCountsAndFindsWhatWasSetAndForgetsWhatWasRemoved() {
        var map = ShardedMap((0..<2000).map { ("k\($0)", $0) })
        #expect(map.count == 2000)
        map["k5"] = nil
        map["new"] = 1
        map["k6"] = 60
        #expect(map.count == 2000)
        #expect(map["k5"] == nil && map["new"] == 1 && map["k6"] == 60 && map["k1999"] == 1999)
        let copy = map
        map["k7"] = nil
        #expect(copy["k7"] == 7, "a copy keeps its entries")
        #expect(Set(map.keys).count == 1999)
    }

    /// Past 4 096 pairs the shards are built on every core: the same map, a later pair of a key winning.
    @Test func aShardedMapBuiltFromManyPairsHoldsEachKeyOnceWithItsLastValue() {
        let pairs = (0..<20_000).map { ("site\($0 % 15_000).example", $0) }
        let map = ShardedMap(pairs)
        #expect(map.count == 15_000)
        #expect(map["site0.example"] == 15_000 && map["site14999.example"] == 14_999 && map["site4999.example"] == 19_999)
        #expect(map["site15000.example"] == nil)
        #expect(Set(map.keys).count == 15_000 && map.values.reduce(0, +) == (5_000..<20_000).reduce(0, +))
    }
}
