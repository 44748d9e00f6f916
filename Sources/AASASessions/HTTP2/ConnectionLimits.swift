/// The server's timeouts on one HTTP/2 connection (docs/serving.md, "HTTP/2"): idle (no stream
/// open), stall (streams open, nothing read or written), and each request's own: its header
/// block and body complete within the request timeout of its HEADERS, whatever other frames keep
/// the connection busy. (Waits on a zero window are the ``ResponseScheduler``'s.)
struct ConnectionTimers {
    private let idleTimeout: Int64
    private let requestTimeout: Int64
    /// When the last stream closed (or the session began): the idle timeout counts from here.
    private var idleSince: Int64
    /// The last input, or output written: with streams open, the stall timeout counts from here.
    private var lastProgress: Int64
    /// Streams whose request is not complete yet, with the time it must be (HEADERS without
    /// END_STREAM or END_HEADERS; a usual GET never enters), oldest first.
    private var unfinished: [(stream: HTTP2Stream, by: Int64)] = []

    init(_ configuration: HTTP2Configuration, now: Int64) {
        idleTimeout = configuration.idleTimeout
        requestTimeout = configuration.requestTimeout
        idleSince = now
        lastProgress = now
    }

    mutating func progressed(now: Int64) { lastProgress = now }

    /// The last stream closed.
    mutating func becameIdle(now: Int64) { idleSince = now }

    /// A request whose HEADERS did not bring it whole: it must complete in time.
    mutating func requestStarted(_ stream: HTTP2Stream, now: Int64) { unfinished.append((stream, now + requestTimeout)) }

    /// The idle or stall deadline of the connection as a whole.
    func connectionDeadline(hasStreams: Bool) -> Int64 { (hasStreams ? lastProgress : idleSince) + idleTimeout }

    /// The oldest request's deadline. Entries of streams that moved on only make it early, and
    /// ``takeOverdueRequest(now:)`` then drops them.
    var nextRequestDeadline: Int64? { unfinished.first?.by }

    /// The oldest request not complete by `now`, taken off the list (entries of streams that
    /// completed or closed are dropped first).
    mutating func takeOverdueRequest(now: Int64) -> HTTP2Stream? {
        if !unfinished.isEmpty { unfinished.removeAll { $0.stream.state != .open } }
        guard let first = unfinished.first, first.by <= now else { return nil }
        unfinished.removeFirst()
        return first.stream
    }
}

/// What the client may still send (RFC 9113 §6.9): the connection's window, and each stream's
/// (on the stream). Request bodies are read and discarded at once, so a window is opened again
/// with WINDOW_UPDATE as soon as half of it is used.
struct ReceiveWindows {
    private var connection = HTTP2Session.defaultWindow
    /// SETTINGS_INITIAL_WINDOW_SIZE, as the server sent it: each stream's window.
    private let streamWindow: Int

    init(configuration: HTTP2Configuration) { streamWindow = configuration.initialWindowSize }

    /// DATA of `length` bytes, padding included, arrived on the connection.
    mutating func received(_ length: Int, _ output: inout Output) throws(ConnectionError) {
        guard length <= connection else { throw ConnectionError(.flowControlError, "DATA beyond the connection's window") }
        connection -= length
        if connection <= HTTP2Session.defaultWindow / 2 {
            output.appendWindowUpdate(0, increment: HTTP2Session.defaultWindow - connection)
            connection = HTTP2Session.defaultWindow
        }
    }

    /// ... and on `stream`: false when beyond its window (a stream error, FLOW_CONTROL_ERROR).
    func received(_ length: Int, on stream: HTTP2Stream) -> Bool {
        guard length <= stream.receiveWindow else { return false }
        stream.receiveWindow -= length
        return true
    }

    /// Opens the stream's window again once half of it is used.
    func reopen(_ stream: HTTP2Stream, _ output: inout Output) {
        guard stream.receiveWindow <= streamWindow / 2 else { return }
        output.appendWindowUpdate(stream.id, increment: streamWindow - stream.receiveWindow)
        stream.receiveWindow = streamWindow
    }
}
