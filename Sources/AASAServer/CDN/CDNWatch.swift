import AASACore
import AASAHTTP
import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// `--cdn-watch` and its settings (docs/apple-view.md).
public struct CDNWatchConfiguration: Sendable {
    /// `--cdn-base`: where Apple's CDN is; each site is asked at `{base}/a/v1/HOST`.
    public var base = HTTPURL(isSecure: true, host: "app-site-association.cdn-apple.com")
    /// `--cdn-cacert`: a PEM file of CAs to trust for the CDN base (a test or private CDN),
    /// besides the system store: extra trust, so a file that names a private CA still lets the
    /// real CDN verify.
    public var caFile: String?
    /// `--cdn-interval`: the CDN's own max-age for a good copy (6 hours).
    public var intervalSeconds = 21_600
    /// `--cdn-rate`: requests started per second at most.
    public var rate = 2
    /// Each request ends within this, in all (connect, TLS, response).
    public var timeoutMilliseconds: Int64 = 10_000
    /// `aasa/VERSION`.
    public var userAgent = "aasa"

    public init() {}
}

/// Watches the copy Apple's CDN holds of every site that serves an AASA file: one thread that
/// schedules (``CDNSchedule``), and one short-lived thread per request under way, bounded, so
/// a slow or silent CDN holds up nothing but its own checks, and never an event loop, a reload
/// or shutdown (the threads are detached: the process exits without waiting for them).
final class CDNWatch: Sendable {
    let configuration: CDNWatchConfiguration
    private let state = Locked<WatchState>(WatchState())

    private struct WatchState {
        var schedule: CDNSchedule?
        var checks: [CDNStatus.State: Int] = [:]
        var firstResults = FirstResults<CDNStatus.State>()
    }

    init(configuration: CDNWatchConfiguration) {
        self.configuration = configuration
        let settings = CDNSchedule.Settings(intervalSeconds: configuration.intervalSeconds, rate: configuration.rate,
                                            timeoutMilliseconds: configuration.timeoutMilliseconds)
        state.withLock { $0.schedule = CDNSchedule(settings: settings) }
    }

    /// What is asked of the CDN for `host`.
    func url(for host: String) -> HTTPURL {
        var prefix = configuration.base.target
        while prefix.hasSuffix("/") { prefix.removeLast() }
        return HTTPURL(isSecure: configuration.base.isSecure, host: configuration.base.host, port: configuration.base.port,
                       target: prefix + "/a/v1/" + host)
    }

    /// The sites to watch in a snapshot: each that serves an AASA file, a `*.` site as its base
    /// name where it serves that name (docs/apple-view.md: the file iOS fetches for
    /// `applinks:*.example.org` is example.org's, TN3155).
    static func watched(_ snapshot: SiteSnapshot) -> [CDNSchedule.Watched] {
        var out: [CDNSchedule.Watched] = []
        out.reserveCapacity(snapshot.sites.count)
        for site in snapshot.sites {
            if let w = watched(site, in: snapshot) { out.append(w) }
        }
        return out
    }

    private static func watched(_ site: Site, in snapshot: SiteSnapshot) -> CDNSchedule.Watched? {
        guard let served = site.served else { return nil }
        if site.name.isWildcard {
            guard let (name, _) = snapshot.index.lookup(site.name.host), name == site.name else { return nil }
        }
        return .init(key: site.name.description, host: site.name.host, served: served)
    }

    /// What changed for the watch from one snapshot to the next, when the same sites are in the
    /// same places: a reload shares every unchanged site, so a walk comparing references finds
    /// the few that changed. nil when sites came or went (one may decide whether a wildcard
    /// serves its base name): then everything is compared.
    static func changes(from old: SiteSnapshot, to new: SiteSnapshot) -> (watched: [CDNSchedule.Watched], gone: [String])? {
        guard old.sites.count == new.sites.count else { return nil }
        var changed: [CDNSchedule.Watched] = []
        var gone: [String] = []
        for (a, b) in zip(old.sites, new.sites) where a !== b {
            guard a.name == b.name else { return nil }
            if let w = watched(b, in: new) { changed.append(w) } else { gone.append(b.name.description) }
        }
        return (changed, gone)
    }

