import Testing
@testable import AASAServer

/// The drain's phases over a fake clock: no sockets, no threads (docs/deployment.md, "Restarts
/// that lose nothing").
@Suite struct DrainTests {
    @Test func aSignalStartsTheDelayDuringWhichNothingElseHappens() {
        var drain = Drain(delay: 5_000, grace: 10_000)
        #expect(drain.phase == .serving)
        #expect(drain.wakeAt(now: 0) == nil)
        drain.signal(now: 1_000)
        #expect(drain.phase == .delaying)
        #expect(drain.wakeAt(now: 1_000) == 6_000)
        // Nothing open, every loop idle: still the delay, so balancers see /readyz 503 first.
        #expect(!advance(&drain, now: 5_999, swept: true, openConnections: 0))
        #expect(drain.phase == .delaying)
        #expect(drain.deadline == nil)
    }

    @Test func theDelayEndsInTheSweepThenTheFinishThenTheClose() {
        var drain = Drain(delay: 5_000, grace: 10_000)
        drain.signal(now: 0)
        #expect(advance(&drain, now: 5_000, swept: false, openConnections: 3))
        #expect(drain.phase == .sweeping)
        #expect(drain.deadline == 15_000)
        #expect(advance(&drain, now: 5_010, swept: true, openConnections: 3))
        #expect(drain.phase == .finishing)
        #expect(!advance(&drain, now: 6_000, swept: true, openConnections: 1))
        #expect(drain.wakeAt(now: 6_000) == 6_010)
        #expect(advance(&drain, now: 6_500, swept: true, openConnections: 0))
        #expect(drain.phase == .closed)
        #expect(drain.wakeAt(now: 6_500) == nil)
    }

    @Test func aSecondSignalSkipsWhatIsLeftOfTheDelay() {
        var drain = Drain(delay: 5_000, grace: 10_000)
        drain.signal(now: 0)
        drain.signal(now: 1_200)
        #expect(drain.phase == .sweeping)
        // The grace counts from the end of the delay, which is now.
        #expect(drain.deadline == 11_200)
    }

    @Test func laterSignalsChangeNothing() {
        var drain = Drain(delay: 0, grace: 10_000)
        drain.signal(now: 0)
        #expect(drain.phase == .sweeping)
        let before = drain
        drain.signal(now: 100)
        #expect(drain == before)
    }

    @Test func withoutADelayTheSignalGoesStraightToTheSweep() {
        var drain = Drain(delay: 0, grace: 2_000)
        drain.signal(now: 50)
        #expect(drain.phase == .sweeping)
        #expect(advance(&drain, now: 50, swept: true, openConnections: 0))
        #expect(drain.phase == .closed)
    }

    @Test func theGraceClosesWhatIsStillOpenWithinDelayPlusGrace() {
        var drain = Drain(delay: 3_000, grace: 1_000)
        drain.signal(now: 0)
        _ = advance(&drain, now: 3_000, swept: true, openConnections: 7)
        #expect(drain.phase == .finishing)
        #expect(drain.wakeAt(now: 3_995) == 4_000)
        #expect(!advance(&drain, now: 3_999, swept: true, openConnections: 7))
        #expect(advance(&drain, now: 4_000, swept: true, openConnections: 7))
        #expect(drain.phase == .closed)
    }

    @Test func aLoopThatDoesNotSweepInTimeDoesNotHoldTheListeners() {
        var drain = Drain(delay: 0, grace: 10_000)
        drain.signal(now: 0)
        #expect(!advance(&drain, now: Drain.sweepLimit - 1, swept: false, openConnections: 1))
        #expect(drain.wakeAt(now: Drain.sweepLimit - 5) == Drain.sweepLimit)
        #expect(advance(&drain, now: Drain.sweepLimit, swept: false, openConnections: 1))
        #expect(drain.phase == .finishing)
    }

    @Test func aGraceOfZeroClosesAtTheEndOfTheDelay() {
        var drain = Drain(delay: 1_000, grace: 0)
        drain.signal(now: 0)
        #expect(advance(&drain, now: 1_000, swept: false, openConnections: 5))
        #expect(drain.phase == .closed)
    }

    @Test func negativeSettingsCountAsZero() {
        var drain = Drain(delay: -5, grace: -1)
        drain.signal(now: 10)
        #expect(drain.phase == .closed)
    }

    /// `advance`, outside `#expect` (which cannot call a mutating method).
    private func advance(_ drain: inout Drain, now: Int64, swept: Bool, openConnections: Int) -> Bool {
        drain.advance(now: now, swept: swept, openConnections: openConnections)
    }
}
