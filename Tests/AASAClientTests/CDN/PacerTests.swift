import Testing
@testable import AASAClient

@Suite struct PacerTests {
    @Test func startsAskedForTogetherAreSpacedByTheRate() {
        let pacer = Pacer(rate: 2)
        let spacing = pacer.spacingMicroseconds
        #expect(spacing == 520_000)
        // Ten asked for at the same moment: one now, the others one spacing after another.
        let slots = (0..<10).map { _ in pacer.take(now: 5_000_000) }
        #expect(slots == (0..<10).map { 5_000_000 + Int64($0) * spacing })
    }

    @Test func aStallSavesNoSlotsUp() {
        let pacer = Pacer(rate: 2)
        let spacing = pacer.spacingMicroseconds
        #expect(pacer.take(now: 0) == 0)
        // A minute with nothing asked, then a rush: still one per spacing from now, no burst.
        let slots = (0..<4).map { _ in pacer.take(now: 60_000_000) }
        #expect(slots == (0..<4).map { 60_000_000 + Int64($0) * spacing })
        // Asked for later than the next free slot: now.
        #expect(pacer.take(now: 70_000_000) == 70_000_000)
    }

    @Test func noOneSecondWindowHoldsMoreThanTheRate() {
        for rate in [1, 2, 3, 7, 20] {
            let pacer = Pacer(rate: rate)
            let slots = (0..<100).map { i in pacer.take(now: Int64(i % 7) * 100_000) }
            for (i, s) in slots.enumerated() {
                #expect(slots[i...].prefix { $0 - s < 1_000_000 }.count <= rate)
            }
        }
    }
}