    /// The client of every check. Made by the watch's thread, after the server is ready:
    /// loading the system's trusted certificates costs as much as reading 700 sites
    /// (docs/performance.md, "Start-up at 100 000 sites").
    private func makeClient(_ log: Log) -> Result<HTTPSClient, HTTPClientError> {
        var c = HTTPSClient.Configuration(timeoutSeconds: Double(configuration.timeoutMilliseconds) / 1000, caFile: configuration.caFile,
                                          userAgent: configuration.userAgent)
        c.caFileKeepsSystemStore = true
        // An AASA file is at most 128 KB; a CDN that sends more is not sending one.
        c.maxBodyBytes = 256 * 1024
        do throws(HTTPClientError) {
            return .success(try HTTPSClient(c))
        } catch {
            log.error("cdn: cannot load the trusted certificates for \(configuration.base): \(error.message)")
            return .failure(error)
        }
    }

    func start(state server: ServerState, log: Log) {
        log.info("cdn: watching Apple's CDN at \(configuration.base.isSecure ? "https" : "http")://\(configuration.base.host):\(configuration.base.port) every \(configuration.intervalSeconds) s, at most \(configuration.rate) requests/s")
        // The sites are known (and `pending`) before the server says it is ready.
        let (snapshot, generation) = server.snapshots.load()
        let watched = CDNWatch.watched(snapshot)
        let now = monotonicMicroseconds()
        let wall = wallClockMilliseconds()
        state.withLock { _ = $0.schedule!.update(watched, now: now, wall: wall) }
        if let error = startDetachedThread({ [self] in run(server, log, snapshot: snapshot, generation: generation) }) {
            log.error("cdn: cannot start the watch: \(error)")
        }
    }

    private func run(_ server: ServerState, _ log: Log, snapshot first: SiteSnapshot, generation firstGeneration: Int) {
        let client = makeClient(log)
        var previous = first
        var generation = firstGeneration
        while !server.isDraining {
            var watched: [CDNSchedule.Watched]?
            var gone: [String]?
            if server.snapshots.generation != generation {
                let (snapshot, g) = server.snapshots.load()
                generation = g
                if let changes = CDNWatch.changes(from: previous, to: snapshot) {
                    (watched, gone) = changes
                } else {
                    watched = CDNWatch.watched(snapshot)
                }
                previous = snapshot
            }
            let now = monotonicMicroseconds()
            let wall = wallClockMilliseconds()
            var starts: [CDNSchedule.Check] = []
            let (lines, wake) = state.withLock { s -> ([WatchLogLine], Int64?) in
                var events: [CDNSchedule.Event] = []
                if let watched { events += s.schedule!.update(watched, gone: gone, now: now, wall: wall) }
                events += s.schedule!.expire(now: now, wall: wall)
                while let check = s.schedule!.start(now: now) { starts.append(check) }
                return (CDNWatch.apply(events, &s), s.schedule!.nextWake(now: now))
            }
            write(lines, log)
            for check in starts { spawn(check, client, log) }
            // At most 100 ms asleep: a reload is noticed, and a check started, within that.
            let sleep = min(100_000, max(1000, (wake ?? Int64.max) - monotonicMicroseconds()))
            usleep(UInt32(sleep))
        }
    }

    private func spawn(_ check: CDNSchedule.Check, _ client: Result<HTTPSClient, HTTPClientError>, _ log: Log) {
        let url = url(for: check.host)
        let started = startDetachedThread { [self] in
            let answer: CDNAnswer
            switch client {
            case .success(let client):
                do throws(HTTPClientError) { answer = CDNAnswer(response: try client.get(url)) } catch { answer = CDNAnswer(error: error) }
            case .failure(let error):
                answer = CDNAnswer(outcome: .unreachable(cause: "tls", message: error.message))
            }
            finish(check, answer, log)
        }
        if let error = started {
            // Out of threads: this check fails here, and the server goes on.
            finish(check, CDNAnswer(outcome: .unreachable(cause: "connect", message: "no thread for the request: \(error)")), log)
        }
    }

