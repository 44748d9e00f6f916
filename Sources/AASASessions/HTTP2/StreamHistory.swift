/// What the session remembers of client streams once they close, to answer a late frame as
/// RFC 9113 §5.1 asks: the highest stream id opened, and the last streams to close, with when
/// the server reset one.
package struct StreamHistory {
    /// How long after the server's own RST_STREAM frames the client had already sent on that
    /// stream are ignored (RFC 9113 §5.1, "closed": frames in flight); after it, they are
    /// errors like any other.
    static let resetGraceMilliseconds: Int64 = 1_000

    /// The highest client stream id a HEADERS frame opened.
    private(set) var highestOpened: Int32 = 0
    private var closed = [(id: Int32, resetByServerAt: Int64?)](repeating: (0, nil), count: 32)
    private var next = 0
    /// The streams the server reset within the grace, oldest first: kept by time, not among
    /// the last 32 to close, so a burst of other streams closing cannot end a grace early.
    /// Bounded by the reset budget (a few hundred a second at most).
    private var recentResets: [(id: Int32, at: Int64)] = []

    /// What a DATA or HEADERS frame on a client stream that is not open means.
    package enum Verdict: Equatable {
        /// A new stream (HEADERS with a higher id), or a frame on an idle one.
        case new
        /// In flight when the server reset the stream: ignored.
        case late
        /// On a stream the client can no longer send on: STREAM_CLOSED.
        case closed
        /// HEADERS with a lower id than one already used, never opened: PROTOCOL_ERROR (§5.1.1).
        case reusedIdentifier
    }

    /// The frame of `type` on client stream `id`, which is not open; a new stream's HEADERS
    /// raises the highest id.
    mutating package func verdict(stream id: Int32, isHeaders: Bool, now: Int64) -> Verdict {
        if id > highestOpened {
            if isHeaders { highestOpened = id }
            return .new
        }
        if let reset = recentResets.last(where: { $0.id == id }), now - reset.at < StreamHistory.resetGraceMilliseconds { return .late }
        guard let entry = closed.first(where: { $0.id == id }) else {
            // Not among the last to close: a skipped id (implicitly closed, §5.1.1), or one
            // closed long ago.
            return isHeaders ? .reusedIdentifier : .closed
        }
        if let at = entry.resetByServerAt, now - at < StreamHistory.resetGraceMilliseconds { return .late }
        return .closed
    }

    mutating func recordClose(_ id: Int32, resetByServerAt: Int64?) {
        closed[next] = (id, resetByServerAt)
        next = (next + 1) % closed.count
        if let at = resetByServerAt {
            if let first = recentResets.first, at - first.at >= StreamHistory.resetGraceMilliseconds {
                recentResets.removeAll { at - $0.at >= StreamHistory.resetGraceMilliseconds }
            }
            recentResets.append((id, at))
        }
    }
}
