/// The server's half of the streams (RFC 9113 §5, §6.9): responses queue in the order their
/// requests completed and are framed, HEADERS then DATA as the windows allow, while the
/// connection's ``Output`` holds less than the high-water mark; the rest waits here, unframed
/// (DATA is copied from the prepared body only when it is framed). A stream whose window is used
/// up leaves the queue until a WINDOW_UPDATE (its own, or the connection's) or SETTINGS opens
/// it, and is reset if that takes too long.
struct ResponseScheduler {
    /// Streams with a response to write, in order (`head` is the next).
    private var queue: [HTTP2Stream] = []
    private var head = 0
    /// What the server may still send on the connection.
    private var connectionWindow = HTTP2Session.defaultWindow
    /// The client's SETTINGS_MAX_FRAME_SIZE.
    private var peerMaxFrameSize = FrameHeader.maxLength
    /// The client's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send window.
    private(set) var initialStreamWindow = HTTP2Session.defaultWindow
    /// What the client's HPACK decoder holds of the fields sent: heads and dates go out as
    /// indexes after their first time.
    private var table = EncoderTable()
    /// Streams waiting on a zero window, with the time they are reset, oldest first.
    private var blocked: [(stream: HTTP2Stream, by: Int64)] = []
    /// `Output` held the high-water mark's worth of bytes when frames were last written.
    private(set) var isBackedUp = false

    private let highWaterMark: Int
    private let blockedTimeout: Int64

    init(configuration: HTTP2Configuration) {
        highWaterMark = configuration.outputHighWaterMark
        blockedTimeout = configuration.blockedTimeout
    }

    /// A response is ready, or its window opened again: the stream joins the queue.
    mutating func enqueue(_ stream: HTTP2Stream) {
        stream.blockedUntil = nil
        guard !stream.isQueued else { return }
        stream.isQueued = true
        queue.append(stream)
    }

    /// The stream's window grew: it goes on if it was waiting for that.
    mutating func windowOpened(_ stream: HTTP2Stream) {
        if stream.blockedUntil != nil, stream.sendWindow > 0 { enqueue(stream) }
    }

    /// WINDOW_UPDATE on stream 0: the streams set aside while the connection's window was used
    /// up go on.
    mutating func openConnectionWindow(by increment: Int) throws(ConnectionError) {
        guard increment > 0 else { throw ConnectionError(.protocolError, "WINDOW_UPDATE of 0") }
        guard connectionWindow + increment <= Frame.maxWindow else {
            throw ConnectionError(.flowControlError, "the connection's window over 2^31-1")
        }
        connectionWindow += increment
        for (stream, _) in blocked { windowOpened(stream) }
    }

    /// WINDOW_UPDATE on a stream: nil, or the stream error it is (§6.9, §6.9.1).
    mutating func openWindow(of stream: HTTP2Stream, by increment: Int) -> HTTP2ErrorCode? {
        guard increment > 0 else { return .protocolError }
        guard stream.sendWindow + increment <= Frame.maxWindow else { return .flowControlError }
        stream.sendWindow += increment
        windowOpened(stream)
        return nil
    }

    /// The client's SETTINGS: its frame size, and its initial window, which moves every open
    /// stream's window by the difference (§6.9.2; the last value in the frame holds).
    mutating func apply(_ settings: Frame.Settings, to streams: StreamTable) throws(ConnectionError) {
        if let size = settings.maxFrameSize { peerMaxFrameSize = size }
        if let size = settings.headerTableSize { table.limitAnnounced(size) }
        guard let window = settings.initialWindowSize, window != initialStreamWindow else { return }
        let delta = window - initialStreamWindow
        initialStreamWindow = window
        var overflow = false
        streams.forEach { stream in
            stream.sendWindow += delta
            if stream.sendWindow > Frame.maxWindow { overflow = true }
            if delta > 0 { windowOpened(stream) }
        }
        if overflow { throw ConnectionError(.flowControlError, "a stream window over 2^31-1") }
    }

    /// When the oldest stream waiting on a zero window is due to be reset.
    var nextDeadline: Int64? { blocked.first?.by }

