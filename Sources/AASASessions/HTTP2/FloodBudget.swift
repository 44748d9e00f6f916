/// A token bucket over the loop clock's milliseconds: what is left of a ``FloodLimit``.
/// Counted in thousandths of a frame so a refill of a few frames per second is exact at
/// millisecond steps.
package struct FloodBudget {
    package let limit: FloodLimit
    private var millitokens: Int
    private var refilledAt: Int64

    package init(_ limit: FloodLimit, now: Int64) {
        self.limit = limit
        self.millitokens = limit.burst * 1000
        self.refilledAt = now
    }

    /// Spends one frame's token; false when the bucket is empty (the peer is flooding).
    mutating func spend(now: Int64) -> Bool {
        let full = limit.burst * 1000
        if now > refilledAt {
            // Elapsed time is capped at what refills the whole bucket, so the product cannot
            // overflow whatever the clock did.
            let elapsed = Int(min(now - refilledAt, Int64(full / max(limit.perSecond, 1) + 1)))
            millitokens = min(full, millitokens + elapsed * limit.perSecond)
            refilledAt = now
        }
        guard millitokens >= 1000 else { return false }
        millitokens -= 1000
        return true
    }
}
