import AASAHTTP
import COpenSSL
import AASATransport
import AASASessions
#if canImport(Glibc)
import Glibc
#endif

/// A connection of the server: over its socket.
typealias ServerConnection = Connection<SocketIO>

/// One client connection as a state machine: its transport stages (PROXY header, TLS) and then
/// its protocol session. It takes events — readiness, a deadline, a drain — and answers with an
/// action: wait for these events until this time, or close. Every byte it reads or writes goes
/// through its ``ConnectionIO``; the loop owns the descriptor's registration, the timers and the
/// close. Over a fake IO, its stages are unit-tested without sockets. Touched only by the
/// thread of the loop that accepted it.
final class Connection<IO: ConnectionIO>: RequestDispatch {
    /// What the loop tells a connection.
    enum Event: Equatable {
        /// Straight after accept.
        case start
        /// The descriptor is ready for these epoll events.
        case ready(UInt32)
        /// ``deadline`` passed.
        case deadline
        /// The server is stopping: every answer from now on is the last on the connection.
        case drain
        /// The drain's delay is over: an idle connection closes.
        case closeIdle
    }

    /// What the connection asks of the loop.
    enum Action: Equatable {
        /// Wait for these epoll events, until this deadline (then send ``Event/deadline``).
        case wait(events: UInt32, until: Int64?)
        /// Done: release it and close the descriptor.
        case close
    }

    enum Stage {
        /// Waiting for the PROXY protocol header (`--proxy-protocol`), before TLS or HTTP.
        case proxyHeader
        /// TLS, before the first byte: no TLS state exists yet, so a connection that never
        /// speaks costs what an idle plain one does.
        case awaitingClientHello
        /// TLS handshake in progress.
        case handshake
        /// Plain HTTP with HTTP/2 on: the first bytes tell HTTP/1.1 from the HTTP/2 preface
        /// (prior knowledge, h2c; RFC 9113 §3.3).
        case awaitingPreface
        /// A protocol session reads requests and writes responses.
        case open
        /// The response that ends the connection is sent and our side is shut: reading and
        /// discarding until the client closes, so unread input cannot turn our close into a
        /// reset that destroys the response in flight (RFC 9112 §9.6).
        case lingering
    }

    let fd: Int32
    /// Unique per loop: tells a timer entry of this connection from one of an earlier
    /// connection that had the same descriptor.
    let serial: UInt64
    private(set) var facts: ConnectionFacts
    /// The loop outlives its connections. `unowned(unsafe)`: a checked unowned reference costs an
    /// atomic retain and release on every use, several times a request.
    private unowned(unsafe) let loop: LoopContext
    private(set) var stage: Stage
    private var proxy = ProxyStage()
    private(set) var io: IO
    private var session: ProtocolSession?
    private var output = Output()
    /// The first bytes of a plain connection while it may still be the HTTP/2 preface.
    private var sniffed: [UInt8] = []
    private var hostCache = HostCache()
    /// The TLS library needs writability to go on with a read (or readability with a write).
    private var readNeedsWritable = false
    private var writeNeedsReadable = false
    /// Deadline of the transport stages (PROXY header, handshake, lingering).
    private var stageDeadline: Int64
    /// When unsent output last made progress.
    private var lastWrite: Int64
    /// While set, the connection keeps its TLS buffers between requests (it is busy), until
    /// this time, when it has been idle for a moment.
    private var buffersReleaseAt: Int64?
    /// When it last had nothing in flight after an event.
    private var lastIdleAt = Int64.min / 2
    /// The address counted against the per-client limit, released when the connection closes.
    private var countedClient: String?

    init(fd: Int32, io: IO, serial: UInt64, listener: ListenerKind, client: String, loop: LoopContext) {
        self.fd = fd
        self.io = io
        self.serial = serial
        self.loop = loop
        self.facts = ConnectionFacts(listener: listener, client: client, certificate: nil)
        self.lastWrite = loop.clock.now
        if loop.transport.proxyProtocol, listener != .admin {
            stage = .proxyHeader
            stageDeadline = loop.clock.now + loop.transport.handshakeTimeout
        } else if listener == .https || (listener == .admin && loop.adminTLS != nil) {
            stage = .awaitingClientHello
            stageDeadline = loop.clock.now + loop.transport.handshakeTimeout
        } else {
            stage = .open
            stageDeadline = 0
            startPlainSession()
        }
    }

