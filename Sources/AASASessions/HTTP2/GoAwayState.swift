/// GOAWAY either way (RFC 9113 §6.8). The server shuts down gracefully in two steps: a notice
/// with the largest stream id first, so a request already on its way (a new connection's first)
/// is still served; then, a moment later, the last stream id it opened. Streams the client opens
/// after that are ignored, and so are their other frames, not taken for frames on idle streams.
struct GoAwayState {
    /// How long after the notice the final GOAWAY follows: time for requests the client sent
    /// before it saw the notice to arrive (§6.8 asks for at least one round trip).
    static let noticeGrace: Int64 = 1_000

    /// The notice is sent.
    private(set) var isDraining = false
    /// When the final GOAWAY is due, while draining.
    private(set) var finalDue: Int64?
    /// The last stream id of the final GOAWAY, once sent: newer streams are ignored.
    private(set) var lastStream: Int32?
    /// The highest stream ignored after it.
    private var highestIgnored: Int32 = 0
    /// The client sent GOAWAY: it opens no more streams.
    var peerSent = false

    /// A GOAWAY went either way: once the streams open are done, nothing more can happen.
    var isFinal: Bool { lastStream != nil || peerSent }

    mutating func noticeSent(now: Int64) {
        isDraining = true
        finalDue = now + GoAwayState.noticeGrace
    }

    /// The final GOAWAY is due: the stream id it carries, or nil when one was sent already.
    mutating func takeFinal(highestOpened: Int32) -> Int32? {
        finalDue = nil
        guard lastStream == nil else { return nil }
        lastStream = highestOpened
        return highestOpened
    }

    /// HEADERS opening stream `id`: true when it comes after the final GOAWAY and is ignored.
    mutating func ignoresNewStream(_ id: Int32) -> Bool {
        guard let last = lastStream, id > last else { return false }
        highestIgnored = max(highestIgnored, id)
        return true
    }

    /// A frame on stream `id`, which was opened after the final GOAWAY and ignored.
    func isIgnored(_ id: Int32) -> Bool {
        guard let last = lastStream else { return false }
        return id > last && id <= highestIgnored && id & 1 == 1
    }
}
