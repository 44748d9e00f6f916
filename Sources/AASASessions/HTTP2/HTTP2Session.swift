import AASAHTTP

/// The HTTP/2 side of a connection (RFC 9113; docs/serving.md, "HTTP/2"): the connection's and
/// its streams' transitions. Bytes read go through the ``FrameReader`` into typed ``Frame``s;
/// request header blocks are decoded (``HeaderDecoder``, HPACK) into their streams
/// (``RequestFieldReader``); each complete request is answered through the ``RequestDispatch``,
/// and the ``ResponseScheduler`` frames the responses into the connection's ``Output`` as the
/// windows and the output's high-water mark allow. A response's header block is encoded once,
/// when its head is prepared (``ResponseHead/http2Block``), and sent as indexes after a
/// connection's first response with it (``EncoderTable``). The session also holds the limits a
/// server needs against hostile clients: header block size and CONTINUATION count, request body
/// size, rapid reset and frame floods (token buckets), request, idle and stall timeouts.
///
/// Create it when ALPN picked `h2`, or when a cleartext connection opened with the client
/// preface; then call `receive` with every byte read, the preface included, or `resume` to
/// write the server's SETTINGS before the client speaks.
final package class HTTP2Session: ProtocolSession {
    package let configuration: HTTP2Configuration
    private let clock: LoopClock
    /// The connection, which owns this session and so outlives it (`unowned(unsafe)`: no atomic
    /// reference counting per stream).
    private unowned(unsafe) let dispatch: RequestDispatch
    private var reader = FrameReader()
    private var blocks: HeaderBlockReader
    private var scheduler: ResponseScheduler

    /// The client's first frame, which must be SETTINGS, has come.
    private var sawClientSettings = false

    /// Open and half-closed streams by id.
    private var streams: StreamTable
    /// Client streams that are closed, for late frames (RFC 9113 §5.1).
    private var history = StreamHistory()
    private var timers: ConnectionTimers

    private var receiveWindows: ReceiveWindows
    private var floods: FloodGuard
    /// The client acknowledged our SETTINGS: a stream beyond the limit is then a protocol error.
    private var settingsAcknowledged = false
    /// The server's SETTINGS is written (the first frame out).
    private var sentPreface = false
    /// The request being answered, filled in place from its stream (``HTTP2Stream/moveRequest(into:)``).
    private var request = HTTPRequest(method: .other(""), target: "", path: "", host: nil, version: .http2, keepAlive: true)

    /// Why the session gave up on the connection: the GOAWAY code sent.
    private var failure: ConnectionError?
    /// GOAWAY written with an error or on timeout: nothing more is read or written.
    private(set) var isTerminated = false
    private var goAway = GoAwayState()
    private var peerHasClosed = false

    static let defaultWindow = 65_535
    /// How long after the shutdown notice the final GOAWAY follows.
    static let shutdownNoticeGrace = GoAwayState.noticeGrace

    package init(configuration: HTTP2Configuration = HTTP2Configuration(), clock: LoopClock, dispatch: RequestDispatch) {
        self.configuration = configuration
        self.clock = clock
        self.dispatch = dispatch
        self.blocks = HeaderBlockReader(configuration: configuration)
        self.scheduler = ResponseScheduler(configuration: configuration)
        self.floods = FloodGuard(configuration, now: clock.now)
        self.receiveWindows = ReceiveWindows(configuration: configuration)
        self.timers = ConnectionTimers(configuration, now: clock.now)
        self.streams = StreamTable(maxOpen: configuration.maxConcurrentStreams)
    }

    // MARK: - ProtocolSession

    package func receive(_ bytes: UnsafeRawBufferPointer, output: inout Output) {
        guard !isTerminated, bytes.count > 0 else { return }
        timers.progressed(now: clock.now)
        if output.isEmpty { floods.peerReadEverything() }
        writePreface(&output)
        do throws(ConnectionError) {
            let goesOn = try reader.read(bytes) { header, payload in
                handle(header, payload, &output)
                return !isTerminated
            }
            if goesOn { produce(&output) }
        } catch {
            fail(error, &output)
        }
    }

    package func resume(output: inout Output) {
        guard !isTerminated else { return }
        timers.progressed(now: clock.now)
        if output.isEmpty { floods.peerReadEverything() }
        writePreface(&output)
        produce(&output)
    }

    package func peerClosed(output: inout Output) {
        // What the client asked for is answered already; send what flow control lets out.
        peerHasClosed = true
        resume(output: &output)
    }

    package func deadlineReached(output: inout Output) {
        if let due = goAway.finalDue, clock.now >= due { return sendFinalGoAway(&output) }
        resetOverdueStreams(&output)
        guard !isTerminated, clock.now >= timers.connectionDeadline(hasStreams: !streams.isEmpty) else { return }
        terminate(.noError, &output)
    }

    /// Resets the streams whose request did not complete in time, or whose response waited on
    /// a zero window too long (RST_STREAM CANCEL); each is one reset of the server's budget.
    private func resetOverdueStreams(_ output: inout Output) {
        while !isTerminated, let stream = timers.takeOverdueRequest(now: clock.now) { reset(stream, .cancel, &output) }
        while !isTerminated, let stream = scheduler.takeOverdue(now: clock.now) { reset(stream, .cancel, &output) }
        if !isTerminated { produce(&output) }
    }

    package func drain(output: inout Output) {
        guard !isTerminated, !goAway.isDraining else { return }
        writePreface(&output)
        output.appendGoAway(lastStream: Int32.max, .noError)
        goAway.noticeSent(now: clock.now)
        produce(&output)
    }

    /// Nothing to do: after the GOAWAY notice the connection closes by itself once the final
    /// GOAWAY is out and its streams are done (``isFinished``).
    package func closeIdle() {}

    private func sendFinalGoAway(_ output: inout Output) {
        // Newer streams are ignored from here on; those open are served.
        guard !isTerminated, let last = goAway.takeFinal(highestOpened: history.highestOpened) else { return }
        output.appendGoAway(lastStream: last, .noError)
        produce(&output)
    }

    package func wantsInput(_ output: Output) -> Bool {
        !isTerminated && !peerHasClosed && !scheduler.isBackedUp && !isFinished && output.pending < configuration.outputHighWaterMark
    }

    package var isClosing: Bool { isTerminated || (!scheduler.isBackedUp && (peerHasClosed || isFinished)) }

    /// A GOAWAY went either way and no stream is left: nothing more can happen.
    private var isFinished: Bool { goAway.isFinal && streams.isEmpty }

    package var lingersOnClose: Bool { false }

    package var isIdle: Bool { streams.isEmpty && blocks.currentStreamID == nil }

    package var deadline: Int64? {
        if isTerminated { return nil }
        if let due = goAway.finalDue { return due }
        var earliest = timers.connectionDeadline(hasStreams: !streams.isEmpty)
        if let request = timers.nextRequestDeadline { earliest = min(earliest, request) }
        if let blocked = scheduler.nextDeadline { earliest = min(earliest, blocked) }
        return earliest
    }

    /// Streams open now (for tests and metrics).
    var openStreams: Int { streams.count }

    /// The reason the connection was given up, for logs and tests.
    package var failureReason: String? { failure.map { "\($0.reason)" } }

    // MARK: - Frames in

    private func handle(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        if let blockStream = blocks.currentStreamID, header.type != FrameType.continuation.rawValue || header.stream != blockStream {
            return fail(.protocolError, "a header block interrupted", &output)
        }
        if !sawClientSettings {
            guard header.type == FrameType.settings.rawValue, !header.has(FrameFlag.ack) else {
                return fail(.protocolError, "the client preface without SETTINGS", &output)
            }
            sawClientSettings = true
        }
        guard let frame = attempt(&output, { () throws(ConnectionError) in try Frame(header, payload) }) else { return }
        switch frame {
        case .data(let id, let content, let flowLength, let endStream): data(id, content, flowLength, endStream, &output)
        case .headers(let id, let fragment, let endStream, let endHeaders): headers(id, fragment, endStream, endHeaders, &output)
        case .continuation(_, let fragment, let endHeaders):
            if fragment.isEmpty, !spend(.emptyContinuation, &output) { return }
            if let block = attempt(&output, { () throws(ConnectionError) in try blocks.continue(fragment, isLast: endHeaders) }) ?? nil {
                blockEnded(block, &output)
            }
        case .rstStream(let id): rstStream(id, &output)
        case .settings(let settings): apply(settings, &output)
        case .settingsAck:
            settingsAcknowledged = true
            spend(.control, &output)
        case .ping(let opaque, let isAck):
            spend(.control, &output)
            guard !isTerminated, !isAck, spend(.ack, &output) else { return }
            output.appendPingAck(opaque)
        case .windowUpdate(let id, let increment): windowUpdate(id, increment, &output)
        case .goAway:
            spend(.control, &output)
            goAway.peerSent = true
        case .priority, .unknown:
            // Priority signals are ignored (RFC 9218 §2.1), extension frames too (§5.5); each
            // still costs a read.
            spend(.control, &output)
        }
    }

    /// A frame on a stream that is not open: on one never opened (idle), a connection error.
    private func isIdle(_ id: Int32) -> Bool {
        !goAway.isIgnored(id) && (id & 1 == 0 || id > history.highestOpened)
    }

    /// Runs a step that may fail the connection: nil when it did (GOAWAY with its error).
    @discardableResult
    private func attempt<R>(_ output: inout Output, _ step: () throws(ConnectionError) -> R) -> R? {
        do throws(ConnectionError) {
            return try step()
        } catch {
            fail(error, &output)
            return nil
        }
    }

    /// Spends from a flood budget; false, the connection failed, when it was empty.
    @discardableResult
    private func spend(_ kind: FloodGuard.Spend, _ output: inout Output) -> Bool {
        attempt(&output) { () throws(ConnectionError) in try floods.spend(kind, now: clock.now) } != nil
    }

    private func data(_ id: Int32, _ content: UnsafeRawBufferPointer, _ flowLength: Int, _ endStream: Bool, _ output: inout Output) {
        // Padding carries nothing: a frame of padding alone is empty too.
        if content.isEmpty, !endStream, !spend(.emptyData, &output) { return }
        // The whole payload, padding included, counts against the windows (§6.9.1).
        do throws(ConnectionError) { try receiveWindows.received(flowLength, &output) } catch { return fail(error, &output) }
        guard let stream = streams[id] else {
            if goAway.isIgnored(id) { return }
            if isIdle(id) { return fail(.protocolError, "DATA on an idle stream", &output) }
            if history.verdict(stream: id, isHeaders: false, now: clock.now) == .late { return }
            return fail(.streamClosed, "DATA on a closed stream", &output)
        }
        if stream.state != .open { return fail(.streamClosed, "DATA on a half-closed (remote) stream", &output) }
        guard receiveWindows.received(flowLength, on: stream) else { return reset(stream, .flowControlError, &output) }
        stream.bodyBytes += content.count
        // The limit counts padding too: a body of padding alone must not go on for ever.
        stream.receivedBytes += flowLength
        if stream.receivedBytes > configuration.maxRequestBody { return reset(stream, .cancel, &output) }
        if let length = stream.contentLength, stream.bodyBytes > length { return reset(stream, .protocolError, &output) }
        if endStream { endRequest(stream, &output) } else { receiveWindows.reopen(stream, &output) }
    }

    private func headers(_ id: Int32, _ fragment: UnsafeRawBufferPointer, _ endStream: Bool, _ endHeaders: Bool, _ output: inout Output) {
        if fragment.isEmpty, !spend(.emptyHeaders, &output) { return }
        if fragment.count > configuration.maxHeaderListSize {
            return fail(.enhanceYourCalm, "header block over the limit", &output)
        }
        let target: HeaderBlock.Target
        if let stream = streams[id] {
            // A second block on an open stream: trailers, which must end it (§8.1).
            if stream.state != .open { return fail(.streamClosed, "a frame on a half-closed (remote) stream", &output) }
            target = .trailers(stream)
        } else if goAway.ignoresNewStream(id) {
            // Their block is still decoded, for the HPACK table.
            target = .ignored
        } else {
            switch history.verdict(stream: id, isHeaders: true, now: clock.now) {
            case .new:
                if streams.count < configuration.maxConcurrentStreams {
                    target = .request(open(id, complete: endStream && endHeaders))
                } else if settingsAcknowledged {
                    // §5.1.2: the client knows the limit.
                    return fail(.protocolError, "more concurrent streams than allowed", &output)
                } else {
                    target = .refused(id)
                }
            case .late: target = .ignored
            case .closed: return fail(.streamClosed, "a frame on a closed stream", &output)
            case .reusedIdentifier: return fail(.protocolError, "a stream id lower than one already used", &output)
            }
        }
        var block = HeaderBlock(streamID: id, endStream: endStream, target: target, receivedBytes: fragment.count)
        if attempt(&output, { () throws(ConnectionError) in try blocks.begin(&block, fragment, isLast: endHeaders) }) == true {
            blockEnded(block, &output)
        }
    }

    /// idle → open (§5.1): a new stream in the table; one whose request does not come whole in
    /// this frame must complete within the request timeout.
    private func open(_ id: Int32, complete: Bool) -> HTTP2Stream {
        let stream = streams.open(id, startedMicroseconds: clock.microseconds(), sendWindow: scheduler.initialStreamWindow,
                                  receiveWindow: configuration.initialWindowSize)
        if !complete { timers.requestStarted(stream, now: clock.now) }
        return stream
    }

    /// A header block is whole and decoded: the request it completes is checked as a whole
    /// and, with END_STREAM, answered.
    private func blockEnded(_ block: borrowing HeaderBlock, _ output: inout Output) {
        switch block.target {
        case .request(let stream):
            if block.malformed != nil || block.check.finish() != nil { return reset(stream, .protocolError, &output) }
            // §8.3.1: a Host naming another entity than :authority makes the request malformed.
            if let authority = stream.authority, let host = stream.hostField, authority.host != host.host {
                return reset(stream, .protocolError, &output)
            }
            if let length = stream.contentLength, length > configuration.maxRequestBody { return reset(stream, .cancel, &output) }
            if block.endStream { endRequest(stream, &output) }
        case .trailers(let stream):
            if block.malformed != nil || !block.endStream { return reset(stream, .protocolError, &output) }
            endRequest(stream, &output)
        case .refused(let id):
            output.appendRstStream(id, .refusedStream)
            history.recordClose(id, resetByServerAt: clock.now)
            spend(.serverReset, &output)
        case .ignored:
            break
        }
    }

    private func rstStream(_ id: Int32, _ output: inout Output) {
        guard spend(.clientReset, &output) else { return }
        if let stream = streams[id] {
            close(stream, resetByServer: false)
        } else if isIdle(id) {
            fail(.protocolError, "RST_STREAM on an idle stream", &output)
        }
    }

    private func apply(_ settings: Frame.Settings, _ output: inout Output) {
        guard spend(.control, &output) else { return }
        do throws(ConnectionError) { try scheduler.apply(settings, to: streams) } catch { return fail(error, &output) }
        guard spend(.ack, &output) else { return }
        output.appendSettingsAck()
    }

    private func windowUpdate(_ id: Int32, _ increment: Int, _ output: inout Output) {
        guard spend(.windowUpdate, &output) else { return }
        if id == 0 {
            do throws(ConnectionError) { try scheduler.openConnectionWindow(by: increment) } catch { fail(error, &output) }
        } else if let stream = streams[id] {
            if let code = scheduler.openWindow(of: stream, by: increment) { reset(stream, code, &output) }
        } else if isIdle(id) {
            fail(.protocolError, "WINDOW_UPDATE on an idle stream", &output)
        }
    }

    // MARK: - Stream transitions

    /// open → half-closed (remote), END_STREAM from the client: the request is whole (its
    /// body, if any, matched content-length, §8.1.1); its response joins the send queue.
    private func endRequest(_ stream: HTTP2Stream, _ output: inout Output) {
        stream.state = .halfClosedRemote
        if let length = stream.contentLength, length != stream.bodyBytes { return reset(stream, .protocolError, &output) }
        if stream.moveRequest(into: &request) {
            stream.response = dispatch.respond(toRequestIn: &request, startedMicroseconds: stream.startedMicroseconds)
        } else {
            stream.response = dispatch.refuse(stream.refusal, startedMicroseconds: stream.startedMicroseconds)
        }
        scheduler.enqueue(stream)
    }

    /// → closed by RST_STREAM from the server (a stream error, RFC 9113 §5.4.2); frames of it
    /// the client already sent are ignored for a moment (``StreamHistory``).
    private func reset(_ stream: HTTP2Stream, _ code: HTTP2ErrorCode, _ output: inout Output) {
        output.appendRstStream(stream.id, code)
        close(stream, resetByServer: true)
        spend(.serverReset, &output)
    }

    /// → closed: the response was written whole, or a RST_STREAM went either way.
    private func close(_ stream: HTTP2Stream, resetByServer: Bool) {
        stream.state = .closed
        streams.remove(stream.id)
        history.recordClose(stream.id, resetByServerAt: resetByServer ? clock.now : nil)
        if streams.isEmpty { timers.becameIdle(now: clock.now) }
    }

    // MARK: - Frames out

    /// The server's connection preface: its SETTINGS (RFC 9113 §3.4), before anything else.
    private func writePreface(_ output: inout Output) {
        guard !sentPreface else { return }
        sentPreface = true
        output.appendSettings(configuration.announced)
    }

    private func produce(_ output: inout Output) {
        scheduler.produce(&output, date: clock.date, now: clock.now) { stream in close(stream, resetByServer: false) }
    }

    /// A connection error (RFC 9113 §5.4.1): GOAWAY with its code and the last stream
    /// processed, after whatever is already written, then close.
    private func fail(_ code: HTTP2ErrorCode, _ reason: StaticString, _ output: inout Output) {
        fail(ConnectionError(code, reason), &output)
    }

    private func fail(_ error: ConnectionError, _ output: inout Output) {
        if failure == nil { failure = error }
        terminate(error.code, &output)
    }

    private func terminate(_ code: HTTP2ErrorCode, _ output: inout Output) {
        guard !isTerminated else { return }
        isTerminated = true
        writePreface(&output)
        output.appendGoAway(lastStream: min(history.highestOpened, goAway.lastStream ?? Int32.max), code)
        scheduler.stop()
    }
}
