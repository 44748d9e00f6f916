import TestRandom
import Testing
@testable import AASASessions

/// The open-stream table against a dictionary, through inserts and removals of ids that share
/// home slots (ids 512 apart in a table of 256) as well as consecutive ones.
@Suite struct StreamTableTests {
    @Test func lookupsAgreeWithADictionaryThroughInsertsAndRemovals() {
        var table = StreamTable(maxOpen: 100)
        var reference: [Int32: HTTP2Stream] = [:]
        var random = SplitMix(seed: 3)
        for round in 0..<20_000 {
            // Odd ids, half of them colliding with another's home slot.
            let id = Int32(1 + 2 * Int(random.next() % 40) + (random.next() % 2 == 0 ? 0 : 512 * Int(random.next() % 3)))
            if reference[id] == nil, reference.count < 100, random.next() % 3 != 0 {
                let stream = HTTP2Stream(id: id, startedMicroseconds: 0, sendWindow: 0, receiveWindow: 0)
                table.insert(stream)
                reference[id] = stream
            } else if reference[id] != nil {
                table.remove(id)
                reference[id] = nil
            }
            #expect(table.count == reference.count, "round \(round)")
            for probe in reference.keys.prefix(8) + [id, id + 2, id + 512] {
                #expect(table[probe] === reference[probe], "round \(round), id \(probe)")
            }
            if table.count != reference.count { return }
        }
        var ids: Set<Int32> = []
        table.forEach { ids.insert($0.id) }
        #expect(ids == Set(reference.keys))
    }

    @Test func aRemovedStreamThatSomethingStillHoldsIsNotOpenedAgain() {
        var table = StreamTable(maxOpen: 10)
        let held = table.open(1, startedMicroseconds: 0, sendWindow: 0, receiveWindow: 0)
        held.state = .closed
        table.remove(1)
        let next = table.open(3, startedMicroseconds: 0, sendWindow: 0, receiveWindow: 0)
        #expect(next !== held)
        #expect(held.id == 1 && held.state == .closed)
        #expect(table[3] === next && table[1] == nil)
    }
}
