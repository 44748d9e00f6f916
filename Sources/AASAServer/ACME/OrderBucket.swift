import AASAClient

/// How many new orders may start (docs/acme.md): a bucket of `capacity`
/// orders that starts full and refills at `capacity` per `period`, as Let's Encrypt limits new
/// orders per account (300 per 3 hours). A few sites are ordered at once; 100 000 are paced.
/// Pure: the caller hands in the time (monotonic milliseconds).
struct OrderBucket: Equatable {
    static let defaultCapacity = ACMEConfiguration.defaultOrderRate
    static let defaultPeriod: Int64 = 3 * 3_600_000

    let capacity: Int
    let period: Int64
    /// Whole orders times `period`, so refilling never rounds: `capacity * period` is full.
    private var scaled: Int64
    private var last: Int64

    init(capacity: Int = OrderBucket.defaultCapacity, period: Int64 = OrderBucket.defaultPeriod, now: Int64) {
        self.capacity = max(1, capacity)
        self.period = max(1, period)
        scaled = Int64(self.capacity) * self.period
        last = now
    }

    private mutating func refill(_ now: Int64) {
        guard now > last else { return }
        let gained = (now - last).multipliedReportingOverflow(by: Int64(capacity))
        let full = Int64(capacity) * period
        scaled = gained.overflow ? full : min(full, scaled + gained.partialValue)
        last = now
    }

    /// Takes one order's token when there is one.
    mutating func take(now: Int64) -> Bool {
        refill(now)
        guard scaled >= period else { return false }
        scaled -= period
        return true
    }

    /// Whole orders available now.
    mutating func available(now: Int64) -> Int {
        refill(now)
        return Int(scaled / period)
    }

    /// When the next order may start: `now` when one may start at once.
    mutating func nextOrder(now: Int64) -> Int64 {
        refill(now)
        if scaled >= period { return now }
        // (period - scaled) more scaled units, at `capacity` a millisecond.
        let missing = period - scaled
        return now + (missing + Int64(capacity) - 1) / Int64(capacity)
    }
}
