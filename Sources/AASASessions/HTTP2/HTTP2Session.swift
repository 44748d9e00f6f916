import AASAHTTP
import CNghttp2
#if canImport(Glibc)
import Glibc
#endif

/// The HTTP/2 side of a connection (RFC 9113; docs/serving.md, "HTTP/2"): libnghttp2 does the
/// framing, HPACK and flow control in memory; this class feeds it the bytes read, answers each
/// complete request stream through the ``RequestDispatch``, and moves the frames nghttp2 produces
/// into the connection's ``Output`` — never more than the high-water mark at a time. It adds the
/// limits nghttp2 1.52 lacks: header block size and CONTINUATION count, request body size,
/// rapid reset and frame floods (token buckets), idle and stall timeouts.
///
/// Create it when ALPN picked `h2`, or when a cleartext connection opened with the client
/// preface; then call `receive` with every byte read, the preface included (nghttp2's server
/// expects it), or `resume` to queue the server's SETTINGS before the client speaks.
final package class HTTP2Session: ProtocolSession {
    package let configuration: HTTP2Configuration
    private let clock: LoopClock
    /// The connection owns both the session and its dispatch.
    /// The connection, which owns this session and so outlives it (`unowned(unsafe)`: no atomic
    /// reference counting per stream).
    private unowned(unsafe) let dispatch: RequestDispatch
    /// `nghttp2_session *`, whose callbacks reach this object through an unretained pointer:
    /// it is freed in `deinit`, before this object is gone.
    private var session: OpaquePointer!

    /// Open request streams by id.
    private var streams: [Int32: HTTP2Stream] = [:]
    /// The stream whose header block is being decoded. Header blocks do not interleave on a
    /// connection (RFC 9113 §4.3), so each field, and the END_STREAM that follows, finds its
    /// stream here rather than by hashing its id.
    private var decoding: (id: Int32, stream: HTTP2Stream)?

    // Per header block (one at a time on a connection: RFC 9113 §6.10).
    private var headerBlockBytes = 0
    private var continuationFrames = 0
    private var decodedHeaderBytes = 0

    private var resets: FloodBudget
    private var controlFrames: FloodBudget
    private var windowUpdates: FloodBudget
    private var emptyFrames: FloodBudget

    /// Why a callback gave up on the connection: the GOAWAY code to send.
    private var failure: (code: nghttp2_error_code, reason: StaticString)?
    /// GOAWAY queued with termination: nothing more is read or framed once it is out.
    private(set) var isTerminated = false
    private var isDraining = false
    private var peerHasClosed = false
    /// `Output` held the high-water mark's worth of bytes when frames were last produced.
    private var isBackedUp = false

    /// When the last stream closed (or the session began): the idle timeout counts from here.
    private var idleSince: Int64
    /// The last input, or output written: with streams open, the stall timeout counts from here.
    private var lastProgress: Int64

    /// Client streams nghttp2 no longer knows, for late frames (RFC 9113 §5.1).
    private var history = StreamHistory()
    /// Frames nghttp2 passes over without a callback.
    private var scanner = FrameScanner()
    /// The last `:authority` (or Host) and User-Agent, as made from their bytes: a client sends
    /// the same ones on every stream, and comparing bytes costs less than normalizing a host and
    /// making Strings again (~1,000 instructions a request, callgrind).
    private var lastAuthority: HTTP2Stream.HostField?
    private var lastUserAgent = RememberedField()

    /// Reused for every response's header list, so submitting one allocates nothing once warm.
    private var fieldList: [nghttp2_nv] = []

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
        streams.reserveCapacity(configuration.maxConcurrentStreams)

        var session: OpaquePointer?
        let created = nghttp2_session_server_new2(&session, HTTP2Callbacks.table, Unmanaged.passUnretained(self).toOpaque(),
                                                  HTTP2Callbacks.options)
        // Fails only when out of memory.
        precondition(created == 0, "nghttp2_session_server_new2: \(created)")
        self.session = session

        // The server preface (RFC 9113 §3.4) is this SETTINGS frame; it goes out with the first
        // frames produced.
        let settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                                   value: UInt32(configuration.maxConcurrentStreams)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                                   value: UInt32(configuration.maxHeaderListSize)),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue),
                                   value: UInt32(configuration.initialWindowSize)),
            // RFC 9218 §2.1: no priority tree to maintain (nghttp2 then ignores PRIORITY).
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES.rawValue), value: 1),
        ]
        let submitted = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), settings, settings.count)
        precondition(submitted == 0, "nghttp2_submit_settings: \(submitted)")
    }

    deinit { nghttp2_session_del(session) }

    // MARK: - ProtocolSession

    package func receive(_ bytes: UnsafeRawBufferPointer, output: inout Output) {
        guard !isTerminated, bytes.count > 0 else { return }
        lastProgress = clock.now
        var fed = 0
        var scanned = 0
        while let (offset, event) = scanner.next(in: bytes, from: scanned) {
            // The byte that completes the event stays unfed until the event is judged.
            guard feed(bytes, from: fed, to: offset, output: &output) else { return }
            fed = offset
            scanned = offset + 1
            if let (code, reason) = refusal(event) {
                failure = (code, reason)
                terminate(code, output: &output)
                return
            }
        }
        guard feed(bytes, from: fed, to: bytes.count, output: &output) else { return }
        produce(&output)
    }

    /// Gives nghttp2 `bytes[from..<to]`; false when it gave up on the connection.
    private func feed(_ bytes: UnsafeRawBufferPointer, from: Int, to: Int, output: inout Output) -> Bool {
        guard from < to else { return true }
        let read = nghttp2_session_mem_recv(session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + from, to - from)
        if read < 0 {
            terminate(failure?.code ?? HTTP2Session.goAwayCode(forError: Int32(read)), output: &output)
            return false
        }
        return true
    }

    /// What a frame nghttp2 would pass over means, judged with the streams as nghttp2 has
    /// left them after every byte before it.
    private func refusal(_ event: FrameScanner.Event) -> (nghttp2_error_code, StaticString)? {
        switch event {
        case .selfDependentPriority:
            return (NGHTTP2_PROTOCOL_ERROR, "a stream depends on itself")
        case .data(let id):
            // Stream 0, even ids and idle streams are nghttp2's own protocol errors.
            guard id > 0, id & 1 == 1, id <= history.highestOpened else { return nil }
            if let stream = openStream(id) {
                return stream.isEndedByClient ? (NGHTTP2_STREAM_CLOSED, "DATA on a half-closed (remote) stream") : nil
            }
            switch history.verdict(stream: id, isHeaders: false, now: clock.now) {
            case .new, .late: return nil
            case .closed, .reusedIdentifier: return (NGHTTP2_STREAM_CLOSED, "DATA on a closed stream")
            }
        }
    }

    package func resume(output: inout Output) {
        guard !isTerminated else { return }
        lastProgress = clock.now
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
        guard let deadline, clock.now >= deadline else { return }
        terminate(NGHTTP2_NO_ERROR, output: &output)
    }

    /// How long after the shutdown notice the final GOAWAY follows: time for requests the
    /// client sent before it saw the notice to arrive (RFC 9113 §6.8 asks for at least one
    /// round trip).
    static let shutdownNoticeGrace: Int64 = 1_000
    /// When the final GOAWAY is due, while draining.
    private var finalGoAwayAt: Int64?

    package func drain(output: inout Output) {
        guard !isTerminated, !isDraining else { return }
        isDraining = true
        // RFC 9113 §6.8, graceful shutdown in two steps: a GOAWAY with the largest stream id
        // first, so a request already on its way (a new connection's first) is still served;
        // then, a moment later, the real last stream id.
        _ = nghttp2_submit_shutdown_notice(session)
        finalGoAwayAt = clock.now + HTTP2Session.shutdownNoticeGrace
        produce(&output)
    }

    private func sendFinalGoAway(_ output: inout Output) {
        finalGoAwayAt = nil
        // nghttp2 ignores newer streams from here on and keeps serving those it has.
        _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nghttp2_session_get_last_proc_stream_id(session),
                                  NGHTTP2_NO_ERROR.rawValue, nil, 0)
        produce(&output)
    }

    package var wantsInput: Bool {
        !isTerminated && !peerHasClosed && !isBackedUp && nghttp2_session_want_read(session) != 0
    }

    package var isClosing: Bool {
        if isTerminated { return true }
        let wantsWrite = nghttp2_session_want_write(session) != 0
        // After a GOAWAY either way with no stream left, nghttp2 wants neither to read nor to
        // write. A peer that closed its side sends no WINDOW_UPDATE: what flow control holds
        // back never goes out.
        return !wantsWrite && (peerHasClosed || nghttp2_session_want_read(session) == 0)
    }

    package var lingersOnClose: Bool { false }

    package var isIdle: Bool { streams.isEmpty && nghttp2_session_want_write(session) == 0 }

    package var deadline: Int64? {
        if isTerminated { return nil }
        if let finalGoAwayAt { return finalGoAwayAt }
        return (streams.isEmpty ? idleSince : lastProgress) + configuration.idleTimeout
    }

    /// Streams open now (for tests and metrics).
    var openStreams: Int { streams.count }

    // MARK: - Frames out

    /// Moves nghttp2's frames into `output` until it holds the high-water mark's worth. The
    /// rest stays in nghttp2, unframed: DATA is read from the prepared body only when framed.
    private func produce(_ output: inout Output) {
        while output.pending < configuration.outputHighWaterMark {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            if count < 0 {
                terminate(failure?.code ?? NGHTTP2_INTERNAL_ERROR, output: &output)
                return
            }
            guard count > 0, let data else { break }
            output.buffer.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
        }
        isBackedUp = output.pending >= configuration.outputHighWaterMark
        // A limit tripped where a callback cannot fail the call (a stream closing).
        if let failure { terminate(failure.code, output: &output) }
    }

    /// GOAWAY with `code` and the last stream processed, then close: everything nghttp2 still
    /// sends before it (SETTINGS and PING ACKs, RST_STREAM) goes out with it, nothing after —
    /// nghttp2 frames no DATA once a terminating GOAWAY is queued, so this ignores the mark.
    private func terminate(_ code: nghttp2_error_code, output: inout Output) {
        guard !isTerminated else { return }
        isTerminated = true
        _ = nghttp2_session_terminate_session(session, code.rawValue)
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count > 0, let data else { break }
            output.buffer.append(contentsOf: UnsafeBufferPointer(start: data, count: count))
        }
        isBackedUp = false
    }

    /// The GOAWAY code for a fatal error nghttp2 returned on its own.
    private static func goAwayCode(forError error: Int32) -> nghttp2_error_code {
        switch error {
        // -905 is NGHTTP2_ERR_TOO_MANY_CONTINUATIONS, which Debian's 1.52 has from the
        // CVE-2024-28182 backport (upstream 1.61), and upstream 1.52's header lacks.
        case NGHTTP2_ERR_FLOODED.rawValue, -905: return NGHTTP2_ENHANCE_YOUR_CALM
        case NGHTTP2_ERR_NOMEM.rawValue, NGHTTP2_ERR_CALLBACK_FAILURE.rawValue: return NGHTTP2_INTERNAL_ERROR
        default: return NGHTTP2_PROTOCOL_ERROR
        }
    }

    // MARK: - Callbacks (HTTP2Callbacks calls these)

    /// Gives up on the connection from inside a callback: nghttp2 returns at once with
    /// NGHTTP2_ERR_CALLBACK_FAILURE, and the GOAWAY carries `code`.
    private func trip(_ code: nghttp2_error_code, _ reason: StaticString) -> Int32 {
        if failure == nil { failure = (code, reason) }
        return NGHTTP2_ERR_CALLBACK_FAILURE.rawValue
    }

    /// The reason the connection was given up, for logs and tests.
    package var failureReason: String? { failure.map { "\($0.reason)" } }

    /// Every frame header, before its payload: the flood budgets and the header block's size
    /// as received (CONTINUATION frames are invisible to the other callbacks).
    func beginFrame(_ header: nghttp2_frame_hd) -> Int32 {
        let now = clock.now
        let isEmpty = header.length == 0
        switch header.type {
        case FrameType.data:
            if isEmpty, header.flags & FrameFlag.endStream == 0, !emptyFrames.spend(now: now) {
                return trip(NGHTTP2_ENHANCE_YOUR_CALM, "empty DATA flood")
            }
        case FrameType.headers:
            if let refusal = checkStreamState(header, now: now) { return refusal }
            headerBlockBytes = header.length
            continuationFrames = 0
            decodedHeaderBytes = 0
            if isEmpty, !emptyFrames.spend(now: now) { return trip(NGHTTP2_ENHANCE_YOUR_CALM, "empty HEADERS flood") }
            if headerBlockBytes > configuration.maxHeaderListSize {
                return trip(NGHTTP2_ENHANCE_YOUR_CALM, "header block over the limit")
            }
        case FrameType.continuation:
            headerBlockBytes += header.length
            continuationFrames += 1
            if isEmpty, !emptyFrames.spend(now: now) { return trip(NGHTTP2_ENHANCE_YOUR_CALM, "empty CONTINUATION flood") }
            if continuationFrames > configuration.maxContinuationFrames {
                return trip(NGHTTP2_ENHANCE_YOUR_CALM, "too many CONTINUATION frames")
            }
            if headerBlockBytes > configuration.maxHeaderListSize {
                return trip(NGHTTP2_ENHANCE_YOUR_CALM, "header block over the limit")
            }
        case FrameType.rstStream:
            if !resets.spend(now: now) { return trip(NGHTTP2_ENHANCE_YOUR_CALM, "rapid reset") }
            openStream(header.stream_id)?.isResetByClient = true
        case FrameType.windowUpdate:
            if !windowUpdates.spend(now: now) { return trip(NGHTTP2_ENHANCE_YOUR_CALM, "WINDOW_UPDATE flood") }
        case FrameType.goAway:
            break
        case FrameType.priority where header.stream_id == 0:
            // RFC 9113 §6.3: a connection error.
            return trip(NGHTTP2_PROTOCOL_ERROR, "PRIORITY on stream 0")
        default:
            // SETTINGS, PING, PRIORITY, PUSH_PROMISE (a protocol error nghttp2 answers), and
            // extension frames, which are ignored but still cost a read.
            if !controlFrames.spend(now: now) { return trip(NGHTTP2_ENHANCE_YOUR_CALM, "control frame flood") }
        }
        return 0
    }

    /// HEADERS on a client stream the client may no longer send on (RFC 9113 §5.1): half-closed
    /// (remote), or closed by its END_STREAM or a RST_STREAM, is STREAM_CLOSED; a lower stream
    /// id than one already used is PROTOCOL_ERROR (§5.1.1); one still in flight when the server
    /// reset the stream is ignored for a moment. Each is a connection error here (an endpoint
    /// may always end the connection): nghttp2, which keeps no closed streams, would ignore
    /// them. DATA is judged the same way through ``FrameScanner``. Nil: nghttp2 decides.
    private func checkStreamState(_ header: nghttp2_frame_hd, now: Int64) -> Int32? {
        let id = header.stream_id
        // Stream 0 and server-initiated (even) ids are nghttp2's own protocol errors.
        guard id > 0, id & 1 == 1 else { return nil }
        if let stream = openStream(id) {
            return stream.isEndedByClient ? trip(NGHTTP2_STREAM_CLOSED, "a frame on a half-closed (remote) stream") : nil
        }
        switch history.verdict(stream: id, isHeaders: header.type == FrameType.headers, now: now) {
        case .new, .late: return nil
        case .closed: return trip(NGHTTP2_STREAM_CLOSED, "a frame on a closed stream")
        case .reusedIdentifier: return trip(NGHTTP2_PROTOCOL_ERROR, "a stream id lower than one already used")
        }
    }

    /// A request's HEADERS begin: a new stream.
    func beginHeaders(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        guard frame.pointee.hd.type == FrameType.headers, frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST else { return 0 }
        // RFC 7540 §5.3.1: a stream cannot depend on itself.
        if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_PRIORITY.rawValue) != 0,
           frame.pointee.headers.pri_spec.stream_id == frame.pointee.hd.stream_id {
            return trip(NGHTTP2_PROTOCOL_ERROR, "a stream depends on itself")
        }
        let stream = HTTP2Stream(startedMicroseconds: clock.microseconds())
        streams[frame.pointee.hd.stream_id] = stream
        decoding = (frame.pointee.hd.stream_id, stream)
        return 0
    }

    /// The stream `id`, if open: the one whose header block is being decoded without a lookup.
    private func openStream(_ id: Int32) -> HTTP2Stream? {
        if let decoding, decoding.id == id { return decoding.stream }
        return streams[id]
    }

    /// One decoded field. Names arrive in lower case: nghttp2 resets a stream that sends
    /// upper-case names (RFC 9113 §8.2.1).
    package func header(_ frame: UnsafePointer<nghttp2_frame>, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) -> Int32 {
        decodedHeaderBytes += name.count + value.count + 32
        if decodedHeaderBytes > configuration.maxHeaderListSize {
            return trip(NGHTTP2_ENHANCE_YOUR_CALM, "header list over the limit")
        }
        guard frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST, let stream = openStream(frame.pointee.hd.stream_id) else { return 0 }
        switch HTTP2Session.field(name) {
        case .method:
            if Self.equals(value, "GET") {
                stream.method = .get
            } else if Self.equals(value, "HEAD") {
                stream.method = .head
            } else {
                stream.method = .other(String(decoding: value, as: UTF8.self))
            }
        case .path: stream.setPath(value)
        case .authority: stream.setAuthority(hostField(value))
        case .host: stream.setHostField(hostField(value))
        case .ifNoneMatch: stream.ifNoneMatch = String(decoding: value, as: UTF8.self)
        case .ifModifiedSince: stream.ifModifiedSince = String(decoding: value, as: UTF8.self)
        case .userAgent:
            if let agent = lastUserAgent.value(for: value) {
                stream.userAgent = agent
            } else {
                let agent = String(decoding: value, as: UTF8.self)
                lastUserAgent.remember(value, as: agent)
                stream.userAgent = agent
            }
        case .contentLength:
            // nghttp2 has checked it is digits and will check the DATA against it.
            if value.count <= 18 { stream.contentLength = value.reduce(0) { $0 * 10 + Int($1 &- 0x30) } }
        case nil: break
        }
        return 0
    }

    /// The field for a `:authority` or Host value: the last one when the bytes are the same.
    private func hostField(_ value: UnsafeBufferPointer<UInt8>) -> HTTP2Stream.HostField {
        if let last = lastAuthority, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) { return last }
        let field = HTTP2Stream.HostField(value)
        lastAuthority = field
        return field
    }

    /// A whole frame (HEADERS with its CONTINUATIONs as one): a request is complete at
    /// END_STREAM.
    func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) -> Int32 {
        let header = frame.pointee.hd
        guard header.type == FrameType.headers || header.type == FrameType.data, let stream = openStream(header.stream_id) else {
            return 0
        }
        if header.type == FrameType.headers, let length = stream.contentLength, length > configuration.maxRequestBody {
            refuse(header.stream_id, stream)
            return 0
        }
        if header.flags & FrameFlag.endStream != 0 {
            stream.isEndedByClient = true
            respond(header.stream_id, stream)
        }
        return 0
    }

    /// Request body bytes: discarded, counted against the limit.
    func dataChunk(stream id: Int32, count: Int) -> Int32 {
        guard let stream = openStream(id) else { return 0 }
        stream.bodyBytes += count
        if stream.bodyBytes > configuration.maxRequestBody { refuse(id, stream) }
        return 0
    }

    func streamClosed(_ id: Int32, errorCode: UInt32) -> Int32 {
        guard let stream = streams.removeValue(forKey: id) else { return 0 }
        if decoding?.id == id { decoding = nil }
        let resetByServer = errorCode != NGHTTP2_NO_ERROR.rawValue && !stream.isResetByClient
        history.recordClose(id, resetByServerAt: resetByServer ? clock.now : nil)
        if streams.isEmpty { idleSince = clock.now }
        // A stream we reset ourselves (its body was too large, nghttp2 found it malformed)
        // spends from the same budget as the client's resets: a client must not make us reset
        // streams faster than it could reset them itself ("MadeYouReset", CVE-2025-8671).
        // Client resets were counted as frames.
        if resetByServer, !resets.spend(now: clock.now), failure == nil {
            failure = (NGHTTP2_ENHANCE_YOUR_CALM, "streams reset too fast")
        }
        return 0
    }

    /// Copies the next DATA frame's bytes straight from the response's body (the site's
    /// prepared storage) into nghttp2's frame buffer. `stream` is the data source `submit`
    /// gave nghttp2: it stays in the table, alive, until nghttp2 closes the stream, and nghttp2
    /// reads no DATA after that.
    func readBody(_ stream: HTTP2Stream, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let response = stream.response else { return Int(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue) }
        let offset = stream.bodySent
        let count = min(length, response.body.count - offset)
        response.body.withUnsafeBufferPointer { body in
            buffer.update(from: body.baseAddress! + offset, count: count)
        }
        stream.bodySent = offset + count
        if offset + count == response.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return count
    }

    // MARK: - Requests

    private func respond(_ id: Int32, _ stream: HTTP2Stream) {
        guard !stream.isRefused, stream.response == nil else { return }
        let response: Response
        switch stream.request() {
        case .success(let request): response = dispatch.respond(to: request, startedMicroseconds: stream.startedMicroseconds)
        case .failure(let error): response = dispatch.refuse(error, startedMicroseconds: stream.startedMicroseconds)
        }
        stream.response = response
        submit(response, on: id, stream)
    }

    /// RST_STREAM CANCEL: a body over the limit (docs/serving.md, "HTTP/2"). The stream stays in
    /// the table, marked, until nghttp2 closes it as the frame goes out.
    private func refuse(_ id: Int32, _ stream: HTTP2Stream) {
        guard !stream.isRefused else { return }
        stream.isRefused = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
    }

    private static let dateName: StaticString = "date"

    /// HEADERS with the head's prepared fields (`:status` first) and `date`, then DATA from the
    /// body unless the response has none to send (HEAD, 304, an empty body).
    private func submit(_ response: Response, on id: Int32, _ stream: HTTP2Stream) {
        let sendsBody = response.sendsBody && !response.body.isEmpty
        fieldList.removeAll(keepingCapacity: true)
        // The head's field bytes live as long as the stream holds its response, which is past
        // the HEADERS frame going out: nghttp2 need not copy them.
        let prepared = UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
        let bytes = response.head.http2Bytes
        for field in response.head.http2Fields {
            fieldList.append(nghttp2_nv(name: bytes + field.name, value: bytes + field.value,
                                        namelen: field.nameLength, valuelen: field.valueLength, flags: prepared))
        }
        let submitted = clock.date.withUnsafeBufferPointer { date in
            // The date's bytes change with the second, maybe before the frame is out: copied.
            fieldList.append(nghttp2_nv(name: UnsafeMutablePointer(mutating: HTTP2Session.dateName.utf8Start),
                                        value: UnsafeMutablePointer(mutating: date.baseAddress!),
                                        namelen: HTTP2Session.dateName.utf8CodeUnitCount, valuelen: date.count,
                                        flags: UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue)))
            // nghttp2 copies the list before returning; the provider is kept by value. Its
            // source is the stream, for readBody.
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: Unmanaged.passUnretained(stream).toOpaque()),
                                                 read_callback: HTTP2Callbacks.readBody)
            return sendsBody
                ? nghttp2_submit_response(session, id, fieldList, fieldList.count, &provider)
                : nghttp2_submit_response(session, id, fieldList, fieldList.count, nil)
        }
        // Fails only for a stream nghttp2 no longer knows, or out of memory.
        if submitted != 0 { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_INTERNAL_ERROR.rawValue) }
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

/// Frame types (RFC 9113 §6) as `nghttp2_frame_hd.type` holds them.
package enum FrameType {
    static package let data = UInt8(NGHTTP2_DATA.rawValue)
    static package let headers = UInt8(NGHTTP2_HEADERS.rawValue)
    static let rstStream = UInt8(NGHTTP2_RST_STREAM.rawValue)
    static package let settings = UInt8(NGHTTP2_SETTINGS.rawValue)
    static let ping = UInt8(NGHTTP2_PING.rawValue)
    static let goAway = UInt8(NGHTTP2_GOAWAY.rawValue)
    static let windowUpdate = UInt8(NGHTTP2_WINDOW_UPDATE.rawValue)
    static let continuation = UInt8(NGHTTP2_CONTINUATION.rawValue)
    static let priority = UInt8(NGHTTP2_PRIORITY.rawValue)
}

package enum FrameFlag {
    static let endStream = UInt8(NGHTTP2_FLAG_END_STREAM.rawValue)
    static let ack = UInt8(NGHTTP2_FLAG_ACK.rawValue)
}
