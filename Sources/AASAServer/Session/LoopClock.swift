import AASAHTTP

/// The time as a loop's connections see it during one turn: monotonic milliseconds for
/// deadlines and the `Date` header's bytes, read once per turn. Tests set it by hand.
final class LoopClock {
    /// Monotonic milliseconds.
    var now: Int64
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
