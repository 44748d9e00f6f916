import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP/2 side of a connection (RFC 9113; docs/serving.md, "HTTP/2"): a state machine over
/// the bytes read. It reads frames, decodes request header blocks (``HeaderDecoder``, HPACK),
/// keeps the streams and both directions of flow control, answers each complete request through
/// the ``RequestDispatch``, and writes frames into the connection's ``Output`` — responses only
/// while it holds less than the high-water mark. A response's header block is encoded once, when
/// its head is prepared (``ResponseHead/http2Block``): framing it copies bytes and adds the date.
/// It also holds the limits a server needs against hostile clients: header block size and
/// CONTINUATION count, request body size, rapid reset and frame floods (token buckets), idle and
/// stall timeouts.
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
    private let decoder = HeaderDecoder()

    // MARK: Input

    /// Bytes of the client's connection preface still to check (RFC 9113 §3.4).
    private var prefaceLeft = HTTP2Session.clientMagic.utf8CodeUnitCount
    /// The client's first frame, which must be SETTINGS, has come.
    private var sawClientSettings = false
    /// A frame not yet whole at the end of a read: its header and what has come of its payload.
    private var partial: [UInt8] = []
    /// The header block being received: HEADERS without END_HEADERS, then CONTINUATION frames
    /// (nothing else may come between them, §6.10).
    private var block: HeaderBlock?

    // MARK: Streams

    /// Open streams by id.
    private var streams: StreamTable
    /// Streams with a response to write, in order (`sendHead` is the next).
    private var sendQueue: [HTTP2Stream] = []
    private var sendHead = 0
    /// Client streams that are closed, for late frames (RFC 9113 §5.1).
    private var history = StreamHistory()

    // MARK: Flow control and settings (RFC 9113 §6.5, §6.9)

    /// What the server may still send on the connection.
    private var sendWindow = HTTP2Session.defaultWindow
    /// What the client may still send on the connection before a WINDOW_UPDATE.
    private var receiveWindow = HTTP2Session.defaultWindow
    /// The client's SETTINGS_INITIAL_WINDOW_SIZE and SETTINGS_MAX_FRAME_SIZE.
    private var peerInitialWindow = HTTP2Session.defaultWindow
    private var peerMaxFrameSize = HTTP2Session.minimumMaxFrameSize
    /// The client acknowledged our SETTINGS: a stream beyond the limit is then a protocol error.
    private var settingsAcknowledged = false
    /// The server's SETTINGS is written (the first frame out).
    private var sentPreface = false
    /// A header block was sent: the first one carried the table size update (``HeaderEncoder``).
    private var sentHeaderBlock = false
    /// ACKs (SETTINGS, PING) written since the client last read everything.
    private var unreadAcks = 0

    // MARK: Limits

    private var resets: FloodBudget
    private var controlFrames: FloodBudget
    private var windowUpdates: FloodBudget
    private var emptyFrames: FloodBudget

    /// Why the session gave up on the connection: the GOAWAY code sent.
    private var failure: (code: HTTP2ErrorCode, reason: StaticString)?

    // MARK: Closing

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
    /// `Output` held the high-water mark's worth of bytes when frames were last written.
    private var isBackedUp = false

    /// Streams whose request is not complete yet, with the time it must be (HEADERS without
    /// END_STREAM or END_HEADERS; a usual GET never enters), oldest first.
    private var unfinished: [(stream: HTTP2Stream, by: Int64)] = []
    /// Streams waiting on a zero window, with the time they are reset, oldest first.
    private var blocked: [(stream: HTTP2Stream, by: Int64)] = []

    /// When the last stream closed (or the session began): the idle timeout counts from here.
    private var idleSince: Int64
    /// The last input, or output written: with streams open, the stall timeout counts from here.
    private var lastProgress: Int64

    /// The last `:authority` (or Host) and User-Agent, as made from their bytes: a client sends
    /// the same ones on every stream, and comparing bytes costs less than normalizing a host and
    /// making Strings again (~1,000 instructions a request, callgrind).
    private var lastAuthority: HTTP2Stream.HostField?
    private var lastUserAgent = RememberedField()

    static let clientMagic: StaticString = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    static let defaultWindow = 65_535
    static let maxWindow = 0x7FFF_FFFF
    static let minimumMaxFrameSize = 16_384
    /// Entries one SETTINGS frame may hold.
    static let maxSettingsEntries = 32
    /// ACKs a client may leave unread before the connection is closed (as libnghttp2 does).
    static let maxUnreadAcks = 1_000

    package init(configuration: HTTP2Configuration = HTTP2Configuration(), clock: LoopClock, dispatch: RequestDispatch) {
        self.configuration = configuration
        self.clock = clock
        self.dispatch = dispatch
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
        var input = bytes
        if prefaceLeft > 0 {
            let n = min(prefaceLeft, input.count)
            let at = HTTP2Session.clientMagic.utf8CodeUnitCount - prefaceLeft
            if memcmp(input.baseAddress!, HTTP2Session.clientMagic.utf8Start + at, n) != 0 {
                return fail(.protocolError, "an invalid connection preface", &output)
            }
            prefaceLeft -= n
            input = UnsafeRawBufferPointer(rebasing: input[n...])
        }
        if !partial.isEmpty {
            guard completePartialFrame(&input, &output) else {
                if !isTerminated { produce(&output) }
                return
            }
        }
        while input.count >= FrameHeader.size {
            let header = FrameHeader(input)
            guard checkLength(header, &output) else { return }
            guard input.count >= FrameHeader.size + header.length else { break }
            let payload = UnsafeRawBufferPointer(rebasing: input[FrameHeader.size..<(FrameHeader.size + header.length)])
            handle(header, payload, &output)
            if isTerminated { return }
            input = UnsafeRawBufferPointer(rebasing: input[(FrameHeader.size + header.length)...])
        }
        if !input.isEmpty {
            partial.append(contentsOf: input)
            if partial.count >= FrameHeader.size {
                let header = partial.withUnsafeBytes { FrameHeader($0) }
                guard checkLength(header, &output) else { return }
            }
        }
        produce(&output)
    }

    /// Adds the front of `input` to the frame carried from the last read and handles it once
    /// whole; false while it is not.
    private func completePartialFrame(_ input: inout UnsafeRawBufferPointer, _ output: inout Output) -> Bool {
        if partial.count < FrameHeader.size {
            let n = min(FrameHeader.size - partial.count, input.count)
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<n]))
            input = UnsafeRawBufferPointer(rebasing: input[n...])
            if partial.count < FrameHeader.size { return false }
        }
        let header = partial.withUnsafeBytes { FrameHeader($0) }
        guard checkLength(header, &output) else { return false }
        let n = min(FrameHeader.size + header.length - partial.count, input.count)
        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<n]))
        input = UnsafeRawBufferPointer(rebasing: input[n...])
        if partial.count < FrameHeader.size + header.length { return false }
        var frame: [UInt8] = []
        swap(&frame, &partial)
        frame.withUnsafeBytes { bytes in
            let payload = UnsafeRawBufferPointer(rebasing: bytes[FrameHeader.size..<bytes.count])
            handle(header, payload, &output)
        }
        // A small buffer is kept for the next split frame; a large one is given back.
        frame.removeAll(keepingCapacity: frame.capacity <= 1024)
        partial = frame
        return !isTerminated
    }

    /// A frame longer than our SETTINGS_MAX_FRAME_SIZE (the default, 16,384) is a
    /// FRAME_SIZE_ERROR (RFC 9113 §4.2), found as soon as its header is read.
    private func checkLength(_ header: FrameHeader, _ output: inout Output) -> Bool {
        guard header.length > HTTP2Session.minimumMaxFrameSize else { return true }
        fail(.frameSizeError, "a frame over SETTINGS_MAX_FRAME_SIZE", &output)
        return false
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
        pruneStreamDeadlines()
        while !isTerminated, let first = unfinished.first, first.by <= clock.now {
            unfinished.removeFirst()
            reset(first.stream, .cancel, &output)
            pruneStreamDeadlines()
        }
        while !isTerminated, let first = blocked.first, first.by <= clock.now {
            blocked.removeFirst()
            reset(first.stream, .cancel, &output)
            pruneStreamDeadlines()
        }
        if !isTerminated { produce(&output) }
    }

    /// Drops the entries of streams that completed, closed, or got their window back.
    private func pruneStreamDeadlines() {
        if !unfinished.isEmpty { unfinished.removeAll { $0.stream.isClosed || $0.stream.isEndedByClient } }
        if !blocked.isEmpty { blocked.removeAll { $0.stream.isClosed || !$0.stream.isBlocked } }
    }

    /// How long after the shutdown notice the final GOAWAY follows: time for requests the
    /// client sent before it saw the notice to arrive (RFC 9113 §6.8 asks for at least one
    /// round trip).
    static let shutdownNoticeGrace: Int64 = 1_000

    package func drain(output: inout Output) {
        guard !isTerminated, !isDraining else { return }
        isDraining = true
        // RFC 9113 §6.8, graceful shutdown in two steps: a GOAWAY with the largest stream id
        // first, so a request already on its way (a new connection's first) is still served;
        // then, a moment later, the real last stream id.
        writePreface(&output)
        writeGoAway(lastStream: Int32.max, .noError, &output)
        finalGoAwayAt = clock.now + HTTP2Session.shutdownNoticeGrace
        produce(&output)
    }

    private func sendFinalGoAway(_ output: inout Output) {
        finalGoAwayAt = nil
        guard !isTerminated, goAwayLastStream == nil else { return }
        // Newer streams are ignored from here on; those open are served.
        goAwayLastStream = history.highestOpened
        writeGoAway(lastStream: history.highestOpened, .noError, &output)
        produce(&output)
    }

    package var wantsInput: Bool { !isTerminated && !peerHasClosed && !isBackedUp && !isFinished }

    package var isClosing: Bool { isTerminated || (!isBackedUp && (peerHasClosed || isFinished)) }

    /// A GOAWAY went either way and no stream is left: nothing more can happen.
    private var isFinished: Bool { (goAwayLastStream != nil || peerSentGoAway) && streams.isEmpty }

    package var lingersOnClose: Bool { false }

    package var isIdle: Bool { streams.isEmpty && block == nil }

    package var deadline: Int64? {
        if isTerminated { return nil }
        if let finalGoAwayAt { return finalGoAwayAt }
        var earliest = connectionDeadline!
        // The oldest entries come first; entries of streams that moved on only make the
        // deadline early, and a call then just prunes them.
        if let first = unfinished.first { earliest = min(earliest, first.by) }
        if let first = blocked.first { earliest = min(earliest, first.by) }
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
        if let block, header.type != FrameType.continuation || header.stream != block.streamID {
            return fail(.protocolError, "a header block interrupted", &output)
        }
        if !sawClientSettings {
            guard header.type == FrameType.settings, !header.has(FrameFlag.ack) else {
                return fail(.protocolError, "the client preface without SETTINGS", &output)
            }
            sawClientSettings = true
        }
        switch header.type {
        case FrameType.data: data(header, payload, &output)
        case FrameType.headers: headers(header, payload, &output)
        case FrameType.continuation: continuation(header, payload, &output)
        case FrameType.rstStream: rstStream(header, payload, &output)
        case FrameType.settings: settings(header, payload, &output)
        case FrameType.ping: ping(header, payload, &output)
        case FrameType.windowUpdate: windowUpdate(header, payload, &output)
        case FrameType.priority: priority(header, payload, &output)
        case FrameType.goAway:
            guard header.stream == 0 else { return fail(.protocolError, "GOAWAY on a stream", &output) }
            guard header.length >= 8 else { return fail(.frameSizeError, "a short GOAWAY", &output) }
            spendControl(&output)
            peerSentGoAway = true
        case FrameType.pushPromise:
            fail(.protocolError, "PUSH_PROMISE from a client", &output)
        default:
            // Extension frames are ignored (§5.5), but each still costs a read.
            spendControl(&output)
        }
    }

    /// A stream opened after the final GOAWAY, and so ignored (RFC 9113 §6.8).
    private func isIgnoredAfterGoAway(_ id: Int32) -> Bool {
        guard let last = goAwayLastStream else { return false }
        return id > last && id <= highestIgnored && id & 1 == 1
    }

    private func spendControl(_ output: inout Output) {
        if !controlFrames.spend(now: clock.now) { fail(.enhanceYourCalm, "control frame flood", &output) }
    }

    /// The payload without its padding (§6.1, §6.2): nil when the pad length is not inside it.
    private static func unpadded(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard header.has(FrameFlag.padded) else { return payload }
        guard let padding = payload.first, Int(padding) < payload.count else { return nil }
        return UnsafeRawBufferPointer(rebasing: payload[1..<(payload.count - Int(padding))])
    }

    private func data(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        let id = header.stream
        guard id != 0 else { return fail(.protocolError, "DATA on stream 0", &output) }
        guard let content = HTTP2Session.unpadded(header, payload) else { return fail(.protocolError, "DATA with bad padding", &output) }
        let endStream = header.has(FrameFlag.endStream)
        // Padding carries nothing: a frame of padding alone is empty too.
        if content.isEmpty, !endStream, !emptyFrames.spend(now: clock.now) {
            return fail(.enhanceYourCalm, "empty DATA flood", &output)
        }
        // The whole payload, padding included, counts against the windows (§6.9.1).
        guard header.length <= receiveWindow else { return fail(.flowControlError, "DATA beyond the connection's window", &output) }
        receiveWindow -= header.length
        if receiveWindow <= HTTP2Session.defaultWindow / 2 {
            output.appendFrame(type: FrameType.windowUpdate, stream: 0, value: UInt32(HTTP2Session.defaultWindow - receiveWindow))
            receiveWindow = HTTP2Session.defaultWindow
        }
        guard let stream = streams[id] else {
            if isIgnoredAfterGoAway(id) { return }
            if id & 1 == 0 || id > history.highestOpened { return fail(.protocolError, "DATA on an idle stream", &output) }
            if history.verdict(stream: id, isHeaders: false, now: clock.now) == .late { return }
            return fail(.streamClosed, "DATA on a closed stream", &output)
        }
        if stream.isEndedByClient { return fail(.streamClosed, "DATA on a half-closed (remote) stream", &output) }
        guard header.length <= stream.receiveWindow else { return reset(stream, .flowControlError, &output) }
        stream.receiveWindow -= header.length
        stream.bodyBytes += content.count
        // The limit counts padding too: a body of padding alone must not go on for ever.
        stream.receivedBytes += header.length
        if stream.receivedBytes > configuration.maxRequestBody { return reset(stream, .cancel, &output) }
        if let length = stream.contentLength, stream.bodyBytes > length { return reset(stream, .protocolError, &output) }
        if endStream {
            endRequest(stream, &output)
        } else if stream.receiveWindow <= configuration.initialWindowSize / 2 {
            output.appendFrame(type: FrameType.windowUpdate, stream: id, value: UInt32(configuration.initialWindowSize - stream.receiveWindow))
            stream.receiveWindow = configuration.initialWindowSize
        }
    }

    private func headers(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        let id = header.stream
        guard id != 0, id & 1 == 1 else { return fail(.protocolError, "HEADERS on stream 0 or a server stream", &output) }
        guard var fragment = HTTP2Session.unpadded(header, payload) else {
            return fail(.protocolError, "HEADERS with bad padding", &output)
        }
        if header.has(FrameFlag.priority) {
            guard fragment.count >= 5 else {
                // Padding that leaves no room for the priority fields is padding that exceeds
                // what remains (§6.2): PROTOCOL_ERROR; a frame simply too short, FRAME_SIZE_ERROR.
                if header.has(FrameFlag.padded) { return fail(.protocolError, "HEADERS padding over its priority fields", &output) }
                return fail(.frameSizeError, "HEADERS too short for its priority", &output)
            }
            // RFC 7540 §5.3.1: a stream cannot depend on itself.
            if Int32(bitPattern: FrameHeader.uint32(fragment, at: 0) & 0x7FFF_FFFF) == id {
                return fail(.protocolError, "a stream depends on itself", &output)
            }
            fragment = UnsafeRawBufferPointer(rebasing: fragment[5...])
        }
        if fragment.isEmpty, !emptyFrames.spend(now: clock.now) { return fail(.enhanceYourCalm, "empty HEADERS flood", &output) }
        if fragment.count > configuration.maxHeaderListSize {
            return fail(.enhanceYourCalm, "header block over the limit", &output)
        }
        let target: HeaderBlock.Target
        if let stream = streams[id] {
            // A second block on an open stream: trailers, which must end it (§8.1).
            if stream.isEndedByClient { return fail(.streamClosed, "a frame on a half-closed (remote) stream", &output) }
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
                    let stream = HTTP2Stream(id: id, startedMicroseconds: clock.microseconds(), sendWindow: peerInitialWindow,
                                             receiveWindow: configuration.initialWindowSize)
                    streams.insert(stream)
                    target = .request(stream)
                    if !header.has(FrameFlag.endStream) || !header.has(FrameFlag.endHeaders) {
                        unfinished.append((stream, clock.now + configuration.requestTimeout))
                    }
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
        block = HeaderBlock(streamID: id, endStream: header.has(FrameFlag.endStream), target: target, receivedBytes: fragment.count)
        decode(fragment, isLast: header.has(FrameFlag.endHeaders), &output)
    }

    private func continuation(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        guard block != nil else { return fail(.protocolError, "CONTINUATION without HEADERS", &output) }
        block!.receivedBytes += header.length
        block!.continuations += 1
        if header.length == 0, !emptyFrames.spend(now: clock.now) { return fail(.enhanceYourCalm, "empty CONTINUATION flood", &output) }
        if block!.continuations > configuration.maxContinuationFrames {
            return fail(.enhanceYourCalm, "too many CONTINUATION frames", &output)
        }
        if block!.receivedBytes > configuration.maxHeaderListSize {
            return fail(.enhanceYourCalm, "header block over the limit", &output)
        }
        decode(payload, isLast: header.has(FrameFlag.endHeaders), &output)
    }

    /// Takes a fragment of the current block; at its end, decodes the block and acts on the
    /// request. A block in several frames is gathered first (bounded by the header list limit).
    private func decode(_ fragment: UnsafeRawBufferPointer, isLast: Bool, _ output: inout Output) {
        guard isLast else {
            block!.gathered.append(contentsOf: fragment)
            return
        }
        let outcome: HeaderDecoder.Outcome
        if block!.gathered.isEmpty {
            outcome = decodeBlock(fragment, &output)
        } else {
            var whole = block!.gathered
            block!.gathered = []
            whole.append(contentsOf: fragment)
            outcome = whole.withUnsafeBytes { decodeBlock($0, &output) }
        }
        switch outcome {
        case .done:
            let ended = block!
            block = nil
            endBlock(ended, &output)
        case .invalid:
            fail(.compressionError, "an invalid header block", &output)
        case .stopped:
            break
        }
    }

    /// Hands each field of a whole block to its stream; `.stopped` once the connection failed.
    private func decodeBlock(_ bytes: UnsafeRawBufferPointer, _ output: inout Output) -> HeaderDecoder.Outcome {
        // Read once: a copy of the target per field retains and releases its stream.
        let target = block!.target
        return decoder.decode(bytes) { name, value in
            block!.decodedBytes += name.count + value.count + 32
            if block!.decodedBytes > configuration.maxHeaderListSize {
                fail(.enhanceYourCalm, "header list over the limit", &output)
                return false
            }
            guard block!.malformed == nil else { return true }
            switch target {
            case .request(let stream):
                let malformed = field(name, value, stream)
                block!.malformed = malformed
            case .trailers:
                block!.malformed = RequestFieldCheck.checkTrailer(name, value)
            case .refused, .ignored: break
            }
            return true
        }
    }

    private func endBlock(_ block: HeaderBlock, _ output: inout Output) {
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
            output.appendFrame(type: FrameType.rstStream, stream: id, value: HTTP2ErrorCode.refusedStream.rawValue)
            history.recordClose(id, resetByServerAt: clock.now)
            spendServerReset(&output)
        case .ignored:
            break
        }
    }

    private func rstStream(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        guard header.length == 4 else { return fail(.frameSizeError, "RST_STREAM not 4 bytes long", &output) }
        let id = header.stream
        guard id != 0 else { return fail(.protocolError, "RST_STREAM on stream 0", &output) }
        if !resets.spend(now: clock.now) { return fail(.enhanceYourCalm, "rapid reset", &output) }
        if let stream = streams[id] {
            close(stream, resetByServer: false)
        } else if !isIgnoredAfterGoAway(id), id & 1 == 0 || id > history.highestOpened {
            fail(.protocolError, "RST_STREAM on an idle stream", &output)
        }
    }

    private func settings(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        guard header.stream == 0 else { return fail(.protocolError, "SETTINGS on a stream", &output) }
        if header.has(FrameFlag.ack) {
            guard header.length == 0 else { return fail(.frameSizeError, "a SETTINGS ACK with a payload", &output) }
            settingsAcknowledged = true
            return spendControl(&output)
        }
        guard header.length % 6 == 0 else { return fail(.frameSizeError, "SETTINGS not a multiple of 6 bytes", &output) }
        // Seven parameters exist; more entries than a few times that is only work for us
        // (libnghttp2 stops at 32 as well, CVE-2020-11080).
        guard header.length <= 6 * HTTP2Session.maxSettingsEntries else {
            return fail(.enhanceYourCalm, "too many SETTINGS entries", &output)
        }
        spendControl(&output)
        if isTerminated { return }
        let initialWindow = peerInitialWindow
        for at in stride(from: 0, to: payload.count, by: 6) {
            let id = UInt16(payload[at]) << 8 | UInt16(payload[at + 1])
            let value = FrameHeader.uint32(payload, at: at + 2)
            switch id {
            case SettingID.enablePush:
                if value > 1 { return fail(.protocolError, "SETTINGS_ENABLE_PUSH not 0 or 1", &output) }
            case SettingID.initialWindowSize:
                guard value <= HTTP2Session.maxWindow else {
                    return fail(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1", &output)
                }
                peerInitialWindow = Int(value)
            case SettingID.enableConnectProtocol, SettingID.noRFC7540Priorities:
                // RFC 8441 §3, RFC 9218 §2.1.
                if value > 1 { return fail(.protocolError, "a SETTINGS flag not 0 or 1", &output) }
            case SettingID.maxFrameSize:
                guard value >= HTTP2Session.minimumMaxFrameSize, value <= 0xFF_FFFF else {
                    return fail(.protocolError, "SETTINGS_MAX_FRAME_SIZE out of range", &output)
                }
                peerMaxFrameSize = Int(value)
            default:
                // SETTINGS_HEADER_TABLE_SIZE asks nothing of an encoder that keeps no table;
                // the others concern what the server does not do (push, its own streams).
                break
            }
        }
        // §6.9.2: every open stream's window moves by the difference, once for the frame (the
        // last value of the parameter is the one that holds).
        let delta = peerInitialWindow - initialWindow
        if delta != 0 {
            var overflow = false
            streams.forEach { stream in
                stream.sendWindow += delta
                if stream.sendWindow > HTTP2Session.maxWindow { overflow = true }
                if delta > 0, stream.isBlocked, stream.sendWindow > 0 { enqueue(stream) }
            }
            if overflow { return fail(.flowControlError, "a stream window over 2^31-1", &output) }
        }
        guard mayAcknowledge(&output) else { return }
        output.appendFrameHeader(length: 0, type: FrameType.settings, flags: FrameFlag.ack, stream: 0)
    }

    private func ping(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        guard header.stream == 0 else { return fail(.protocolError, "PING on a stream", &output) }
        guard header.length == 8 else { return fail(.frameSizeError, "PING not 8 bytes long", &output) }
        spendControl(&output)
        guard !isTerminated, !header.has(FrameFlag.ack), mayAcknowledge(&output) else { return }
        output.appendFrameHeader(length: 8, type: FrameType.ping, flags: FrameFlag.ack, stream: 0)
        output.buffer.append(contentsOf: payload)
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

    private func windowUpdate(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        guard header.length == 4 else { return fail(.frameSizeError, "WINDOW_UPDATE not 4 bytes long", &output) }
        if !windowUpdates.spend(now: clock.now) { return fail(.enhanceYourCalm, "WINDOW_UPDATE flood", &output) }
        let increment = Int(FrameHeader.uint32(payload, at: 0) & 0x7FFF_FFFF)
        let id = header.stream
        if id == 0 {
            guard increment > 0 else { return fail(.protocolError, "WINDOW_UPDATE of 0", &output) }
            guard sendWindow + increment <= HTTP2Session.maxWindow else {
                return fail(.flowControlError, "the connection's window over 2^31-1", &output)
            }
            sendWindow += increment
            // Streams set aside while the connection's window was used up go on.
            streams.forEach { stream in
                if stream.isBlocked, stream.sendWindow > 0 { enqueue(stream) }
            }
            return
        }
        guard let stream = streams[id] else {
            if !isIgnoredAfterGoAway(id), id & 1 == 0 || id > history.highestOpened {
                fail(.protocolError, "WINDOW_UPDATE on an idle stream", &output)
            }
            return
        }
        guard increment > 0 else { return reset(stream, .protocolError, &output) }
        guard stream.sendWindow + increment <= HTTP2Session.maxWindow else { return reset(stream, .flowControlError, &output) }
        stream.sendWindow += increment
        if stream.isBlocked, stream.sendWindow > 0 { enqueue(stream) }
    }

    private func priority(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer, _ output: inout Output) {
        // RFC 9113 §6.3: PRIORITY is still parsed, though its scheme is deprecated.
        guard header.stream != 0 else { return fail(.protocolError, "PRIORITY on stream 0", &output) }
        guard header.length == 5 else { return fail(.frameSizeError, "PRIORITY not 5 bytes long", &output) }
        if Int32(bitPattern: FrameHeader.uint32(payload, at: 0) & 0x7FFF_FFFF) == header.stream {
            return fail(.protocolError, "a stream depends on itself", &output)
        }
        spendControl(&output)
    }

    // MARK: - Request fields

    /// One decoded field of a request: checked (``RequestFieldCheck``), and kept on the stream
    /// when the server acts on it. Returns why the request is malformed, or nil. A value the
    /// session remembers from an earlier stream was checked then.
    private func field(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ stream: HTTP2Stream) -> StaticString? {
        let known = HTTP2Session.field(name)
        switch known {
        case .authority, .host:
            if let last = lastAuthority, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) {
                if let why = block!.check.check(name, value, known: known, valueIsChecked: true) { return why }
                if known == .authority { stream.setAuthority(last) } else { stream.setHostField(last) }
                return nil
            }
        case .userAgent:
            if let agent = lastUserAgent.value(for: value) {
                if let why = block!.check.check(name, value, known: known, valueIsChecked: true) { return why }
                stream.userAgent = agent
                return nil
            }
        default: break
        }
        if let why = block!.check.check(name, value, known: known, valueIsChecked: false) { return why }
        switch known {
        case .method:
            if Self.equals(value, "GET") {
                stream.method = .get
            } else if Self.equals(value, "HEAD") {
                stream.method = .head
            } else {
                stream.method = .other(String(decoding: value, as: UTF8.self))
            }
        case .path: stream.setPath(value, targets: configuration.targets)
        case .authority: stream.setAuthority(hostField(value))
        case .host: stream.setHostField(hostField(value))
        case .ifNoneMatch: stream.ifNoneMatch = String(decoding: value, as: UTF8.self)
        case .ifModifiedSince: stream.ifModifiedSince = String(decoding: value, as: UTF8.self)
        case .userAgent:
            let agent = String(decoding: value, as: UTF8.self)
            lastUserAgent.remember(value, as: agent)
            stream.userAgent = agent
        case .contentLength:
            // Checked to be digits; a longer one is over any limit anyway.
            stream.contentLength = value.count <= 18 ? value.reduce(0) { $0 * 10 + Int($1 &- 0x30) } : Int.max
        case nil: break
        }
        return nil
    }

    /// A new field for a `:authority` or Host value, remembered for the next stream.
    private func hostField(_ value: UnsafeBufferPointer<UInt8>) -> HTTP2Stream.HostField {
        let field = HTTP2Stream.HostField(value)
        lastAuthority = field
        return field
    }

    // MARK: - Streams

    /// END_STREAM from the client: the request is whole (its body, if any, matched
    /// content-length, §8.1.1); its response joins the send queue.
    private func endRequest(_ stream: HTTP2Stream, _ output: inout Output) {
        stream.isEndedByClient = true
        if let length = stream.contentLength, length != stream.bodyBytes { return reset(stream, .protocolError, &output) }
        let response: Response
        switch stream.request() {
        case .success(let request): response = dispatch.respond(to: request, startedMicroseconds: stream.startedMicroseconds)
        case .failure(let error): response = dispatch.refuse(error, startedMicroseconds: stream.startedMicroseconds)
        }
        stream.response = response
        enqueue(stream)
    }

    /// RST_STREAM from the server (a stream error, RFC 9113 §5.4.2): the stream closes at once;
    /// frames of it the client already sent are ignored for a moment (``StreamHistory``).
    private func reset(_ stream: HTTP2Stream, _ code: HTTP2ErrorCode, _ output: inout Output) {
        output.appendFrame(type: FrameType.rstStream, stream: stream.id, value: code.rawValue)
        close(stream, resetByServer: true)
        spendServerReset(&output)
    }

    /// A stream the server resets spends from the same budget as the client's resets: a client
    /// must not make us reset streams faster than it could reset them itself ("MadeYouReset",
    /// CVE-2025-8671).
    private func spendServerReset(_ output: inout Output) {
        if !resets.spend(now: clock.now) { fail(.enhanceYourCalm, "streams reset too fast", &output) }
    }

    private func close(_ stream: HTTP2Stream, resetByServer: Bool) {
        stream.isClosed = true
        streams.remove(stream.id)
        history.recordClose(stream.id, resetByServerAt: resetByServer ? clock.now : nil)
        if streams.isEmpty { idleSince = clock.now }
    }

    private func enqueue(_ stream: HTTP2Stream) {
        stream.isBlocked = false
        guard !stream.isQueued else { return }
        stream.isQueued = true
        sendQueue.append(stream)
    }

    // MARK: - Frames out

    /// The server's connection preface: its SETTINGS (RFC 9113 §3.4), before anything else.
    private func writePreface(_ output: inout Output) {
        guard !sentPreface else { return }
        sentPreface = true
        let settings: [(UInt16, Int)] = [
            (SettingID.maxConcurrentStreams, configuration.maxConcurrentStreams),
            (SettingID.maxHeaderListSize, configuration.maxHeaderListSize),
            (SettingID.initialWindowSize, configuration.initialWindowSize),
            // RFC 9218 §2.1: no priority tree (PRIORITY frames are checked, then ignored).
            (SettingID.noRFC7540Priorities, 1),
        ]
        output.appendFrameHeader(length: 6 * settings.count, type: FrameType.settings, flags: 0, stream: 0)
        for (id, value) in settings {
            withUnsafeBytes(of: id.bigEndian) { output.buffer.append(contentsOf: $0) }
            output.appendUInt32(UInt32(value))
        }
    }

    /// Writes the queued responses, in order, until `output` holds the high-water mark: each
    /// stream's HEADERS, then its DATA as the windows allow. A stream whose window is used up
    /// leaves the queue until a WINDOW_UPDATE; when the connection's is, everything waits.
    private func produce(_ output: inout Output) {
        while output.pending < configuration.outputHighWaterMark, sendHead < sendQueue.count {
            let stream = sendQueue[sendHead]
            guard !stream.isClosed, let response = stream.response else {
                stream.isQueued = false
                sendHead += 1
                continue
            }
            let sendsBody = response.sendsBody && !response.body.isEmpty
            if !stream.headersSent {
                writeHeaders(stream.id, response.head, endStream: !sendsBody, &output)
                stream.headersSent = true
                if !sendsBody {
                    finish(stream)
                    continue
                }
            }
            guard sendWindow > 0, stream.sendWindow > 0 else {
                // Waits for a WINDOW_UPDATE (its own, or the connection's); the streams behind
                // it go on, if only with their HEADERS.
                if !stream.isBlocked {
                    stream.isBlocked = true
                    blocked.append((stream, clock.now + configuration.blockedTimeout))
                }
                stream.isQueued = false
                sendHead += 1
                continue
            }
            let left = response.body.count - stream.bodySent
            let count = min(left, peerMaxFrameSize, sendWindow, stream.sendWindow)
            let isLast = count == left
            output.appendFrameHeader(length: count, type: FrameType.data, flags: isLast ? FrameFlag.endStream : 0, stream: stream.id)
            response.body.withUnsafeBufferPointer { body in
                output.buffer.append(contentsOf: UnsafeBufferPointer(rebasing: body[stream.bodySent..<(stream.bodySent + count)]))
            }
            stream.bodySent += count
            sendWindow -= count
            stream.sendWindow -= count
            if isLast { finish(stream) }
        }
        if sendHead == sendQueue.count {
            sendQueue.removeAll(keepingCapacity: true)
            sendHead = 0
        } else if sendHead > 64, sendHead * 2 > sendQueue.count {
            sendQueue.removeFirst(sendHead)
            sendHead = 0
        }
        isBackedUp = output.pending >= configuration.outputHighWaterMark
    }

    /// The response is written whole: the stream closes (the client had ended its side).
    private func finish(_ stream: HTTP2Stream) {
        stream.isQueued = false
        sendHead += 1
        close(stream, resetByServer: false)
    }

    /// HEADERS with the head's prepared block and the date; split into CONTINUATION frames only
    /// if the client's frame size could not hold it (a head is far below the smallest, 16 KiB).
    private func writeHeaders(_ id: Int32, _ head: ResponseHead, endStream: Bool, _ output: inout Output) {
        let date = clock.date
        let prefix = sentHeaderBlock ? 0 : 1
        let length = prefix + head.http2Block.count + 3 + date.count
        let flags = endStream ? FrameFlag.endStream : 0
        if length <= peerMaxFrameSize {
            output.appendFrameHeader(length: length, type: FrameType.headers, flags: flags | FrameFlag.endHeaders, stream: id)
            if prefix == 1 { output.buffer.append(HeaderEncoder.tableSizeZero) }
            output.buffer.append(contentsOf: head.http2Block)
            writeDate(date, into: &output.buffer)
        } else {
            var block: [UInt8] = prefix == 1 ? [HeaderEncoder.tableSizeZero] : []
            block += head.http2Block
            writeDate(date, into: &block)
            var at = 0
            while at < block.count {
                let count = min(peerMaxFrameSize, block.count - at)
                let type = at == 0 ? FrameType.headers : FrameType.continuation
                let end = at + count == block.count ? FrameFlag.endHeaders : 0
                output.appendFrameHeader(length: count, type: type, flags: (at == 0 ? flags : 0) | end, stream: id)
                output.buffer.append(contentsOf: block[at..<(at + count)])
                at += count
            }
        }
        sentHeaderBlock = true
    }

    private func writeDate(_ date: [UInt8], into out: inout [UInt8]) {
        let field = (HeaderEncoder.datePrefix.0, HeaderEncoder.datePrefix.1, UInt8(date.count))
        withUnsafeBytes(of: field) { out.append(contentsOf: $0) }
        out.append(contentsOf: date)
    }

    private func writeGoAway(lastStream: Int32, _ code: HTTP2ErrorCode, _ output: inout Output) {
        output.appendFrameHeader(length: 8, type: FrameType.goAway, flags: 0, stream: 0)
        output.appendUInt32(UInt32(bitPattern: lastStream))
        output.appendUInt32(code.rawValue)
    }

    /// A connection error (RFC 9113 §5.4.1): GOAWAY with `code` and the last stream processed,
    /// after whatever is already written, then close.
    private func fail(_ code: HTTP2ErrorCode, _ reason: StaticString, _ output: inout Output) {
        if failure == nil { failure = (code, reason) }
        terminate(code, &output)
    }

    private func terminate(_ code: HTTP2ErrorCode, _ output: inout Output) {
        guard !isTerminated else { return }
        isTerminated = true
        writePreface(&output)
        writeGoAway(lastStream: min(history.highestOpened, goAwayLastStream ?? Int32.max), code, &output)
        isBackedUp = false
    }

    // MARK: - Field names

    package enum Field { case method, path, authority, host, ifNoneMatch, ifModifiedSince, userAgent, contentLength }

    /// Which field a name is, by length first (most names cost one comparison).
    static package func field(_ name: UnsafeBufferPointer<UInt8>) -> Field? {
        switch name.count {
        case 4: return equals(name, "host") ? .host : nil
        case 5: return equals(name, ":path") ? .path : nil
        case 7: return equals(name, ":method") ? .method : nil
        case 10:
            if equals(name, ":authority") { return .authority }
            return equals(name, "user-agent") ? .userAgent : nil
        case 13: return equals(name, "if-none-match") ? .ifNoneMatch : nil
        case 14: return equals(name, "content-length") ? .contentLength : nil
        case 17: return equals(name, "if-modified-since") ? .ifModifiedSince : nil
        default: return nil
        }
    }

    /// memcmp: the generic `elementsEqual` cost some 130 instructions a field (callgrind).
    static package func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return bytes.isEmpty || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }
}