    private func finish(_ check: CDNSchedule.Check, _ answer: CDNAnswer, _ log: Log) {
        let now = monotonicMicroseconds()
        let wall = wallClockMilliseconds()
        let lines = state.withLock { s in
            CDNWatch.apply(s.schedule!.finish(check, answer, now: now, wall: wall), &s)
        }
        write(lines, log)
    }

    // MARK: - What it reports

    /// Every watched site's status, by site name (as `/status` names sites).
    func statuses() -> [String: CDNStatus] {
        state.withLock { s in
            var out: [String: CDNStatus] = [:]
            out.reserveCapacity(s.schedule!.sites.count)
            for (key, site) in s.schedule!.sites { out[key] = site.status }
            return out
        }
    }

    func status(site: String) -> CDNStatus? {
        state.withLock { $0.schedule!.sites[site]?.status }
    }

    /// `aasa_cdn_sites{state}` and `aasa_cdn_checks_total{result}`.
    func metrics() -> String {
        let (counts, checks) = state.withLock { ($0.schedule!.counts(), $0.checks) }
        var out = "# HELP aasa_cdn_sites Watched sites by the state of their copy at Apple's CDN.\n# TYPE aasa_cdn_sites gauge\n"
        for state in CDNStatus.State.allCases {
            out += "aasa_cdn_sites{state=\"\(state.rawValue)\"} \(counts[state] ?? 0)\n"
        }
        out += "# HELP aasa_cdn_checks_total Checks of Apple's CDN, by the state each found.\n# TYPE aasa_cdn_checks_total counter\n"
        for state in CDNStatus.State.allCases where state != .pending {
            out += "aasa_cdn_checks_total{result=\"\(state.rawValue)\"} \(checks[state] ?? 0)\n"
        }
        return out
    }

    // MARK: - The log

    /// Counts the checks and turns events into log lines (``WatchLogLine``, as the monitor's):
    /// each change of state after a site's first check, and the first results summarised (at
    /// most 20 lines of one state, then a count once every site has its first result).
    private static func apply(_ events: [CDNSchedule.Event], _ s: inout WatchState) -> [WatchLogLine] {
        var lines: [WatchLogLine] = []
        for event in events {
            switch event {
            case .checked(let state):
                s.checks[state, default: 0] += 1
            case .first(let key, let host, let state):
                if s.firstResults.count(state) {
                    let detail = s.schedule!.sites[key]?.status.detail() ?? ""
                    lines.append(WatchLogLine(state == .current ? .info : .warning, "cdn: \(host) \(state.rawValue)\(detail)"))
                }
            case .changed(let host, let from, let to, let after):
                lines.append(.change("cdn", host: host, from: from.rawValue, to: to.rawValue, afterMilliseconds: after, bad: to != .current))
            }
        }
        if s.schedule!.pendingCount == 0 {
            for (state, more) in s.firstResults.finish() {
                lines.append(WatchLogLine(.info, "cdn: \(more) more sites \(state.rawValue) at their first check"))
            }
        }
        return lines
    }

    private func write(_ lines: [WatchLogLine], _ log: Log) {
        for line in lines { line.write(to: log) }
    }
}

/// Starts a detached thread running `body` (nobody joins it: the CDN watch, the PostgreSQL
/// store's thread); the error when the system has no thread to give (EAGAIN), which a check
/// survives.
func startDetachedThread(_ body: sending @escaping () -> Void) -> SystemError? {
    switch tryStartThread(body) {
    case .success(let thread):
        pthread_detach(thread)
        return nil
    case .failure(let error):
        return error
    }
}
