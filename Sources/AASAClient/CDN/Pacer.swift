import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// Paces one kind of request made from many threads (`aasa monitor`'s requests to Apple's CDN,
/// and to Google's API, each on its own): every start takes the next slot, at least `spacing`
/// after the one before, so no one-second window holds more than the rate
/// (``CDNSchedule/Settings/spacingMicroseconds``). A slot is taken when asked for, never saved
/// up: after a stall (origins that held many checks and let them go at once, a process that
/// was stopped), the first start is now and the next one `spacing` later: never a burst.
package final class Pacer: Sendable {
    package let spacingMicroseconds: Int64
    /// The last slot given.
    private let last = Locked<Int64?>(nil)

    package init(rate: Int) {
        spacingMicroseconds = Pacer.spacingMicroseconds(rate: rate)
    }

    /// 1/rate, and a tenth more (at most 20 ms): two starts exactly 1/rate apart can reach the
    /// peer closer together than that, after connects and handshakes of different lengths.
    package static func spacingMicroseconds(rate: Int) -> Int64 {
        let exact = 1_000_000 / Int64(max(1, rate))
        return max(1, exact + min(20_000, exact / 10))
    }

    /// The slot of a start asked for at `now` (monotonic microseconds): now, or `spacing` after
    /// the last slot given, whichever is later.
    package func take(now: Int64) -> Int64 {
        last.withLock { last in
            let slot = max(now, (last ?? now - spacingMicroseconds) + spacingMicroseconds)
            last = slot
            return slot
        }
    }

    /// Returns at this caller's slot.
    package func wait() {
        let slot = take(now: monotonicMicroseconds())
        while true {
            let left = slot - monotonicMicroseconds()
            if left <= 0 { return }
            usleep(UInt32(min(left, 1_000_000)))
        }
    }
}
