import AASAHTTP

/// The HTTP/2 side of a connection (RFC 9113; docs/serving.md, "HTTP/2"): the connection's and
/// its streams' transitions. Bytes read go through the ``FrameReader`` into typed ``Frame``s;
/// request header blocks are decoded (``HeaderDecoder``, HPACK) into their streams
/// (``RequestFieldReader``); each complete request is answered through the ``RequestDispatch``,
/// and the ``ResponseScheduler`` frames the responses into the connection's ``Output`` as the
/// windows and the output's high-water mark allow. A response's header block is encoded once,
/// when its head is prepared (``ResponseHead/http2Block``). The session also holds the limits a
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
    /// Streams whose request is not complete yet, with the time it must be (HEADERS without
    /// END_STREAM or END_HEADERS; a usual GET never enters), oldest first.
    private var unfinished: [(stream: HTTP2Stream, by: Int64)] = []

    /// What the client may still send on the connection before a WINDOW_UPDATE (§6.9).
    private var receiveWindow = HTTP2Session.defaultWindow
    /// The client's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send window.
    private var peerInitialWindow = HTTP2Session.defaultWindow
    /// The client acknowledged our SETTINGS: a stream beyond the limit is then a protocol error.
    private var settingsAcknowledged = false
    /// The server's SETTINGS is written (the first frame out).
    private var sentPreface = false
    /// ACKs (SETTINGS, PING) written since the client last read everything.
    private var unreadAcks = 0

    private var resets: FloodBudget
    private var controlFrames: FloodBudget
    private var windowUpdates: FloodBudget
    private var emptyFrames: FloodBudget

    /// Why the session gave up on the connection: the GOAWAY code sent.
    private var failure: ConnectionError?
    /// GOAWAY written with an error or on timeout: nothing more is read or written.
    private(set) var isTerminated = false
    private var isDraining = false
    /// When the final GOAWAY is due, while draining.
    private var finalGoAwayAt: Int64?
    /// The last stream id of the final GOAWAY, once sent: newer streams are ignored.
    private var goAwayLastStream: Int32?
    /// The highest of those: frames the client sent on them before it saw the GOAWAY are
    /// ignored as well, not taken for frames on idle streams.
    private var highestIgnored: Int32 = 0
    private var peerSentGoAway = false
    private var peerHasClosed = false

    /// When the last stream closed (or the session began): the idle timeout counts from here.
    private var idleSince: Int64
    /// The last input, or output written: with streams open, the stall timeout counts from here.
    private var lastProgress: Int64

    static let defaultWindow = 65_535
    /// ACKs a client may leave unread before the connection is closed (as libnghttp2 does).
    static let maxUnreadAcks = 1_000
    /// How long after the shutdown notice the final GOAWAY follows: time for requests the
    /// client sent before it saw the notice to arrive (RFC 9113 §6.8 asks for at least one
    /// round trip).
    static let shutdownNoticeGrace: Int64 = 1_000

    package init(configuration: HTTP2Configuration = HTTP2Configuration(), clock: LoopClock, dispatch: RequestDispatch) {
        self.configuration = configuration
        self.clock = clock
        self.dispatch = dispatch
        self.blocks = HeaderBlockReader(configuration: configuration)
        self.scheduler = ResponseScheduler(configuration: configuration)
        self.resets = FloodBudget(configuration.resetLimit, now: clock.now)
        self.controlFrames = FloodBudget(configuration.controlFrameLimit, now: clock.now)
        self.windowUpdates = FloodBudget(configuration.windowUpdateLimit, now: clock.now)
        self.emptyFrames = FloodBudget(configuration.emptyFrameLimit, now: clock.now)
        self.idleSince = clock.now
        self.lastProgress = clock.now
        self.streams = StreamTable(maxOpen: configuration.maxConcurrentStreams)
    }

    // MARK: - ProtocolSession

    package func receive(_ bytes: UnsafeRawBufferPointer, output: inout Output) {
        guard !isTerminated, bytes.count > 0 else { return }
        lastProgress = clock.now
        if output.isEmpty { unreadAcks = 0 }
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
        lastProgress = clock.now
        if output.isEmpty { unreadAcks = 0 }
        writePreface(&output)
        produce(&output)
    }

    package func peerClosed(output: inout Output) {
        // What the client asked for is answered already; send what flow control lets out.
        peerHasClosed = true
        resume(output: &output)
    }

    package func deadlineReached(output: inout Output) {
        if let finalGoAwayAt, clock.now >= finalGoAwayAt {
            sendFinalGoAway(&output)
            return
        }
        resetOverdueStreams(&output)
        guard !isTerminated, let deadline = connectionDeadline, clock.now >= deadline else { return }
        terminate(.noError, &output)
    }

    /// Resets the streams whose request did not complete in time, or whose response waited on
    /// a zero window too long (RST_STREAM CANCEL); each is one reset of the server's budget.
    private func resetOverdueStreams(_ output: inout Output) {
        while !isTerminated, let stream = takeUnfinished(overdueAt: clock.now) { reset(stream, .cancel, &output) }
        while !isTerminated, let stream = scheduler.takeOverdue(now: clock.now) { reset(stream, .cancel, &output) }
        if !isTerminated { produce(&output) }
    }

    /// The oldest request not complete by `now`, taken off the list (entries of streams that
    /// completed or closed are dropped first).
    private func takeUnfinished(overdueAt now: Int64) -> HTTP2Stream? {
        if !unfinished.isEmpty { unfinished.removeAll { $0.stream.state != .open } }
        guard let first = unfinished.first, first.by <= now else { return nil }
        unfinished.removeFirst()
        return first.stream
    }

    package func drain(output: inout Output) {
        guard !isTerminated, !isDraining else { return }
        isDraining = true
        // RFC 9113 §6.8, graceful shutdown in two steps: a GOAWAY with the largest stream id
        // first, so a request already on its way (a new connection's first) is still served;
        // then, a moment later, the real last stream id.
        writePreface(&output)
        output.appendGoAway(lastStream: Int32.max, .noError)
        finalGoAwayAt = clock.now + HTTP2Session.shutdownNoticeGrace
        produce(&output)
    }

    private func sendFinalGoAway(_ output: inout Output) {
        finalGoAwayAt = nil
        guard !isTerminated, goAwayLastStream == nil else { return }
        // Newer streams are ignored from here on; those open are served.
        goAwayLastStream = history.highestOpened
        output.appendGoAway(lastStream: history.highestOpened, .noError)
        produce(&output)
    }

    package var wantsInput: Bool { !isTerminated && !peerHasClosed && !scheduler.isBackedUp && !isFinished }

    package var isClosing: Bool { isTerminated || (!scheduler.isBackedUp && (peerHasClosed || isFinished)) }

    /// A GOAWAY went either way and no stream is left: nothing more can happen.
    private var isFinished: Bool { (goAwayLastStream != nil || peerSentGoAway) && streams.isEmpty }

    package var lingersOnClose: Bool { false }

    package var isIdle: Bool { streams.isEmpty && blocks.current == nil }

    package var deadline: Int64? {
        if isTerminated { return nil }
        if let finalGoAwayAt { return finalGoAwayAt }
        var earliest = connectionDeadline!
        // The oldest entries come first; entries of streams that moved on only make the
        // deadline early, and a call then just drops them.
        if let first = unfinished.first { earliest = min(earliest, first.by) }
        if let blocked = scheduler.nextDeadline { earliest = min(earliest, blocked) }
        return earliest
    }

    /// The idle or stall timeout of the connection as a whole.
    private var connectionDeadline: Int64? {
        isTerminated ? nil : (streams.isEmpty ? idleSince : lastProgress) + configuration.idleTimeout
    }

    /// Streams open now (for tests and metrics).
    var openStreams: Int { streams.count }

    /// The reason the connection was given up, for logs and tests.
    package var failureReason: String? { failure.map { "\($0.reason)" } }

    // MARK: - Frames in

    private func handle(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        if let block = blocks.current, header.type != FrameType.continuation.rawValue || header.stream != block.streamID {
            return fail(.protocolError, "a header block interrupted", &output)
        }
        if !sawClientSettings {
            guard header.type == FrameType.settings.rawValue, !header.has(FrameFlag.ack) else {
                return fail(.protocolError, "the client preface without SETTINGS", &output)
            }
            sawClientSettings = true
        }
        let frame: Frame
        do throws(ConnectionError) { frame = try Frame(header, payload) } catch { return fail(error, &output) }
        switch frame {
        case .data(let id, let content, let flowLength, let endStream): data(id, content, flowLength, endStream, &output)
        case .headers(let id, let fragment, let endStream, let endHeaders): headers(id, fragment, endStream, endHeaders, &output)
        case .continuation(_, let fragment, let endHeaders):
            if fragment.isEmpty, !emptyFrames.spend(now: clock.now) { return fail(.enhanceYourCalm, "empty CONTINUATION flood", &output) }
            do throws(ConnectionError) { try blockEnded(blocks.continue(fragment, isLast: endHeaders), &output) } catch { fail(error, &output) }
        case .rstStream(let id): rstStream(id, &output)
        case .settings(let settings): apply(settings, &output)
        case .settingsAck:
            settingsAcknowledged = true
            spendControl(&output)
        case .ping(let opaque, let isAck):
            spendControl(&output)
            guard !isTerminated, !isAck, mayAcknowledge(&output) else { return }
            output.appendPingAck(opaque)
        case .windowUpdate(let id, let increment): windowUpdate(id, increment, &output)
        case .goAway:
            spendControl(&output)
            peerSentGoAway = true
        case .priority, .unknown:
            // Priority signals are ignored (RFC 9218 §2.1), extension frames too (§5.5); each
            // still costs a read.
            spendControl(&output)
        }
    }

    /// A stream opened after the final GOAWAY, and so ignored (RFC 9113 §6.8).
    private func isIgnoredAfterGoAway(_ id: Int32) -> Bool {
        guard let last = goAwayLastStream else { return false }
        return id > last && id <= highestIgnored && id & 1 == 1
    }

    /// A frame on a stream that is not open: on one never opened (idle), a connection error.
    private func isIdle(_ id: Int32) -> Bool {
        !isIgnoredAfterGoAway(id) && (id & 1 == 0 || id > history.highestOpened)
    }

    private func spendControl(_ output: inout Output) {
        if !controlFrames.spend(now: clock.now) { fail(.enhanceYourCalm, "control frame flood", &output) }
    }

    private func data(_ id: Int32, _ content: UnsafeRawBufferPointer, _ flowLength: Int, _ endStream: Bool, _ output: inout Output) {
        // Padding carries nothing: a frame of padding alone is empty too.
        if content.isEmpty, !endStream, !emptyFrames.spend(now: clock.now) {
            return fail(.enhanceYourCalm, "empty DATA flood", &output)
        }
        // The whole payload, padding included, counts against the windows (§6.9.1).
        guard flowLength <= receiveWindow else { return fail(.flowControlError, "DATA beyond the connection's window", &output) }
        receiveWindow -= flowLength
        if receiveWindow <= HTTP2Session.defaultWindow / 2 {
            output.appendWindowUpdate(0, increment: HTTP2Session.defaultWindow - receiveWindow)
            receiveWindow = HTTP2Session.defaultWindow
        }
        guard let stream = streams[id] else {
            if isIgnoredAfterGoAway(id) { return }
            if isIdle(id) { return fail(.protocolError, "DATA on an idle stream", &output) }
            if history.verdict(stream: id, isHeaders: false, now: clock.now) == .late { return }
            return fail(.streamClosed, "DATA on a closed stream", &output)
        }
        if stream.state != .open { return fail(.streamClosed, "DATA on a half-closed (remote) stream", &output) }
        guard flowLength <= stream.receiveWindow else { return reset(stream, .flowControlError, &output) }
        stream.receiveWindow -= flowLength
        stream.bodyBytes += content.count
        // The limit counts padding too: a body of padding alone must not go on for ever.
        stream.receivedBytes += flowLength
        if stream.receivedBytes > configuration.maxRequestBody { return reset(stream, .cancel, &output) }
        if let length = stream.contentLength, stream.bodyBytes > length { return reset(stream, .protocolError, &output) }
        if endStream {
            endRequest(stream, &output)
        } else if stream.receiveWindow <= configuration.initialWindowSize / 2 {
            output.appendWindowUpdate(id, increment: configuration.initialWindowSize - stream.receiveWindow)
            stream.receiveWindow = configuration.initialWindowSize
        }
    }

    private func headers(_ id: Int32, _ fragment: UnsafeRawBufferPointer, _ endStream: Bool, _ endHeaders: Bool, _ output: inout Output) {
        if fragment.isEmpty, !emptyFrames.spend(now: clock.now) { return fail(.enhanceYourCalm, "empty HEADERS flood", &output) }
        if fragment.count > configuration.maxHeaderListSize {
            return fail(.enhanceYourCalm, "header block over the limit", &output)
        }
        let target: HeaderBlock.Target
        if let stream = streams[id] {
            // A second block on an open stream: trailers, which must end it (§8.1).
            if stream.state != .open { return fail(.streamClosed, "a frame on a half-closed (remote) stream", &output) }
            target = .trailers(stream)
        } else if let last = goAwayLastStream, id > last {
            // After the final GOAWAY, new streams are ignored (§6.8); their block is still
            // decoded, for the HPACK table, and their other frames are ignored too.
            highestIgnored = max(highestIgnored, id)
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
        let block = HeaderBlock(streamID: id, endStream: endStream, target: target, receivedBytes: fragment.count)
        do throws(ConnectionError) { try blockEnded(blocks.begin(block, fragment, isLast: endHeaders), &output) } catch { fail(error, &output) }
    }

    /// idle → open (§5.1): a new stream in the table; one whose request does not come whole in
    /// this frame must complete within the request timeout.
    private func open(_ id: Int32, complete: Bool) -> HTTP2Stream {
        let stream = HTTP2Stream(id: id, startedMicroseconds: clock.microseconds(), sendWindow: peerInitialWindow,
                                 receiveWindow: configuration.initialWindowSize)
        streams.insert(stream)
        if !complete { unfinished.append((stream, clock.now + configuration.requestTimeout)) }
        return stream
    }

    /// A header block is whole and decoded (`nil`: not yet): the request it completes is
    /// checked as a whole and, with END_STREAM, answered.
    private func blockEnded(_ block: HeaderBlock?, _ output: inout Output) {
        guard let block else { return }
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
            spendServerReset(&output)
        case .ignored:
            break
        }
    }

    private func rstStream(_ id: Int32, _ output: inout Output) {
        if !resets.spend(now: clock.now) { return fail(.enhanceYourCalm, "rapid reset", &output) }
        if let stream = streams[id] {
            close(stream, resetByServer: false)
        } else if isIdle(id) {
            fail(.protocolError, "RST_STREAM on an idle stream", &output)
        }
    }

    private func apply(_ settings: Frame.Settings, _ output: inout Output) {
        spendControl(&output)
        if isTerminated { return }
        if let size = settings.maxFrameSize { scheduler.setPeerMaxFrameSize(size) }
        if let window = settings.initialWindowSize, window != peerInitialWindow {
            // §6.9.2: every open stream's window moves by the difference.
            let delta = window - peerInitialWindow
            peerInitialWindow = window
            var overflow = false
            streams.forEach { stream in
                stream.sendWindow += delta
                if stream.sendWindow > Frame.maxWindow { overflow = true }
                if delta > 0 { scheduler.windowOpened(stream) }
            }
            if overflow { return fail(.flowControlError, "a stream window over 2^31-1", &output) }
        }
        guard mayAcknowledge(&output) else { return }
        output.appendSettingsAck()
    }

    /// A client that asks for ACKs and never reads them would make the output grow: with 1,000
    /// unread, the connection is closed instead of writing another.
    private func mayAcknowledge(_ output: inout Output) -> Bool {
        guard unreadAcks < HTTP2Session.maxUnreadAcks else {
            fail(.enhanceYourCalm, "ACKs not read", &output)
            return false
        }
        unreadAcks += 1
        return true
    }

    private func windowUpdate(_ id: Int32, _ increment: Int, _ output: inout Output) {
        if !windowUpdates.spend(now: clock.now) { return fail(.enhanceYourCalm, "WINDOW_UPDATE flood", &output) }
        if id == 0 {
            guard increment > 0 else { return fail(.protocolError, "WINDOW_UPDATE of 0", &output) }
            do throws(ConnectionError) { try scheduler.openConnectionWindow(by: increment) } catch { fail(error, &output) }
            return
        }
        guard let stream = streams[id] else {
            if isIdle(id) { fail(.protocolError, "WINDOW_UPDATE on an idle stream", &output) }
            return
        }
        guard increment > 0 else { return reset(stream, .protocolError, &output) }
        guard stream.sendWindow + increment <= Frame.maxWindow else { return reset(stream, .flowControlError, &output) }
        stream.sendWindow += increment
        scheduler.windowOpened(stream)
    }

    // MARK: - Stream transitions

    /// open → half-closed (remote), END_STREAM from the client: the request is whole (its
    /// body, if any, matched content-length, §8.1.1); its response joins the send queue.
    private func endRequest(_ stream: HTTP2Stream, _ output: inout Output) {
        stream.state = .halfClosedRemote
        if let length = stream.contentLength, length != stream.bodyBytes { return reset(stream, .protocolError, &output) }
        let response: Response
        switch stream.request() {
        case .success(let request): response = dispatch.respond(to: request, startedMicroseconds: stream.startedMicroseconds)
        case .failure(let error): response = dispatch.refuse(error, startedMicroseconds: stream.startedMicroseconds)
        }
        stream.response = response
        scheduler.enqueue(stream)
    }

    /// → closed by RST_STREAM from the server (a stream error, RFC 9113 §5.4.2); frames of it
    /// the client already sent are ignored for a moment (``StreamHistory``).
    private func reset(_ stream: HTTP2Stream, _ code: HTTP2ErrorCode, _ output: inout Output) {
        output.appendRstStream(stream.id, code)
        close(stream, resetByServer: true)
        spendServerReset(&output)
    }

    /// A stream the server resets spends from the same budget as the client's resets: a client
    /// must not make us reset streams faster than it could reset them itself ("MadeYouReset",
    /// CVE-2025-8671).
    private func spendServerReset(_ output: inout Output) {
        if !resets.spend(now: clock.now) { fail(.enhanceYourCalm, "streams reset too fast", &output) }
    }

    /// → closed: the response was written whole, or a RST_STREAM went either way.
    private func close(_ stream: HTTP2Stream, resetByServer: Bool) {
        stream.state = .closed
        streams.remove(stream.id)
        history.recordClose(stream.id, resetByServerAt: resetByServer ? clock.now : nil)
        if streams.isEmpty { idleSince = clock.now }
    }

    // MARK: - Frames out

    /// The server's connection preface: its SETTINGS (RFC 9113 §3.4), before anything else.
    private func writePreface(_ output: inout Output) {
        guard !sentPreface else { return }
        sentPreface = true
        output.appendSettings([
            (SettingID.maxConcurrentStreams, configuration.maxConcurrentStreams),
            (SettingID.maxHeaderListSize, configuration.maxHeaderListSize),
            (SettingID.initialWindowSize, configuration.initialWindowSize),
            // RFC 9218 §2.1: no priority tree (PRIORITY frames are checked, then ignored).
            (SettingID.noRFC7540Priorities, 1),
        ])
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
        output.appendGoAway(lastStream: min(history.highestOpened, goAwayLastStream ?? Int32.max), code)
        scheduler.stop()
    }
}