    // MARK: - What the loop asks

    /// Counts the connection against its client's limit (docs/serving.md, "HTTP/1.1 and limits"); false when the client
    /// already holds as many as it may. Without PROXY protocol the loop asks at accept; with
    /// it, the address is the one the header gives, so it is asked when the header is read.
    func admitClient() -> Bool {
        guard let limit = loop.transport.perClientLimit(facts.listener) else { return true }
        guard loop.state.admit(facts.client, limit: limit) else { return false }
        countedClient = facts.client
        return true
    }

    /// Takes an event and answers what to do next.
    func handle(_ event: Event) -> Action {
        // The output buffer is the loop's while this connection works, and goes back once
        // everything is written: an idle connection keeps none, and a busy one allocates none.
        if output.buffer.capacity == 0 { swap(&output.buffer, &loop.spareOutput) }
        let keep: Bool
        switch event {
        case .start: keep = start()
        case .ready(let events): keep = handle(events: events)
        case .deadline: keep = deadlineReached()
        case .drain: keep = drain()
        case .closeIdle: keep = closeIfIdle()
        }
        if output.buffer.isEmpty, output.body == nil {
            if loop.spareOutput.capacity == 0 { swap(&output.buffer, &loop.spareOutput) } else { output.buffer = [] }
        }
        if keep, event != .deadline, stage == .open, io.hasBuffers, allSent, session?.isIdle == true {
            idleAfterUse()
        }
        return keep ? .wait(events: wantedEvents, until: deadline) : .close
    }

    /// The first turn, straight after accept: with TCP_DEFER_ACCEPT the first bytes are usually
    /// here already. A TLS connection whose ClientHello has not come makes no TLS state yet
    /// (OpenSSL's buffers are some 30 KB): a peek tells, as nginx does.
    private func start() -> Bool {
        if stage == .awaitingClientHello {
            var probe: UInt8 = 0
            switch withUnsafeMutableBytes(of: &probe, { io.peek(into: $0) }) {
            case .wouldBlock: return true
            case .bytes: break
            case .closed: return false
            }
        }
        return handle(events: Epoll.readable)
    }

    /// Whether the per-client limit is checked at accept (no PROXY header to wait for).
    var admitsAtAccept: Bool { stage != .proxyHeader }

    /// Handles readiness. Returns false when the connection is finished: the loop closes it.
    private func handle(events: UInt32) -> Bool {
        if events & Epoll.hangup != 0, events & Epoll.readable == 0 { return false }
        switch stage {
        case .proxyHeader:
            return readProxyHeader()
        case .awaitingClientHello, .handshake:
            return handshake()
        case .awaitingPreface:
            return readPreface()
        case .open:
            if events & Epoll.writable != 0 || readNeedsWritable {
                readNeedsWritable = false
                guard flush() else { return false }
            }
            if stage == .open, events & Epoll.readable != 0 || writeNeedsReadable {
                writeNeedsReadable = false
                return readAndAnswer()
            }
            return true
        case .lingering:
            return linger()
        }
    }

    /// The events to wait for now.
    var wantedEvents: UInt32 {
        switch stage {
        case .proxyHeader, .awaitingClientHello, .awaitingPreface, .lingering:
            return Epoll.readable
        case .handshake:
            return readNeedsWritable ? Epoll.writable : Epoll.readable
        case .open:
            var want: UInt32 = 0
            if !allSent || readNeedsWritable { want |= Epoll.writable }
            if acceptsInput || writeNeedsReadable { want |= Epoll.readable }
            return want
        }
    }

    /// When ``deadlineReached()`` is due.
    var deadline: Int64? {
        switch stage {
        case .proxyHeader, .awaitingClientHello, .handshake, .awaitingPreface, .lingering:
            return stageDeadline
        case .open:
            if !allSent { return lastWrite + loop.transport.writeStallTimeout }
            guard let release = buffersReleaseAt else { return session?.deadline }
            return min(release, session?.deadline ?? release)
        }
    }