/// A header block being received (HEADERS, then CONTINUATION frames until END_HEADERS) and
/// what it is for.
private struct HeaderBlock {
    enum Target {
        /// A new request stream.
        case request(HTTP2Stream)
        /// Trailers: a second block on an open stream, which must end it.
        case trailers(HTTP2Stream)
        /// A stream beyond SETTINGS_MAX_CONCURRENT_STREAMS: RST_STREAM REFUSED_STREAM once decoded.
        case refused(Int32)
        /// Decoded for the HPACK table only (a stream after GOAWAY, or one the server reset).
        case ignored
    }

    let streamID: Int32
    let endStream: Bool
    var target: Target
    /// Bytes received (HEADERS and CONTINUATION fragments) and decoded (RFC 9113 §6.5.2).
    var receivedBytes: Int
    var decodedBytes = 0
    var continuations = 0
    var check = RequestFieldCheck()
    /// The fragments so far of a block in several frames.
    var gathered: [UInt8] = []
    /// Why the request is malformed, once a field says so; the rest of the block is decoded
    /// (for the HPACK table) but not used.
    var malformed: StaticString?

    init(streamID: Int32, endStream: Bool, target: Target, receivedBytes: Int) {
        self.streamID = streamID
        self.endStream = endStream
        self.target = target
        self.receivedBytes = receivedBytes
    }
}
