import AASAHTTP
import AASATransport
import AASASessions

/// One kind of answer — association files, the admin endpoints, the development dashboard,
/// ACME's HTTP-01 challenges — the same for HTTP/1.1 and HTTP/2: a request and the facts of its
/// connection in, an ``Answer`` out. Each listener has a chain of them, built at start
/// (``HandlerChain``); the first that ``handles(_:snapshot:)`` a request answers it, and the
/// one dispatcher, ``LoopContext/respond(to:connection:cache:startedMicroseconds:)``, records
/// the answer as ``recording`` says. Handlers are classes, made once per loop.
protocol RequestHandler: AnyObject {
    /// How the dispatcher records this handler's answers.
    var recording: ResponseRecording { get }

    /// Whether this handler answers `request`.
    func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool

    /// - Parameter cache: the connection's last Host and its site (HTTP/1.1 keep-alive asks
    ///   the same host again and again).
    func respond(to request: HTTPRequest, snapshot: SiteSnapshot, connection: ConnectionFacts, cache: inout HostCache) -> Answer

    /// Called after the answer was recorded; `fetcher` is who the access log took the client
    /// for (Apple's CDN, a device), when it was logged.
    func answered(_ request: HTTPRequest, with response: Answer, connection: ConnectionFacts, fetcher: StaticString?,
                  snapshot: SiteSnapshot)
}

extension RequestHandler {
    func answered(_ request: HTTPRequest, with response: Answer, connection: ConnectionFacts, fetcher: StaticString?,
                  snapshot: SiteSnapshot) {}
}

/// What the dispatcher writes for an answer.
enum ResponseRecording {
    /// The access log and the request metrics.
    case logged
    /// The request metrics only (the dashboard polls every 2 s: it would drown the log).
    case counted
    /// Neither (health checks and scrapes would drown the requests that matter).
    case unrecorded
}

/// The handlers of each kind of listener, made once per loop, in the order they are asked:
/// admin — the admin endpoints; `--http` — the dashboard in development mode, ACME's HTTP-01
/// challenges with `--acme`, then the association files; HTTPS — the association files. The
/// order is fixed, so the chain is fields, not an array of existentials: the dispatcher calls each
/// handler statically (a call through the protocol cost some 500 instructions a request).
struct HandlerChain {
    let admin: AdminHandler
    let dashboard: DashboardHandler?
    let challenges: ChallengeHandler?
    let files: AssociationFiles

    init(state: ServerState) {
        admin = AdminHandler(state: state)
        dashboard = state.dev.map { DashboardHandler(dev: $0, appleView: state.appleView) }
        self.challenges = state.acme.map { ChallengeHandler(challenges: $0.challenges) }
        files = AssociationFiles(development: state.dev, appleView: state.appleView)
    }
}

// MARK: - The handlers

/// Health, readiness, metrics and status (``AdminResponder``).
final class AdminHandler: RequestHandler {
    let state: ServerState
    init(state: ServerState) { self.state = state }
    var recording: ResponseRecording { .unrecorded }

    func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool { true }

    func respond(to request: HTTPRequest, snapshot: SiteSnapshot, connection: ConnectionFacts, cache: inout HostCache) -> Answer {
        AdminResponder.respond(to: request, state: state)
    }
}

/// The development dashboard (``Dashboard``), for hosts that are not sites.
final class DashboardHandler: RequestHandler {
    let dev: DevelopmentMode
    let appleView: AppleView
    init(dev: DevelopmentMode, appleView: AppleView) {
        self.dev = dev
        self.appleView = appleView
    }
    var recording: ResponseRecording { .counted }

    func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool { Dashboard.handles(request, snapshot: snapshot) }

    func respond(to request: HTTPRequest, snapshot: SiteSnapshot, connection: ConnectionFacts, cache: inout HostCache) -> Answer {
        Dashboard.respond(to: request, snapshot: snapshot, dev: dev, appleView: appleView)
    }
}

/// ACME's HTTP-01 challenges (``ACMEChallengeHandler``).
final class ChallengeHandler: RequestHandler {
    let challenges: PendingChallenges
    init(challenges: PendingChallenges) { self.challenges = challenges }
    var recording: ResponseRecording { .logged }

    func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool { ACMEChallengeHandler.handles(request) }

    func respond(to request: HTTPRequest, snapshot: SiteSnapshot, connection: ConnectionFacts, cache: inout HostCache) -> Answer {
        ACMEChallengeHandler.respond(to: request, challenges: challenges)
    }
}

/// The association files of the sites (``AssociationFileHandler``); after each answer, the
/// development fetch log and the record of Apple's and devices' fetches (docs/apple-view.md).
final class AssociationFiles: RequestHandler {
    let development: DevelopmentMode?
    let appleView: AppleView
    init(development: DevelopmentMode?, appleView: AppleView) {
        self.development = development
        self.appleView = appleView
    }
    var recording: ResponseRecording { .logged }

    func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool { true }

    func respond(to request: HTTPRequest, snapshot: SiteSnapshot, connection: ConnectionFacts, cache: inout HostCache) -> Answer {
        AssociationFileHandler.respond(to: request, snapshot: snapshot, connection: connection, cache: &cache, dev: development != nil)
    }

    func answered(_ request: HTTPRequest, with response: Answer, connection: ConnectionFacts, fetcher: StaticString?,
                  snapshot: SiteSnapshot) {
        if let development, AssociationFileHandler.isAssociationPath(request.path) {
            development.fetches.append(timeMilliseconds: wallClockMilliseconds(), client: connection.client, host: request.host ?? "",
                                       path: String(request.target.prefix(256)), status: response.status, userAgent: request.userAgent ?? "")
        }
        // Apple's CDN or a device fetching the AASA file: the access log has read the agent
        // already; any other request pays one test of nil.
        if let fetcher, FetchRecords.isAASAPath(request.path), response.site != "unknown",
           request.method == .get || request.method == .head {
            appleView.fetches.record(FetchRecords.fetcher(fetcher), site: response.site, host: request.host ?? "",
                                     status: response.status, client: connection.client, snapshot: snapshot)
        }
    }
}