    /// Nothing in flight after reading or writing (not after a deadline, which used no buffer and
    /// may be the release itself). OpenSSL gives a TLS connection's record buffers back after each
    /// record; one idle again soon after the last time is busy, and keeps them until it has been
    /// idle for a moment. One that made a request and now waits holds none.
    private func idleAfterUse() {
        let now = loop.clock.now
        if now - lastIdleAt < loop.transport.idleBufferRelease {
            if buffersReleaseAt == nil { io.keepBuffers(true) }
            buffersReleaseAt = now + loop.transport.idleBufferRelease
        }
        lastIdleAt = now
    }

    /// A deadline passed. Returns false when the connection is to be closed.
    private func deadlineReached() -> Bool {
        guard stage == .open, let session, allSent else { return false }
        let now = loop.clock.now
        if let release = buffersReleaseAt, now >= release {
            buffersReleaseAt = nil
            io.keepBuffers(false)
        }
        guard let due = session.deadline, now >= due else { return true }
        session.deadlineReached(output: &output)
        if session.isClosing, output.isEmpty { return false }
        return flush()
    }

    /// Graceful stop. Returns false when the connection can close now.
    private func drain() -> Bool {
        guard stage == .open, let session else { return true }
        session.drain(output: &output)
        if session.isClosing, allSent { return false }
        return flush()
    }

    /// The drain's delay is over. A connection still in its PROXY header or TLS handshake has a
    /// request on its way, and keeps its stage deadline. Returns false when it can close now.
    private func closeIfIdle() -> Bool {
        guard stage == .open, let session else { return true }
        session.closeIdle()
        if session.isClosing, allSent { return false }
        return flush()
    }

    /// Frees the TLS state; the loop closes the descriptor.
    func release() {
        if let countedClient { loop.state.release(countedClient) }
        countedClient = nil
        io.dropTLS()
        session = nil
    }

    // MARK: - Transport stages

    private func readProxyHeader() -> Bool {
        switch proxy.read(&io, scratch: loop.scratch) {
        case .needMore:
            return true
        case .failed(let reason):
            loop.log.debug("\(facts.client): closing: \(reason)")
            return false
        case .done(let client):
            if let client { facts.client = client }
            guard admitClient() else {
                loop.log.debug("\(facts.client): over --max-connections-per-client; closed")
                return false
            }
            stageDeadline = loop.clock.now + loop.transport.handshakeTimeout
            if facts.listener == .https {
                stage = .awaitingClientHello
                return handshake()
            }
            stage = .open
            startPlainSession()
            return stage == .awaitingPreface ? readPreface() : readAndAnswer()
        }
    }

    private func handshake() -> Bool {
        if stage == .awaitingClientHello, facts.listener == .admin, let admin = loop.adminTLS {
            // The admin listener's one certificate, whatever name the client asks for, ALPN
            // http/1.1 only.
            guard let certificates = admin.certificates(loop.snapshot.certificates),
                  io.startTLS(certificates: certificates, settings: admin.settings) else {
                loop.log.error("admin: no certificate \(admin.name) to serve the admin listener over TLS; closing the connection")
                return false
            }
            stage = .handshake
        }
        if stage == .awaitingClientHello {
            guard io.startTLS(certificates: loop.snapshot.certificates, settings: loop.state.tls) else {
                loop.missingCertificate()
                return false
            }
            stage = .handshake
        }
        switch io.handshake() {
        case .established(let alpn, let certificate):
            loop.state.metrics.tlsHandshakes.add(1, ordering: .relaxed)
            // A TLS-ALPN-01 validation ends with the handshake (RFC 8737 §3).
            if alpn == PendingChallenges.alpnProtocol {
                io.sendCloseNotify()
                return false
            }
            facts.certificate = certificate
            readNeedsWritable = false
            stage = .open
            if alpn == "h2", let http2 = loop.http2, facts.listener != .admin {
                let session = HTTP2Session(configuration: http2, clock: loop.clock, dispatch: self)
                start(session)
                // Our SETTINGS go first (RFC 9113 §3.4).
                session.resume(output: &output)
            } else {
                start(HTTP1Session(configuration: facts.listener == .admin ? loop.adminHTTP1 : loop.http1, clock: loop.clock, dispatch: self))
            }
            // Application data may have arrived with the last handshake flight.
            guard flush() else { return false }
            return readAndAnswer()
        case .wantRead:
            readNeedsWritable = false
            return true
        case .wantWrite:
            readNeedsWritable = true
            return true
        case .failed:
            loop.state.metrics.tlsHandshakeErrors.add(1, ordering: .relaxed)
            return false
        case .plainHTTP:
            loop.state.metrics.tlsHandshakeErrors.add(1, ordering: .relaxed)
            // Plain HTTP sent to the TLS port: answer it in plain HTTP, as nginx does, then close.
            io.dropTLS()
            stage = .open
            output.buffer.append(contentsOf: Self.plainHTTPAnswer(date: loop.clock.date))
            return flushThenClose()
        }
    }

