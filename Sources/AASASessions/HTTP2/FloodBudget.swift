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

/// A connection's budgets against floods (docs/serving.md, "HTTP/2"): frames that cost the
/// server work and the client next to nothing. A spend that finds its bucket empty is a
/// connection error, GOAWAY ENHANCE_YOUR_CALM.
struct FloodGuard {
    enum Spend {
        /// RST_STREAM from the client: the rapid-reset attack (CVE-2023-44487).
        case clientReset
        /// A stream the server resets spends from the same budget: a client must not make us
        /// reset streams faster than it could reset them itself ("MadeYouReset", CVE-2025-8671).
        case serverReset
        /// SETTINGS, PING, PRIORITY, GOAWAY and extension frames.
        case control
        case windowUpdate
        /// Frames that carry nothing and end nothing (CVE-2019-9518).
        case emptyData, emptyHeaders, emptyContinuation
        /// An ACK to write (SETTINGS, PING): a client that asks for ACKs and never reads them
        /// would make the output grow, so with ``maxUnreadAcks`` unread the connection is
        /// closed instead (as libnghttp2 does).
        case ack
    }

    static let maxUnreadAcks = 1_000

    private var resets: FloodBudget
    private var controlFrames: FloodBudget
    private var windowUpdates: FloodBudget
    private var emptyFrames: FloodBudget
    /// ACKs written since the client last read everything.
    private var unreadAcks = 0

    init(_ configuration: HTTP2Configuration, now: Int64) {
        resets = FloodBudget(configuration.resetLimit, now: now)
        controlFrames = FloodBudget(configuration.controlFrameLimit, now: now)
        windowUpdates = FloodBudget(configuration.windowUpdateLimit, now: now)
        emptyFrames = FloodBudget(configuration.emptyFrameLimit, now: now)
    }

    mutating func spend(_ spend: Spend, now: Int64) throws(ConnectionError) {
        switch spend {
        case .clientReset: if !resets.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "rapid reset") }
        case .serverReset: if !resets.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "streams reset too fast") }
        case .control: if !controlFrames.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "control frame flood") }
        case .windowUpdate: if !windowUpdates.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "WINDOW_UPDATE flood") }
        case .emptyData: if !emptyFrames.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "empty DATA flood") }
        case .emptyHeaders: if !emptyFrames.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "empty HEADERS flood") }
        case .emptyContinuation: if !emptyFrames.spend(now: now) { throw ConnectionError(.enhanceYourCalm, "empty CONTINUATION flood") }
        case .ack:
            guard unreadAcks < FloodGuard.maxUnreadAcks else { throw ConnectionError(.enhanceYourCalm, "ACKs not read") }
            unreadAcks += 1
        }
    }

    /// The client read all the server wrote.
    mutating func peerReadEverything() { unreadAcks = 0 }
}
