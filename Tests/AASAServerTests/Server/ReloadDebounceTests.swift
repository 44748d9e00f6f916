import Testing
@testable import AASAServer

@Suite struct ReloadDebounceTests {
    @Test func nothingIsDueBeforeAChange() {
        var debounce = ReloadDebounce()
        #expect(debounce.due == nil)
        let taken = debounce.takeDue(now: 1_000_000)
        #expect(!taken)
    }

    @Test func aSingleChangeIsReloadedAfterTheQuietTime() {
        var debounce = ReloadDebounce(quiet: 100, longest: 300)
        debounce.changed(at: 1_000)
        #expect(debounce.due == 1_100)
        let early = debounce.takeDue(now: 1_099)
        #expect(!early)
        let onTime = debounce.takeDue(now: 1_100)
        #expect(onTime)
        #expect(debounce.due == nil, "the burst is over once its reload is taken")
    }

    @Test func aBurstIsOneReloadAfterItsLastChange() {
        var debounce = ReloadDebounce(quiet: 100, longest: 300)
        var reloads = 0
        // A change every 40 ms for 160 ms, then quiet.
        for now in stride(from: Int64(0), through: 1_000, by: 10) {
            if now <= 160 && now % 40 == 0 { debounce.changed(at: now) }
            if debounce.takeDue(now: now) {
                reloads += 1
                #expect(now == 260, "100 ms after the last change, at 160 ms")
            }
        }
        #expect(reloads == 1)
    }

    @Test func changesThatNeverStopAreReloadedAtTheLongestDelay() {
        var debounce = ReloadDebounce(quiet: 100, longest: 300)
        var reloads: [Int64] = []
        // A change every 50 ms for a second: never 100 ms of quiet.
        for now in stride(from: Int64(0), through: 1_000, by: 10) {
            if now % 50 == 0 { debounce.changed(at: now) }
            if debounce.takeDue(now: now) { reloads.append(now) }
        }
        #expect(reloads == [300, 650, 1_000], "each burst at most 300 ms after its first change")
    }

    @Test func aResetDropsWhatWasWaiting() {
        var debounce = ReloadDebounce()
        debounce.changed(at: 0)
        debounce.reset()
        #expect(debounce.due == nil)
        let taken = debounce.takeDue(now: 10_000)
        #expect(!taken)
        debounce.changed(at: 10_000)
        #expect(debounce.due == 10_100, "the next change starts a burst of its own")
    }
}
