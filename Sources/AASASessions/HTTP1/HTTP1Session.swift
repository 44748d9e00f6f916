import AASAHTTP

/// HTTP/1.1 on one connection (RFC 9112), as a state machine with no sockets: bytes in,
/// requests out to the ``RequestDispatch``, responses framed into the connection's
/// ``Output``. Keep-alive and pipelining (answers in order), `Connection: close`, HTTP/1.0,
/// bodies read and discarded, the header and idle deadlines.
final package class HTTP1Session: ProtocolSession {
    private let configuration: HTTP1Configuration
    private let clock: LoopClock
    /// The connection, which owns this session and so outlives it (`unowned(unsafe)`: no atomic
    /// reference counting per request).
    private unowned(unsafe) let dispatch: RequestDispatch
    private var parser: RequestParser
    /// Received bytes not yet consumed: a partial head, or pipelined requests.
    private var input: [UInt8] = []
    private var inputStart = 0
    /// Body bytes of the last request still to be read and discarded.
    private var discardBody = 0
    private(set) package var isClosing = false
    /// The last request asked to close (`Connection: close`, or HTTP/1.0 without keep-alive).
    private var clientAskedToClose = false
    private var draining = false
    /// The request last answered, whose fields the next one's replace (``answerPending(_:)``).
    private var lastRequest: HTTPRequest?
    /// The body the request whose head is read waits for (a session that keeps bodies); nil
    /// when no request waits for one.
    private var pendingBody: PendingBody?
    private struct PendingBody {
        /// `100 Continue` was sent for it.
        var continueSent = false
        /// A chunked body's decoder, and how many of its bytes (after the head) it has had.
        var chunked: ChunkedDecoder?
        var chunkedRead = 0
    }
    /// When the head now arriving started (monotonic ms), or nil between requests.
    private var headStarted: Int64?
    private var headStartedMicroseconds: Int64 = 0
    private var requestsServed = 0
    private let openedAt: Int64
    private var lastActivity: Int64

    /// Set on a plain listener where HTTP/2 with prior knowledge is on: an opening whose
    /// version is not HTTP/1.x is then taken for an HTTP/2 client's broken preface.
    private let mayBeHTTP2Preface: Bool

    package init(configuration: HTTP1Configuration, clock: LoopClock, dispatch: RequestDispatch, mayBeHTTP2Preface: Bool = false) {
        self.configuration = configuration
        self.mayBeHTTP2Preface = mayBeHTTP2Preface
        self.clock = clock
        self.dispatch = dispatch
        self.parser = RequestParser(limits: configuration.limits, targets: configuration.targets)
        self.openedAt = clock.now
        self.lastActivity = clock.now
    }

    // MARK: - ProtocolSession

    package func receive(_ bytes: UnsafeRawBufferPointer, output: inout Output) {
        lastActivity = clock.now
        guard !isClosing else { return }
        var bytes = bytes
        if discardBody > 0, inputStart == input.count {
            let d = min(discardBody, bytes.count)
            discardBody -= d
            bytes = UnsafeRawBufferPointer(rebasing: bytes[d...])
        }
        if bytes.isEmpty { return }
        if headStarted == nil { startHead() }
        input.append(contentsOf: bytes)
        answerPending(&output)
    }

    package func resume(output: inout Output) {
        lastActivity = clock.now
        if inputStart < input.count { answerPending(&output) }
    }

    package func peerClosed(output: inout Output) {
        // The client is done sending: what it asked for is answered (already in `output`),
        // a partial request never will be.
        isClosing = true
    }

    package func deadlineReached(output: inout Output) {
        guard !isClosing else { return }
        if headStarted != nil {
            let what = pendingBody != nil ? "request body not complete in time" : "request head not complete in time"
            append(dispatch.refuse(HTTPError(.requestTimeout, what),
                                   startedMicroseconds: headStartedMicroseconds), keepAlive: false, version: .http11, into: &output)
        }
        // A new connection that never sent a byte, or an idle keep-alive one: close quietly.
        isClosing = true
    }

    package func drain(output: inout Output) {
        // The next answer carries `Connection: close`, and the connection closes after it. An
        // idle keep-alive connection stays open until ``closeIdle()``: closed now, a request
        // its client is sending would be cut (RFC 9112 §9.6).
        draining = true
    }

    package func closeIdle() {
        // A connection that has not yet sent its first request is not idle: it is a request on
        // its way, and it gets its answer.
        if isIdle, requestsServed > 0 { isClosing = true }
    }

    /// Not while a large body is written from its prepared bytes, nor past the high-water mark.
    package func wantsInput(_ output: Output) -> Bool {
        !isClosing && output.body == nil && output.pending < configuration.outputHighWater
    }

    /// No lingering when the client asked to close and nothing it sent is unread: our close
    /// cannot then reset the response in flight.
    package var lingersOnClose: Bool { !(clientAskedToClose && inputStart >= input.count) }

    package var isIdle: Bool { inputStart >= input.count && headStarted == nil && discardBody == 0 }

    package var deadline: Int64? {
        if isClosing { return nil }
        if let headStarted { return headStarted + configuration.headerTimeout }
        if requestsServed == 0 { return openedAt + configuration.headerTimeout }
        return lastActivity + configuration.idleTimeout
    }

    // MARK: - Requests

    private func startHead() {
        headStarted = clock.now
        headStartedMicroseconds = clock.microseconds()
    }

    /// Answers every complete request in the input, in order, until the output backs up.
    private func answerPending(_ output: inout Output) {
        // The parser fills in every field of the last request, in place: a request in the
        // parser's result was copied once more, and a new one was copied as it was made (the
        // optimiser kept it in a box), each copy a retain and a release per field and its
        // destroy as many again (~450 instructions a request, callgrind).
        if case .none = lastRequest { lastRequest = HTTPRequest() }
        answerPending(&output, request: &lastRequest!)
        // What an admin request carried (its token, a write's body) is not kept past its answer.
        if lastRequest?.authorization != nil || lastRequest?.body.isEmpty == false { lastRequest = nil }
    }

    private func answerPending(_ output: inout Output, request: inout HTTPRequest) {
        while inputStart < input.count, !isClosing, output.body == nil, output.pending < configuration.outputHighWater {
            if discardBody > 0 {
                let d = min(discardBody, input.count - inputStart)
                discardBody -= d
                inputStart += d
                continue
            }
            if headStarted == nil { startHead() }
            let start = inputStart
            switch parse(from: start, into: &request) {
            case .needMore:
                compact()
                return
            case .error(let e) where mayBeHTTP2Preface && requestsServed == 0
                && (e.status == .httpVersionNotSupported || e.reason == RequestParser.malformedVersion)
                && input.withUnsafeBytes({ HTTP1Session.isBrokenHTTP2Preface(UnsafeRawBufferPointer(rebasing: $0[start...])) }):
                // An opening that is no HTTP/1.x request line comes from an HTTP/2 client whose
                // preface is broken, which cannot read an HTTP/1.1 answer: it gets HTTP/2's, a
                // connection error PROTOCOL_ERROR (RFC 9113 §3.4), then the close.
                output.buffer.append(contentsOf: HTTP1Session.goAwayProtocolError)
                isClosing = true
                inputStart = input.count
            case .error(let e):
                append(dispatch.refuse(e, startedMicroseconds: headStartedMicroseconds), keepAlive: false, version: .http11, into: &output)
                isClosing = true
                inputStart = input.count
            case .complete(let headLength):
                if configuration.keepsBodies, request.contentLength > 0 || request.hasUnframedBody {
                    // The whole body first (at most limits.maxBody); the head is parsed again
                    // each time more arrives, within the head's deadline.
                    let bodyStart = inputStart + headLength
                    var end: Int?
                    // Taken out while it is fed, so its decoded bytes have one owner (appended
                    // to in place, not copied at each read).
                    var body = pendingBody ?? PendingBody()
                    pendingBody = nil
                    if request.hasUnframedBody {
                        switch Self.feedChunked(&body, input, from: bodyStart, limit: configuration.limits.maxBody) {
                        case .needMore: end = nil
                        case .complete(let consumed): end = consumed
                        case .error(let e):
                            pendingBody = nil
                            append(dispatch.refuse(e, startedMicroseconds: headStartedMicroseconds), keepAlive: false, version: .http11, into: &output)
                            isClosing = true
                            inputStart = input.count
                            continue
                        }
                    } else if input.count - bodyStart >= request.contentLength {
                        end = bodyStart + request.contentLength
                    }
                    guard let end else {
                        if request.expectsContinue, !body.continueSent, input.count == bodyStart {
                            guard dispatch.wantsBody(of: request) else {
                                // Answered without its body, which may still come: the
                                // connection closes after the answer (RFC 9110 §10.1.1).
                                answerWithoutBody(&output, request: &request)
                                return
                            }
                            output.buffer.append(contentsOf: HTTP1Session.continueLine)
                            body.continueSent = true
                        }
                        pendingBody = body
                        parser.reset()
                        compact()
                        return
                    }
                    request.body = request.hasUnframedBody ? body.chunked?.body ?? [] : Array(input[bodyStart..<end])
                    pendingBody = nil
                    inputStart = end
                    request.contentLength = 0
                    // Read to its end: the connection need not linger for it (it still closes:
                    // the parser keeps no connection open after a coded body).
                    request.hasUnframedBody = false
                } else {
                    inputStart += headLength
                }
                parser.reset()
                if draining { request.keepAlive = false }
                let response = dispatch.respond(to: request, startedMicroseconds: headStartedMicroseconds)
                requestsServed += 1
                headStarted = nil
                if !request.keepAlive || request.hasUnframedBody {
                    isClosing = true
                    // An unframed body is still arriving: linger to read it.
                    clientAskedToClose = !request.keepAlive && !request.hasUnframedBody && !draining
                    request.keepAlive = false
                } else {
                    discardBody = request.contentLength
                }
                append(response, keepAlive: request.keepAlive, version: request.version, into: &output)
            }
        }
        compact()
    }

    /// Feeds a chunked body's bytes not read yet (from `bodyStart`, where it begins) to its
    /// decoder; on completion, the position in the input where it ended.
    private static func feedChunked(_ body: inout PendingBody, _ input: [UInt8], from bodyStart: Int, limit: Int) -> ChunkedDecoder.Outcome {
        if body.chunked == nil { body.chunked = ChunkedDecoder(limit: limit) }
        let from = bodyStart + body.chunkedRead
        let outcome = input.withUnsafeBytes { body.chunked!.feed(UnsafeRawBufferPointer(rebasing: $0[from...])) }
        switch outcome {
        case .needMore: body.chunkedRead = input.count - bodyStart
        case .complete(let consumed): return .complete(consumed: from + consumed)
        case .error: break
        }
        return outcome
    }

    /// A request answered before its body arrived: the answer, then the close; what the client
    /// still sends is read and dropped while the connection lingers.
    private func answerWithoutBody(_ output: inout Output, request: inout HTTPRequest) {
        inputStart = input.count
        parser.reset()
        pendingBody = nil
        request.keepAlive = false
        let response = dispatch.respond(to: request, startedMicroseconds: headStartedMicroseconds)
        requestsServed += 1
        headStarted = nil
        isClosing = true
        append(response, keepAlive: false, version: request.version, into: &output)
        compact()
    }

    /// The parser over the input from `start`, filling in `request`.
    private func parse(from start: Int, into request: inout HTTPRequest) -> RequestParser.Outcome {
        input.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[start...]), into: &request) }
    }

    /// The first line begins like HTTP/2's preface (`PRI * HTTP/2.0`), or names no `HTTP/`
    /// version at all (h2spec's `INVALID CONNECTION PREFACE`). A line with an `HTTP/` version,
    /// however wrong (`http/1.1`, `HTTP/3.0`, a trailing space), is an HTTP/1.x client's, and
    /// gets HTTP/1.1's 400 or 505.
    static func isBrokenHTTP2Preface(_ opening: UnsafeRawBufferPointer) -> Bool {
        let line = opening.prefix { $0 != 0x0A }
        if line.starts(with: ClientPreface.requestLine) { return true }
        let http = Array("http/".utf8)
        guard line.count >= http.count else { return true }
        for i in line.startIndex...(line.endIndex - http.count) {
            var matches = true
            for k in 0..<http.count where line[i + k] | 0x20 != http[k] {
                matches = false
                break
            }
            if matches { return false }
        }
        return true
    }

    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    /// GOAWAY (type 7) on stream 0, last stream 0, error PROTOCOL_ERROR (1): RFC 9113 §6.8.
    private static let goAwayProtocolError: [UInt8] = [0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    private static let closeLine = Array("Connection: close\r\n".utf8)
    private static let keepAliveLine = Array("Connection: keep-alive\r\n".utf8)

    /// Frames a response: the prepared head, the date, the connection header, the body.
    private func append(_ response: Response, keepAlive: Bool, version: HTTPVersion, into output: inout Output) {
        output.buffer.append(contentsOf: response.head.http1)
        if keepAlive && version != .http10 {
            // The usual case: the date ends the head (each append costs some 170 instructions).
            output.buffer.append(contentsOf: clock.dateEndingHead)
        } else {
            output.buffer.append(contentsOf: clock.date)
            output.buffer.append(contentsOf: HTTP1Session.crlf)
            output.buffer.append(contentsOf: keepAlive ? HTTP1Session.keepAliveLine : HTTP1Session.closeLine)
            output.buffer.append(contentsOf: HTTP1Session.crlf)
        }
        guard response.sendsBody, !response.body.isEmpty else { return }
        if response.body.count > configuration.copyLimit {
            output.body = response.body
        } else {
            output.buffer.append(contentsOf: response.body)
        }
    }

    private func compact() {
        if inputStart >= input.count {
            if input.capacity > 16 * 1024 { input = [] } else { input.removeAll(keepingCapacity: true) }
            inputStart = 0
        } else if inputStart > 0 {
            input.removeFirst(inputStart)
            inputStart = 0
        }
    }
}
