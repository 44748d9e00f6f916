import AASAHTTP

/// The time as a loop's connections see it during one turn: monotonic milliseconds for
/// deadlines and the `Date` header's bytes, read once per turn. The sessions never read the
/// machine's clock themselves: the loop sets this one, tests set it by hand.
final package class LoopClock {
    /// Monotonic milliseconds.
    package var now: Int64
    /// What ``microseconds()`` answers without a source (tests, the fuzzer).
    var fixedMicroseconds: Int64 = 0
    /// The loop's monotonic clock in microseconds.
    private let source: (() -> Int64)?

    /// Monotonic microseconds, read when asked: when a request began and ended, for the access
    /// log's duration.
    package func microseconds() -> Int64 { source?() ?? fixedMicroseconds }
    /// The HTTP-date of the current second, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    private(set) package var date: [UInt8] = []
    /// The date, its CRLF and the blank line: the end of an HTTP/1.1 head with nothing after `Date`.
    private(set) package var dateEndingHead: [UInt8] = []
    private var dateSecond = -1

    package init(now: Int64 = 0, wallSecond: Int = 0, microseconds source: (() -> Int64)? = nil) {
        self.now = now
        self.source = source
        setWallClock(second: wallSecond)
    }

    package func setWallClock(second: Int) {
        guard second != dateSecond else { return }
        dateSecond = second
        date = Array(HTTPDate.format(second).utf8)
        dateEndingHead = date + [0x0D, 0x0A, 0x0D, 0x0A]
    }
}
