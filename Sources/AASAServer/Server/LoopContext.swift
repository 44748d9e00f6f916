import AASACore
import AASAHTTP
import AASATransport
import AASASessions

/// What the connections of one loop share: the clock, the current snapshot, the settings of
/// each layer, the access log and the request counters. Touched by its loop's thread only.
final class LoopContext {
    let state: ServerState
    let clock = LoopClock(now: monotonicMilliseconds(), wallSecond: wallClockSeconds(), microseconds: monotonicMicroseconds)
    let transport: TransportConfiguration
    let http1: HTTP1Configuration
    /// The admin listener's: the write API reads request bodies (docs/platforms.md).
    let adminHTTP1: HTTP1Configuration
    /// `--admin-tls NAME`: the admin listener's certificate and its context.
    let adminTLS: AdminTLS?
    /// nil when HTTP/2 is off (`--http2 off`).
    let http2: HTTP2Configuration?
    let log: Log
    var snapshot: SiteSnapshot { didSet { snapshotSerial &+= 1 } }
    /// Counts the snapshots this loop has served: how a connection's ``HostCache`` knows its
    /// entry is from the current one without holding a reference to it.
    private(set) var snapshotSerial = 0
    let accessLog: AccessLog
    private let counters: LoopCounters
    /// Each listener's handlers, built once.
    private let handlers: HandlerChain
    /// Where every read lands before a session takes the bytes.
    let scratch: UnsafeMutableRawBufferPointer
    /// The output buffer a connection borrows while it works (``Connection/handle(_:)``): one
    /// connection runs at a time, so one buffer serves the loop, and idle connections keep none.
    var spareOutput: [UInt8] = []
    /// Set once the server starts draining: new sessions start drained.
    var draining = false

    init(state: ServerState, counters: LoopCounters, transport: TransportConfiguration, http1: HTTP1Configuration,
         http2: HTTP2Configuration?, log: Log, accessLogFormat: LogFormat) {
        self.state = state
        self.counters = counters
        self.transport = transport
        self.http1 = http1
        self.adminHTTP1 = http1.admin
        self.adminTLS = state.adminTLS.map { AdminTLS(name: $0) }
        self.http2 = http2
        self.log = log
        self.accessLog = AccessLog(format: accessLogFormat)
        self.handlers = HandlerChain(state: state)
        self.snapshot = state.snapshots.load().0
        self.scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit { scratch.deallocate() }

    func flushAccessLog() { accessLog.flush() }

    private var missingCertificateLogged = false

    /// A TLS connection arrived while no certificate is loaded: said once per loop.
    func missingCertificate() {
        state.metrics.tlsHandshakeErrors.add(1, ordering: .relaxed)
        guard !missingCertificateLogged else { return }
        missingCertificateLogged = true
        log.error("https: no certificate loaded; closing TLS connections")
    }

    /// The one road from a request to its response, for both protocols: the first handler of
    /// the listener's chain that takes the request, then the access log and the metrics as the
    /// handler says. `connection` is `inout` only to be lent without a copy; it is not changed.
    func respond(to request: HTTPRequest, connection: inout ConnectionFacts, cache: inout HostCache, startedMicroseconds: Int64) -> Response {
        cache.follow(snapshot: snapshotSerial)
        switch connection.listener {
        case .admin:
            return dispatch(handlers.admin, request, connection, &cache, startedMicroseconds)
        case .http:
            if let dashboard = handlers.dashboard, dashboard.handles(request, snapshot: snapshot) {
                return dispatch(dashboard, request, connection, &cache, startedMicroseconds)
            }
            if let challenges = handlers.challenges, challenges.handles(request, snapshot: snapshot) {
                return dispatch(challenges, request, connection, &cache, startedMicroseconds)
            }
            return dispatch(handlers.files, request, connection, &cache, startedMicroseconds)
        case .https:
            return dispatch(handlers.files, request, connection, &cache, startedMicroseconds)
        }
    }

    /// One handler's answer, recorded as it says. Generic, so each handler is called directly.
    @inline(__always)
    private func dispatch<H: RequestHandler>(_ handler: H, _ request: HTTPRequest, _ connection: ConnectionFacts,
                                             _ cache: inout HostCache, _ startedMicroseconds: Int64) -> Response {
        // Read once: each read of the property retained and released it.
        let snapshot = self.snapshot
        let answer = handler.respond(to: request, snapshot: snapshot, connection: connection, cache: &cache)
        var fetcher: StaticString?
        switch handler.recording {
        case .logged: fetcher = record(answer, request: request, connection: connection, startedMicroseconds: startedMicroseconds)
        case .counted: counters.count(site: answer.site, file: answer.file, status: answer.status)
        case .unrecorded: return answer.response
        }
        handler.answered(request, with: answer, connection: connection, fetcher: fetcher, snapshot: snapshot)
        return answer.response
    }

    /// The answer to a request refused before any handler saw it (malformed, too large, too slow).
    func refuse(_ error: HTTPError, connection: ConnectionFacts, startedMicroseconds: Int64) -> Response {
        let response = Response.message(error.status, error.reason + "\n", request: nil)
        if connection.listener != .admin {
            counters.count(site: "unknown", file: .other, status: response.status)
            accessLog.appendRefused(timeMilliseconds: wallClockMilliseconds(), client: connection.client, status: response.status,
                                    bytes: response.bodyBytes, durationMicroseconds: duration(since: startedMicroseconds))
        }
        return response
    }

    /// Counts and logs a response; returns who fetched, as the access log tells from the agent.
    private func record(_ answer: Answer, request: HTTPRequest, connection: ConnectionFacts, startedMicroseconds: Int64) -> StaticString? {
        counters.count(site: answer.site, file: answer.file, status: answer.status)
        return accessLog.append(timeMilliseconds: wallClockMilliseconds(), client: connection.client, request: request,
                                status: answer.status, bytes: answer.response.bodyBytes,
                                durationMicroseconds: duration(since: startedMicroseconds))
    }

    private func duration(since startedMicroseconds: Int64) -> Int64 {
        startedMicroseconds == 0 ? 0 : clock.microseconds() - startedMicroseconds
    }
}
