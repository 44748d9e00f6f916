import AASACore
import AASAHTTP
import AASASessions
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The monitor's admin endpoint: `/healthz`, `/readyz`, `/metrics`, `/status` (docs/monitor.md).
/// Requests are read and answers framed by the server's own HTTP/1.1 session (``HTTP1Session``:
/// the same parser and limits, keep-alive, and 400, 408 and 431 answers as `aasa serve`'s
/// listeners), driven by a small blocking loop rather than the server's event loops: one thread
/// accepts, and each connection has a thread of its own, at most ``maxConnections`` at once (more
/// wait in the backlog), so a client that sends slowly holds up no other. One request a
/// connection. It is for a scraper and an operator on a private address.
package final class MonitorAdmin: Sendable {
    let fd: Int32
    package let address: SocketAddress
    let monitor: Monitor
    /// Connections served at once; a scraper and an operator need few.
    static let maxConnections = 8
    private let open = Locked(0)

    package init(address: SocketAddress, monitor: Monitor) throws(SystemError) {
        (fd, self.address) = try Socket.listen(on: address, backlog: 64)
        self.monitor = monitor
    }

    /// A request head complete within 5 s of the connection's start (a 408 otherwise), an answer
    /// written within 5 s.
    static var http1: HTTP1Configuration {
        var c = HTTP1Configuration()
        c.headerTimeout = 5000
        c.idleTimeout = 5000
        return c
    }

    static let writeMilliseconds: Int64 = 5000

    /// Answers on threads of its own until `stop` says so.
    package func start(stop: @escaping @Sendable () -> Bool) {
        let thread = startThread { [self] in
            while !stop() {
                guard open.withLock({ $0 }) < MonitorAdmin.maxConnections else {
                    usleep(10_000)
                    continue
                }
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                guard case .accepted(let client, _) = Socket.accept(fd) else { continue }
                open.withLock { $0 += 1 }
                let served = tryStartThread { [self] in
                    serve(client, stop: stop)
                    close(client)
                    open.withLock { $0 -= 1 }
                }
                switch served {
                case .success(let t): pthread_detach(t)
                case .failure:
                    close(client)
                    open.withLock { $0 -= 1 }
                }
            }
        }
        pthread_detach(thread)
    }

    /// One connection, until its session closes it, the peer goes, or the monitor stops.
    private func serve(_ client: Int32, stop: () -> Bool) {
        let clock = LoopClock(now: monotonicMilliseconds(), wallSecond: Int(wallClockMilliseconds() / 1000), microseconds: monotonicMicroseconds)
        let dispatch = AdminDispatch(admin: self)
        let session = HTTP1Session(configuration: MonitorAdmin.http1, clock: clock, dispatch: dispatch)
        var output = Output()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        // One request a connection, answered with `Connection: close` (a draining session's
        // way): a scraper reconnects anyway, and a client that reads to the close is not kept
        // waiting for an idle time-out.
        session.drain(output: &output)
        // The session holds its dispatch unowned: it lives as long as this call.
        withExtendedLifetime(dispatch) {
            while true {
                guard flush(&output, session, client) else { return }
                if session.isClosing {
                    if session.lingersOnClose { linger(client, &buffer) }
                    return
                }
                if stop() {
                    session.drain(output: &output)
                    if session.isClosing { return }
                }
                tick(clock)
                let wait = min(100, max(0, (session.deadline ?? clock.now + 100) - clock.now))
                var p = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
                let ready = poll(&p, 1, Int32(wait))
                tick(clock)
                if ready <= 0 {
                    if let deadline = session.deadline, clock.now >= deadline { session.deadlineReached(output: &output) }
                    continue
                }
                let n = read(client, &buffer, buffer.count)
                if n > 0 {
                    buffer.withUnsafeBytes { session.receive(UnsafeRawBufferPointer(rebasing: $0[0..<n]), output: &output) }
                } else if n == 0 {
                    session.peerClosed(output: &output)
                } else if errno != EAGAIN, errno != EINTR {
                    return
                }
            }
        }
    }

    /// Closing with unread bytes from the peer would reset the connection and could destroy the
    /// answer on its way (RFC 9112 §9.6): our side is shut, and what comes is read and dropped
    /// until the peer closes, for a second at most.
    private func linger(_ client: Int32, _ buffer: inout [UInt8]) {
        shutdown(client, Int32(SHUT_WR))
        let deadline = monotonicMilliseconds() + 1000
        while monotonicMilliseconds() < deadline {
            var p = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 100) >= 0 else { return }
            let n = read(client, &buffer, buffer.count)
            if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return }
        }
    }

    private func tick(_ clock: LoopClock) {
        clock.now = monotonicMilliseconds()
        clock.setWallClock(second: Int(wallClockMilliseconds() / 1000))
    }

    /// Writes what the session queued (its buffer, then a body it holds by reference) and what
    /// it queues behind that; false when the peer cannot take it within the write time.
    private func flush(_ output: inout Output, _ session: HTTP1Session, _ client: Int32) -> Bool {
        let deadline = monotonicMilliseconds() + MonitorAdmin.writeMilliseconds
        while !output.isEmpty {
            guard send(output.buffer, from: &output.sent, client, deadline) else { return false }
            if let body = output.body { guard send(body, from: &output.bodySent, client, deadline) else { return false } }
            output.reset()
            if session.isClosing { return true }
            session.resume(output: &output)
        }
        return true
    }

    private func send(_ bytes: [UInt8], from offset: inout Int, _ client: Int32, _ deadline: Int64) -> Bool {
        while offset < bytes.count {
            let left = deadline - monotonicMilliseconds()
            guard left > 0 else { return false }
            let n = bytes.withUnsafeBytes { Glibc.send(client, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
                continue
            }
            guard n < 0, errno == EAGAIN || errno == EINTR else { return false }
            var p = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, Int32(min(left, 1000)))
        }
        return true
    }

    /// Status, content type and body for a GET of `target`.
    package func respond(_ target: String) -> (Int, String, String) {
        switch target.prefix(while: { $0 != "?" }) {
        case "/healthz":
            return (200, "text/plain", "ok\n")
        case "/readyz":
            return monitor.state.withLock(\.ready) ? (200, "text/plain", "ready\n") : (503, "text/plain", "the domains file is not read yet\n")
        case "/metrics":
            return (200, "text/plain; version=0.0.4", monitor.state.withLock { MonitorReport.metrics($0) })
        case "/status":
            return status(target)
        default:
            return (404, "application/json", #"{"error":"not found"}"# + "\n")
        }
    }

    /// Pages as the server's `/status` pages sites: in byte order of host, `after` the last one
    /// shown, at most `limit` (1 to 1 000, default 1 000), `state=` on the origin's state,
    /// `domain=HOST` for one domain (404 when it is not watched); the query read as the server's
    /// admin endpoints read theirs (``QueryString``).
    private func status(_ target: String) -> (Int, String, String) {
        func query(_ name: String) -> String? { QueryString.value(name, in: target) }
        var limit = 1000
        if let text = query("limit") {
            guard let n = Int(text), (1...1000).contains(n) else {
                return (400, "application/json", #"{"error":"limit must be a whole number from 1 to 1000"}"# + "\n")
            }
            limit = n
        }
        var stateFilter: OriginState?
        if let text = query("state") {
            guard let s = OriginState(rawValue: text) else {
                return (400, "application/json", #"{"error":"state must be ok, warn, failing or pending"}"# + "\n")
            }
            stateFilter = s
        }
        // The state's lock is held only to copy what the answer shows; the JSON (1.7 MB for a page
        // of 1 000 domains) is made outside it. Made under it, each page of 10 000 domains held up
        // the scheduler and the checks finishing, which take the same lock (docs/performance.md).
        if let host = query("domain") {
            let name = URLParts.normalizeHost(host)
            let page = monitor.state.withLock { s in s.records[name] == nil ? nil : MonitorReport.page(s, listed: [name], next: nil) }
            guard let page else {
                var w = JSONWriter()
                w.beginObject(); w.key("error"); w.value("no domain \(name) is watched"); w.endObject()
                return (404, "application/json", w.output + "\n")
            }
            return (200, "application/json", MonitorReport.render(page) + "\n")
        }
        let after = query("after").flatMap { $0.isEmpty ? nil : $0 }
        var hosts = monitor.state.withLock { s in
            s.records.compactMap { host, record in
                (after == nil || after!.utf8.lexicographicallyPrecedes(host.utf8)) && (stateFilter == nil || record.origin.state == stateFilter)
                    ? host : nil
            }
        }
        hosts.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let listed = Array(hosts.prefix(limit))
        let page = monitor.state.withLock { MonitorReport.page($0, listed: listed, next: hosts.count > limit ? listed.last : nil) }
        return (200, "application/json", MonitorReport.render(page) + "\n")
    }
}

/// What the admin's session asks of it: an answer per request, the session's refusals as the
/// server words them (`400`, `408`, `431` with their reason).
private final class AdminDispatch: RequestDispatch {
    let admin: MonitorAdmin

    init(admin: MonitorAdmin) { self.admin = admin }

    func respond(to request: HTTPRequest, startedMicroseconds: Int64) -> Response {
        let noStore = [(name: "cache-control", value: "no-store")]
        guard request.method == .get || request.method == .head else {
            return Response.message(.methodNotAllowed, "only GET\n", request: request, extraFields: noStore + [("allow", "GET, HEAD")])
        }
        let (status, type, body) = admin.respond(request.target)
        return Response.message(HTTPStatus(rawValue: status) ?? .internalServerError, body, request: request, contentType: type, extraFields: noStore)
    }

    func respond(toRequestIn request: inout HTTPRequest, startedMicroseconds: Int64) -> Response {
        respond(to: request, startedMicroseconds: startedMicroseconds)
    }

    func refuse(_ error: HTTPError, startedMicroseconds: Int64) -> Response {
        Response.message(error.status, error.reason + "\n", request: nil)
    }

    /// Bodies are read and dropped (the admin takes none): nothing to refuse before one comes.
    func wantsBody(of request: HTTPRequest) -> Bool { true }
}