    /// The oldest stream that has waited on a zero window until `now`, taken off the list.
    /// Entries of streams that closed or went on since are dropped first (a stream blocked
    /// again has a newer entry).
    mutating func takeOverdue(now: Int64) -> HTTP2Stream? {
        if !blocked.isEmpty { blocked.removeAll { $0.stream.state == .closed || $0.stream.blockedUntil != $0.by } }
        guard let first = blocked.first, first.by <= now else { return nil }
        blocked.removeFirst()
        return first.stream
    }

    /// Writes the queued responses, in order, until `output` holds the high-water mark: each
    /// stream's HEADERS (with `date`), then its DATA as the windows allow. `finished` is called
    /// for each stream whose response is written whole.
    mutating func produce(_ output: inout Output, date: [UInt8], now: Int64, finished: (HTTP2Stream) -> Void) {
        while output.pending < highWaterMark, head < queue.count {
            let stream = queue[head]
            guard stream.state != .closed, let response = stream.response else {
                stream.isQueued = false
                head += 1
                continue
            }
            let sendsBody = response.sendsBody && !response.body.isEmpty
            if !stream.headersSent {
                writeHeaders(stream.id, response.head, date: date, endStream: !sendsBody, &output)
                stream.headersSent = true
                if !sendsBody {
                    stream.isQueued = false
                    head += 1
                    finished(stream)
                    continue
                }
            }
            guard connectionWindow > 0, stream.sendWindow > 0 else {
                // Waits for a WINDOW_UPDATE; the streams behind it go on, if only with their
                // HEADERS.
                if stream.blockedUntil == nil {
                    let until = now + blockedTimeout
                    stream.blockedUntil = until
                    blocked.append((stream, until))
                }
                stream.isQueued = false
                head += 1
                continue
            }
            let left = response.body.count - stream.bodySent
            let count = min(left, peerMaxFrameSize, connectionWindow, stream.sendWindow)
            let isLast = count == left
            output.appendFrameHeader(length: count, type: .data, flags: isLast ? FrameFlag.endStream : 0, stream: stream.id)
            response.body.withUnsafeBufferPointer { body in
                output.buffer.append(contentsOf: UnsafeBufferPointer(rebasing: body[stream.bodySent..<(stream.bodySent + count)]))
            }
            stream.bodySent += count
            connectionWindow -= count
            stream.sendWindow -= count
            if isLast {
                stream.isQueued = false
                head += 1
                finished(stream)
            }
        }
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 64, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
        isBackedUp = output.pending >= highWaterMark
    }

    /// The connection failed: what is queued is never written, and the output drains.
    mutating func stop() { isBackedUp = false }

    /// HEADERS with the head's block (prepared, or its indexes) and the date; split into
    /// CONTINUATION frames only if the client's frame size could not hold it (a head is far below
    /// the smallest, 16 KiB).
    private mutating func writeHeaders(_ id: Int32, _ head: ResponseHead, date: [UInt8], endStream: Bool, _ output: inout Output) {
        let flags = endStream ? FrameFlag.endStream : 0
        let start = output.buffer.count
        table.write(head, date: date, into: &output.buffer)
        let length = output.buffer.count - start - ResponseHead.frameHeaderLength
        if length <= peerMaxFrameSize {
            output.fillFrameHeader(at: start, length: length, type: .headers, flags: flags | FrameFlag.endHeaders, stream: id)
            return
        }
        let block = Array(output.buffer[(start + ResponseHead.frameHeaderLength)...])
        output.buffer.removeSubrange(start...)
        var at = 0
        while at < block.count {
            let count = min(peerMaxFrameSize, block.count - at)
            let type: FrameType = at == 0 ? .headers : .continuation
            let end = at + count == block.count ? FrameFlag.endHeaders : 0
            output.appendFrameHeader(length: count, type: type, flags: (at == 0 ? flags : 0) | end, stream: id)
            output.buffer.append(contentsOf: block[at..<(at + count)])
            at += count
        }
    }
}
