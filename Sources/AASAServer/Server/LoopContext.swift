import AASACore
import AASAHTTP

/// What the connections of one loop share: the clock, the current snapshot, the settings of
/// each layer, the access log and the request counters. Touched by its loop's thread only.
final class LoopContext {
    let state: ServerState
    let clock = LoopClock(now: monotonicMilliseconds(), wallSecond: wallClockSeconds())
    let transport: TransportConfiguration
    let http1: HTTP1Configuration
    /// nil when HTTP/2 is off (`--http2 off`).
    let http2: HTTP2Configuration?
    let log: Log
    var snapshot: SiteSnapshot
    let accessLog: AccessLog
    private let counters: LoopCounters
    /// Where every read lands before a session takes the bytes.
    let scratch: UnsafeMutableRawBufferPointer
    /// Set once the server starts draining: new sessions start drained.
    var draining = false

    init(state: ServerState, counters: LoopCounters, transport: TransportConfiguration, http1: HTTP1Configuration,
         http2: HTTP2Configuration?, log: Log, accessLogFormat: LogFormat) {
        self.state = state
        self.counters = counters
        self.transport = transport
        self.http1 = http1
        self.http2 = http2
        self.log = log
        self.accessLog = AccessLog(format: accessLogFormat)
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

    /// The one road from a request to its response, for both protocols: the handler the
    /// listener and host call for, then the access log and the metrics.
    func respond(to request: HTTPRequest, connection: ConnectionFacts, cache: inout HostCache, startedMicroseconds: Int64) -> Response {
        switch connection.listener {
        case .admin:
            // Health checks and scrapes are neither logged nor counted: they would drown the
            // requests that matter.
            return AdminResponder.respond(to: request, state: state)
        case .http where state.dev != nil && Dashboard.handles(request, snapshot: snapshot):
            // The dashboard polls every 2 s: counted, but kept out of the access log.
            let response = Dashboard.respond(to: request, snapshot: snapshot, dev: state.dev!, appleView: state.appleView)
            counters.count(site: response.siteLabel, file: response.file, status: response.status)
            return response
        case .http where state.acme != nil && ACMEChallengeHandler.handles(request):
            let response = ACMEChallengeHandler.respond(to: request, challenges: .shared)
            record(response, request: request, connection: connection, startedMicroseconds: startedMicroseconds)
            return response
        case .http, .https:
            let response = AssociationFileHandler.respond(to: request, snapshot: snapshot, connection: connection, cache: &cache,
                                                         dev: state.dev != nil)
            if let dev = state.dev, AssociationFileHandler.isAssociationPath(request.path) {
                dev.fetches.append(timeMilliseconds: wallClockMilliseconds(), client: connection.client, host: request.host ?? "",
                                   path: String(request.target.prefix(256)), status: response.status, userAgent: request.userAgent ?? "")
            }
            // Apple's CDN or a device fetching the AASA file (README, "What Apple sees"): the
            // access log has read the agent already; any other request pays one test of nil.
            if let fetcher = record(response, request: request, connection: connection, startedMicroseconds: startedMicroseconds),
               FetchRecords.isAASAPath(request.path), response.siteLabel != "unknown", request.method == .get || request.method == .head {
                state.appleView.fetches.record(FetchRecords.fetcher(fetcher), site: response.siteLabel, host: request.host ?? "",
                                               status: response.status, client: connection.client, snapshot: snapshot)
            }
            return response
        }
    }

    /// The answer to a request refused before any handler saw it (malformed, too large, too slow).
    func refuse(_ error: HTTPError, connection: ConnectionFacts, startedMicroseconds: Int64) -> Response {
        let response = Response.message(error.status, error.reason + "\n", request: nil, site: "unknown")
        if connection.listener != .admin {
            record(response, request: nil, connection: connection, startedMicroseconds: startedMicroseconds)
        }
        return response
    }

    /// Counts and logs a response; returns who fetched, as the access log tells from the agent.
    @discardableResult
    private func record(_ response: Response, request: HTTPRequest?, connection: ConnectionFacts, startedMicroseconds: Int64) -> StaticString? {
        counters.count(site: response.siteLabel, file: response.file, status: response.status)
        return accessLog.append(timeMilliseconds: wallClockMilliseconds(), client: connection.client, request: request,
                         status: response.status, bytes: response.bodyBytes,
                         durationMicroseconds: startedMicroseconds == 0 ? 0 : monotonicMicroseconds() - startedMicroseconds)
    }
}