    private static func plainHTTPAnswer(date: [UInt8]) -> [UInt8] {
        let body = "this port speaks HTTPS; plain HTTP was sent\n"
        return Array("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nX-Content-Type-Options: nosniff\r\nDate: ".utf8)
            + date + Array("\r\nConnection: close\r\n\r\n\(body)".utf8)
    }

    private func start(_ session: ProtocolSession) {
        self.session = session
        if loop.draining { session.drain(output: &output) }
    }

    /// A plain connection (HTTP or admin) past any PROXY header. The admin listener stays
    /// HTTP/1.1 (docs/serving.md, "HTTP/2"); with HTTP/2 on, a client listener first looks at the opening bytes.
    private func startPlainSession() {
        if facts.listener == .http, loop.http2 != nil {
            stage = .awaitingPreface
            stageDeadline = loop.clock.now + loop.http1.headerTimeout
        } else {
            start(HTTP1Session(configuration: facts.listener == .admin ? loop.adminHTTP1 : loop.http1, clock: loop.clock, dispatch: self))
        }
    }

    /// Reads until ``ProtocolSelector`` can tell HTTP/2's preface from HTTP/1.1, then hands the
    /// bytes to the session they belong to.
    private func readPreface() -> Bool {
        let scratch = loop.scratch
        while stage == .awaitingPreface {
            switch io.read(into: scratch.baseAddress!, count: scratch.count) {
            case .done(let n):
                sniffed.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
            case .wantRead:
                return true
            default:
                return false
            }
            let decision = ProtocolSelector.decide(sniffed)
            if decision == .needMore { continue }
            stage = .open
            if decision == .http2, let http2 = loop.http2 {
                start(HTTP2Session(configuration: http2, clock: loop.clock, dispatch: self))
            } else {
                start(HTTP1Session(configuration: loop.http1, clock: loop.clock, dispatch: self, mayBeHTTP2Preface: true))
            }
            let bytes = sniffed
            sniffed = []
            bytes.withUnsafeBytes { session!.receive($0, output: &output) }
            guard flush() else { return false }
            return readAndAnswer()
        }
        return true
    }

    // MARK: - Reading and writing

    /// The capacity of the output buffer the connection holds between events (tests).
    var heldOutputCapacity: Int { output.buffer.capacity }
    /// Bytes the output buffer holds now, written or not (tests).
    var heldOutputBytes: Int { output.buffer.count }

    /// Nothing left to send: not in the output, not inside TLS.
    private var allSent: Bool { output.isEmpty && !io.hasPendingOutput }

    /// Whether to read now: the session says, by its own high-water mark.
    private var acceptsInput: Bool {
        guard let session else { return false }
        return session.wantsInput(output)
    }

    /// Reads what is available and lets the session answer it. Returns false when the
    /// connection is to be closed.
    private func readAndAnswer() -> Bool {
        let scratch = loop.scratch
        while stage == .open, acceptsInput, let session {
            switch io.read(into: scratch.baseAddress!, count: scratch.count) {
            case .done(let n):
                session.receive(UnsafeRawBufferPointer(rebasing: scratch[0..<n]), output: &output)
                guard flush() else { return false }
                // Level-triggered epoll reports more data in the socket; only what TLS has
                // already read in needs another read now. Saves a read that would block.
                if n < scratch.count, !io.hasBufferedInput { return true }
            case .wantRead:
                return true
            case .wantWrite:
                readNeedsWritable = true
                return true
            case .closed:
                session.peerClosed(output: &output)
                // Nothing left to send: close now, there is nothing to linger for.
                return allSent ? false : flush()
            case .failed:
                return false
            }
        }
        return true
    }

