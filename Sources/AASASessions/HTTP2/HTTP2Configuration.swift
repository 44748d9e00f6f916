import AASAHTTP

/// Limits of the HTTP/2 layer (docs/serving.md, "HTTP/2"), handed to each ``HTTP2Session``. The
/// defaults are the contract; tests and the fuzzer lower them to reach the edges quickly.
package struct HTTP2Configuration: Sendable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS. A stream beyond it is refused (RST_STREAM
    /// REFUSED_STREAM) before the client acknowledged our SETTINGS, a connection error after
    /// (RFC 9113 §5.1.2).
    var maxConcurrentStreams = 100
    /// SETTINGS_MAX_HEADER_LIST_SIZE, and what is enforced: a request's decoded fields (name +
    /// value + 32 each, RFC 9113 §6.5.2), or its header block as received (HEADERS and
    /// CONTINUATION payloads, before decoding), over this size closes the connection with
    /// GOAWAY; the HPACK state cannot be trusted once a block is abandoned half decoded.
    var maxHeaderListSize = 16 * 1024
    /// CONTINUATION frames allowed after one HEADERS frame. Empty CONTINUATION frames grow no
    /// byte count, so a block that never ends (CVE-2024-28182 and kin) is caught by this one.
    var maxContinuationFrames = 8
    /// A request body up to this size is read and discarded; beyond it the stream is reset
    /// (RST_STREAM CANCEL), as HTTP/1.1 answers 413.
    var maxRequestBody = 64 * 1024
    /// SETTINGS_INITIAL_WINDOW_SIZE: how much request body a client may send on a stream
    /// before we read it. Bodies are discarded and capped at 64 KiB, so the RFC's default
    /// (65 535) is all a client needs; the session reopens the window as bytes arrive.
    var initialWindowSize = 65_535
    /// No open stream for this long (or open streams with no input and no output written for
    /// this long): GOAWAY and close. Milliseconds.
    var idleTimeout: Int64 = 60_000
    /// A request whose header block and body are not complete this long after its HEADERS frame
    /// is reset, whatever other frames keep the connection busy (HTTP/1.1's 408 rule: a client
    /// holding a stream open with a PING every few seconds ties it up no longer). Milliseconds.
    var requestTimeout: Int64 = 10_000
    /// A response that waits this long on a zero flow-control window (the stream's or the
    /// connection's) is reset: a client that never opens its window holds it no longer.
    var blockedTimeout: Int64 = 60_000
    /// Responses stop being framed once this many bytes wait in `Output`: a client that never
    /// reads costs at most this much buffer; the rest stays in the send queue, unframed (DATA is
    /// copied from the prepared body only when it is framed).
    /// (Below 256 KiB, the size above which ``Output`` gives its buffer back, so a large download
    /// does not reallocate it.)
    var outputHighWaterMark = 224 * 1024
    /// The paths the server serves often: a request for one of them makes no String.
    var targets = InternedTargets([])

    /// RST_STREAM frames from the client: the rapid-reset attack (CVE-2023-44487) opens and
    /// cancels streams to make the server start work the client never waits for.
    var resetLimit = FloodLimit(burst: 100, perSecond: 10)
    /// SETTINGS and PING frames (each makes us queue an ACK; CVE-2019-9512, CVE-2019-9515),
    /// PRIORITY frames, and frames of unknown types.
    var controlFrameLimit = FloodLimit(burst: 100, perSecond: 20)
    /// WINDOW_UPDATE frames. Legitimate clients send one per half-window of response they
    /// read, so this allows more than the control budget.
    var windowUpdateLimit = FloodLimit(burst: 1_000, perSecond: 200)
    /// Frames that carry nothing and end nothing: DATA with no payload and no END_STREAM,
    /// HEADERS or CONTINUATION with an empty fragment (CVE-2019-9518).
    var emptyFrameLimit = FloodLimit(burst: 20, perSecond: 5)

    package init(targets: InternedTargets = InternedTargets([])) { self.targets = targets }

    /// The SETTINGS the server sends first (RFC 9113 §3.4): what of this a client must know.
    var announced: [(UInt16, Int)] {
        [(SettingID.maxConcurrentStreams, maxConcurrentStreams),
         (SettingID.maxHeaderListSize, maxHeaderListSize),
         (SettingID.initialWindowSize, initialWindowSize),
         // RFC 9218 §2.1: no priority tree (PRIORITY frames are checked, then ignored).
         (SettingID.noRFC7540Priorities, 1)]
    }
}

/// A token bucket's shape: `burst` frames at once, refilled at `perSecond`. Beyond it the
/// connection gets GOAWAY ENHANCE_YOUR_CALM and is closed.
package struct FloodLimit: Sendable, Equatable {
    var burst: Int
    var perSecond: Int
}
