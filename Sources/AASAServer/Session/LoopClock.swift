import AASAHTTP

/// The time as a loop's connections see it during one turn: monotonic milliseconds for
/// deadlines and the `Date` header's bytes, read once per turn. Tests set it by hand.
final class LoopClock {
    /// Monotonic milliseconds.
    var now: Int64
    /// Set by tests: what ``microseconds()`` answers instead of the real clock, so nothing a
    /// session does reads the machine's time behind the test's back.
    var fixedMicroseconds: Int64?

    /// Monotonic microseconds, read when asked: when a request began and ended, for the access
    /// log's duration.
    func microseconds() -> Int64 { fixedMicroseconds ?? monotonicMicroseconds() }
    /// The HTTP-date of the current second, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    private(set) var date: [UInt8] = []
    private var dateSecond = -1

    init(now: Int64 = 0, wallSecond: Int = 0) {
        self.now = now
        setWallClock(second: wallSecond)
    }

    func setWallClock(second: Int) {
        guard second != dateSecond else { return }
        dateSecond = second
        date = Array(HTTPDate.format(second).utf8)
    }
}