    /// Writes pending output: the buffer, then a large body from its prepared bytes. When
    /// everything is out the session queues what waited behind it (a pipelined request, more
    /// frames). Returns false when the connection is to be closed.
    private func flush() -> Bool {
        while true {
            // A head before a large body: TLS sends the two in one write(2).
            let bodyFollows = output.body != nil
            while output.sent < output.buffer.count {
                let r = output.buffer.withUnsafeBytes {
                    io.write($0.baseAddress! + output.sent, count: $0.count - output.sent, moreFollows: bodyFollows)
                }
                guard case .done(let n) = r else { return waitForWrite(r) }
                output.sent += n
                lastWrite = loop.clock.now
            }
            if let body = output.body {
                while output.bodySent < body.count {
                    let r = body.withUnsafeBytes { io.write($0.baseAddress! + output.bodySent, count: $0.count - output.bodySent) }
                    guard case .done(let n) = r else { return waitForWrite(r) }
                    output.bodySent += n
                    lastWrite = loop.clock.now
                }
            }
            if io.hasPendingOutput {
                let r = io.flushPendingOutput()
                guard case .done = r else { return waitForWrite(r) }
                lastWrite = loop.clock.now
            }
            output.reset()
            guard let session else { return false }
            if session.isClosing { return startClosing() }
            session.resume(output: &output)
            if output.isEmpty { return session.isClosing ? startClosing() : true }
        }
    }

    private func waitForWrite(_ r: TLSStream.Progress) -> Bool {
        // The session may append while bytes wait: what was written goes, so the buffer holds
        // only what is still to write (docs/serving.md, "HTTP/2").
        output.dropWritten()
        switch r {
        case .wantWrite: return true
        case .wantRead: writeNeedsReadable = true; return true
        default: return false
        }
    }

    private func flushThenClose() -> Bool {
        while output.sent < output.buffer.count {
            let r = output.buffer.withUnsafeBytes { io.write($0.baseAddress! + output.sent, count: $0.count - output.sent) }
            guard case .done(let n) = r else { break }
            output.sent += n
        }
        return startClosing()
    }

    /// Everything is written and the session is done: close at once when nothing can be
    /// lost, else shut our side and linger.
    private func startClosing() -> Bool {
        io.sendCloseNotify()
        if let session, !session.lingersOnClose {
            var probe: UInt8 = 0
            if withUnsafeMutableBytes(of: &probe, { io.peek(into: $0) }) == .wouldBlock { return false }
        }
        io.shutdownWrite()
        stage = .lingering
        stageDeadline = loop.clock.now + loop.transport.lingerTimeout
        return true
    }

    private func linger() -> Bool {
        io.dropIncoming(scratch: loop.scratch)
    }

    // MARK: - RequestDispatch

    func respond(to request: HTTPRequest, startedMicroseconds: Int64) -> Response {
        // The facts lent in place: passed by value from a property, they were copied (the
        // client's String and the certificate retained and released, some 60 instructions a
        // request, callgrind).
        loop.respond(to: request, connection: &facts, cache: &hostCache, startedMicroseconds: startedMicroseconds)
    }

    func respond(toRequestIn request: inout HTTPRequest, startedMicroseconds: Int64) -> Response {
        loop.respond(to: request, connection: &facts, cache: &hostCache, startedMicroseconds: startedMicroseconds)
    }

    func refuse(_ error: HTTPError, startedMicroseconds: Int64) -> Response {
        loop.refuse(error, connection: facts, startedMicroseconds: startedMicroseconds)
    }

    func wantsBody(of request: HTTPRequest) -> Bool {
        facts.listener != .admin || AdminResponder.wantsBody(of: request, state: loop.state)
    }
}
