import AASACore
import CLinux
import AASATransport
import AASASessions
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// Everything `aasa serve` is told (docs/serving.md).
public struct ServerConfiguration: Sendable {
    public var configDirectory = "./config"
    public var certsDirectory: String?
    public var https: [SocketAddress] = []
    public var http: [SocketAddress] = []
    public var admin: SocketAddress?
    public var defaultCertificate: String?
    public var workers = 1
    public var maxConnections = 10_000
    public var logFormat = LogFormat.text
    public var cacheControl = "public, max-age=3600"
    public var shutdownGraceSeconds = 10
    /// `--drain-delay`: after SIGTERM, how long the listeners keep accepting while `/readyz`
    /// answers 503, so balancers stop sending here first (docs/deployment.md).
    public var drainDelaySeconds = 0
    /// Listening sockets passed by systemd (socket activation), served instead of binding.
    public var passedListeners: [PassedListener] = []
    /// Settings of each layer, each handed to the layer that reads it.
    public var transport = TransportConfiguration()
    public var http1 = HTTP1Configuration(targets: .associationFiles)
    /// HTTP/2 (docs/serving.md, "HTTP/2"): ALPN `h2` on every certificate and the h2c preface on `--http`
    /// listeners. Off: HTTP/1.1 only.
    public var http2Enabled = true
    var http2 = HTTP2Configuration(targets: .associationFiles)
    /// Development mode: certificates made and renewed in `certsDirectory`, guidance at start,
    /// the dashboard on the HTTP listener.
    public var dev = false
    /// Sites with a label of their own in `/metrics` (docs/serving.md, "Admin listener").
    public var metricsSites = 1000
    /// How changes in the config and certs directories are seen (docs/serving.md, "Validation and hot reload").
    public var watchMode = WatchMode.auto
    public var pollIntervalSeconds = 30
    /// A wait before the watches are added after ready, for the tests (`AASA_TEST_WATCH_DELAY_MS`).
    public var watchDelayMilliseconds = 0
    /// `--acme`: certificates obtained and renewed in `certsDirectory` (docs/acme.md).
    public var acme: ACMEConfiguration?
    /// `--cdn-watch on`: the copy Apple's CDN holds of each site (docs/apple-view.md).
    public var cdnWatch: CDNWatchConfiguration?
    /// `--admin-token-file`: the write API on the admin listener (docs/platforms.md).
    public var apiTokenFile: String?
    /// `--admin-tls NAME`: the admin listener over HTTPS with certificate NAME (docs/platforms.md).
    public var adminTLS: String?
    /// `--store-secret-file`: seals the private keys written to the store (docs/replicas.md).
    public var storeSecretFile: String?
    /// `--store postgres://…`: sites and certificates in PostgreSQL, shared by replicas
    /// (docs/replicas.md); `configDirectory` and `certsDirectory` are then the local copy.
    public var storeURL: String?

    /// Whether sites and certificates may arrive after the start (`--dev` makes its own
    /// certificates, `--acme` orders them, the API receives both), so an empty start is not a mistake.
    var mayStartEmpty: Bool { dev || acme != nil || apiTokenFile != nil || storeURL != nil }

    /// An HTTPS listener, bound or passed.
    public var servesHTTPS: Bool { !https.isEmpty || passedListeners.contains { $0.kind == .https } }
    /// An admin listener, bound or passed.
    public var hasAdmin: Bool { admin != nil || passedListeners.contains { $0.kind == .admin } }

    public init() {}
}

/// `aasa serve`: loads and validates the sites, binds the listeners, runs one event loop per
/// worker, and on the main thread waits for signals and file changes.
public final class Server {
    private let configuration: ServerConfiguration
    private let log: Log

    public init(configuration: ServerConfiguration) {
        self.configuration = configuration
        self.log = Log(format: configuration.logFormat)
    }

    private func builder(_ configuration: ServerConfiguration) -> SnapshotBuilder {
        SnapshotBuilder(configDirectory: configuration.configDirectory, certsDirectory: configuration.certsDirectory,
                        defaultCertificate: configuration.defaultCertificate, cacheControl: configuration.cacheControl,
                        usesTLS: configuration.servesHTTPS, log: log, keepsDocuments: configuration.dev)
    }

    /// Runs until SIGTERM or SIGINT, then drains. Returns the process exit status.
    public func run() -> Int32 {
        LogStream.noticesAsJSON.store(configuration.logFormat == .json, ordering: .relaxed)
        var flushDeadline: Int64?
        defer {
            // The last lines ("stopped", a start error) go out if the readers take them in time;
            // a reader that stopped reading cannot hold the process past it.
            let deadline = flushDeadline ?? monotonicMilliseconds() + 2000
            LogStream.standardError.flush(until: deadline)
            LogStream.standardOutput.flush(until: deadline)
        }
        // SIGPIPE is ignored once, process-wide: a peer that goes away is an error from send(2).
        signal(SIGPIPE, SIG_IGN)
        // Every connection is a descriptor: raise the soft limit to the hard one, so the default
        // soft limit (often 1024) does not cap --max-connections.
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        // The control thread takes these through signalfd; block them before any thread starts
        // so every thread inherits the mask.
        var signals = sigset_t()
        sigemptyset(&signals)
        for s in [SIGTERM, SIGINT, SIGHUP] { _ = aasa_sigaddset(&signals, s) }
        pthread_sigmask(SIG_BLOCK, &signals, nil)

        let started = monotonicMilliseconds()
        var configuration = self.configuration
        var copy: LocalCopy?
        if let url = configuration.storeURL {
            // The store's rows are kept in a local copy the builder reads (docs/replicas.md).
            do {
                let made = try LocalCopy()
                copy = made
                LocalCopy.removeAbandoned(log: log)
                configuration.configDirectory = made.config
                configuration.certsDirectory = made.certs
                try PostgresStartup.check(url: url, log: log)
            } catch {
                log.error("store: \(error)")
                return 1
            }
        }
        defer { copy?.remove() }
        if let problem = StartupCheck.directories(configuration) {
            log.error(problem)
            return 1
        }
        let dev = configuration.dev ? DevelopmentMode(certificatesDirectory: configuration.certsDirectory ?? "certs-dev") : nil
        dev?.ensureCertificates(configDirectory: configuration.configDirectory, log: log)
        PublicSuffixes.system.reload(logTo: log)
        let builder = self.builder(configuration)
        let snapshot = builder.build(previous: nil)
        if let problem = StartupCheck.loaded(snapshot, configuration) {
            log.error(problem)
            return 1
        }
        // With the write API, the admin listener gets a loop of its own: a write's fsyncs then
        // hold up no client's request (docs/platforms.md).
        let workers = max(1, configuration.workers)
        let adminLoop = configuration.apiTokenFile != nil && configuration.hasAdmin
        let state = ServerState(snapshot: snapshot, loops: workers + (adminLoop ? 1 : 0),
                                maxConnections: configuration.maxConnections,
                                shutdownGraceMilliseconds: Int64(configuration.shutdownGraceSeconds) * 1000, dev: dev,
                                acme: configuration.acme.map { ACMEStatus(directory: $0.directory, challenge: $0.challenge) },
                                appleView: AppleView(cdn: configuration.cdnWatch.map { CDNWatch(configuration: $0) }),
                                metricsSites: configuration.metricsSites, http2: configuration.http2Enabled)
        let serving = snapshot.summary.serving + snapshot.summary.stale
        log.info("loaded \(snapshot.summary.sites) sites (\(serving) serving) from \(configuration.configDirectory) in \(monotonicMilliseconds() - started) ms")

        var listeners: [Listener] = []
        do {
            // Sockets systemd passed are served as they are, instead of binding (docs/deployment.md).
            for passed in configuration.passedListeners { listeners.append(try adopt(passed)) }
            for address in configuration.https { listeners.append(try bind(address, .https)) }
            for address in configuration.http { listeners.append(try bind(address, .http)) }
            if let admin = configuration.admin { listeners.append(try bind(admin, .admin)) }
        } catch {
            log.error("cannot listen: \(error)")
            for l in listeners { close(l.fd) }
            return 1
        }

        if let name = configuration.adminTLS {
            state.adminTLSName.withLock { $0 = name }
            if snapshot.certificates.certificate(named: name) == nil {
                // With the store the certificate may come with the first load.
                guard configuration.storeURL != nil else {
                    log.error("admin: --admin-tls \(name): no certificate \(name) in --certs (NAME as in --default-cert: a file or folder name without extension)")
                    return 1
                }
                log.warning("admin: --admin-tls \(name): no certificate \(name) yet; admin connections are closed until it loads")
            }
        }
        let publisher = SnapshotPublisher(builder: builder, state: state, configDirectory: configuration.configDirectory, log: log)
        var storeSync: StoreSync?
        var sealer: KeySealer?
        if let url = configuration.storeURL {
            if let file = configuration.storeSecretFile {
                do { sealer = try KeySealer(secretFile: file) } catch {
                    log.error("store: \(error)")
                    return 1
                }
                log.info("store: private keys written to the store are sealed (AES-256-GCM, secret \(sealer!.keyID))")
            } else {
                log.warning("store: no --store-secret-file: private keys written to the store are stored as PEM")
            }
            let sync = StoreSync(url: url, copy: FolderStore(configDirectory: configuration.configDirectory,
                                                             certsDirectory: configuration.certsDirectory, durable: false),
                                 sealer: sealer, challenges: state.acme?.challenges, publisher: publisher, state: state, log: log)
            state.storeStatus.withLock { $0 = StoreStatus(kind: "postgres", connected: false) }
            state.storeSync.withLock { $0 = sync }
            storeSync = sync
        }
        if let tokenFile = configuration.apiTokenFile {
            let folders = FolderStore(configDirectory: configuration.configDirectory, certsDirectory: configuration.certsDirectory,
                                      durable: configuration.storeURL == nil)
            let store: any SiteStore = configuration.storeURL.map { PostgresStore(url: $0, copy: folders, sealer: sealer, log: log) } ?? folders
            state.writeAPI.withLock { $0 = WriteAPI(tokens: APITokens(path: tokenFile, log: log), store: store, publisher: publisher, state: state, log: log) }
            if let admin = configuration.admin, !admin.isLoopback, configuration.adminTLS == nil {
                log.warning("api: the admin listener \(admin) is not on loopback and speaks plain HTTP: bearer tokens cross the network in the clear; use --admin-tls NAME, or keep it on a private network (docs/platforms.md)")
            }
        }
        // Before any loop starts: without it the process could not be stopped, so a failure
        // here ends the start.
        let control: ControlLoop
        do {
            control = try ControlLoop(configuration: configuration, publisher: publisher, state: state, log: log, signals: signals)
        } catch {
            log.error("cannot start: \(error)")
            for l in listeners { close(l.fd) }
            return 1
        }

        // Each loop is handed to its thread as it is made, and from then on touched by that
        // thread only; this thread keeps its wake-up descriptor, to signal the drain.
        state.clientListeners.withLock { $0 = listeners.filter { $0.kind != .admin }.map(\.fd) }
        var wakers: [EventFD] = []
        var threads: [pthread_t] = []
        for i in 0..<(workers + (adminLoop ? 1 : 0)) {
            // The admin listener on loop 0, or alone on the last loop with the write API on.
            let own = adminLoop ? (i == workers ? listeners.filter { $0.kind == .admin } : listeners.filter { $0.kind != .admin })
                                : listeners.filter { $0.kind != .admin || i == 0 }
            let loop: EventLoop
            do {
                loop = try EventLoop(id: i, state: state, listeners: own, transport: configuration.transport, http1: configuration.http1,
                                     http2: configuration.http2Enabled ? configuration.http2 : nil,
                                     log: log, accessLogFormat: configuration.logFormat)
            } catch {
                log.error("cannot start event loops: \(error)")
                // The loops already running end (nothing is ready yet).
                state.publish(.closed)
                for waker in wakers { waker.signal() }
                for t in threads { pthread_join(t, nil) }
                for l in listeners { close(l.fd) }
                return 1
            }
            wakers.append(loop.waker)
            threads.append(startThread { loop.run() })
        }
        // Off the loops and the control thread: a slow CDN delays nothing but its own checks.
        state.appleView.cdn?.start(state: state, log: log)
        if let storeSync {
            // Ready once the first load from the store is published.
            storeSync.start()
        } else {
            state.ready.store(true, ordering: .releasing)
        }
        if let dev {
            LogStream.standardError.write(dev.guidance(snapshot: snapshot, http: listeners.filter { $0.kind == .http }.map(\.address),
                                                       https: listeners.filter { $0.kind == .https }.map(\.address)))
        }
        log.info("ready: \(workers) workers\(adminLoop ? " and an admin loop" : ""), max \(configuration.maxConnections) connections")
        // Orders start once the listeners answer, since the CA validates through them.
        if let acme = configuration.acme, let certs = configuration.certsDirectory, let status = state.acme {
            let storeURL = configuration.storeURL, keys = sealer
            ACMEScheduler.start(configuration: acme, store: { () -> any ACMEStore in
                if let storeURL { return ACMEPostgresStore(url: storeURL, sealer: keys, orderRate: acme.orderRate) }
                return ACMEFolderStore(certsDirectory: certs, orderRate: acme.orderRate)
            }, state: state, status: status, log: log)
        }

        control.run()
        storeSync?.stopping.store(true, ordering: .relaxed)

        // Draining (docs/deployment.md, "Restarts that lose nothing"): not ready at once, the
        // delay, the sweep of what the kernel queued, the requests in flight, within delay +
        // grace; the final flush of the logs gets what is left of the grace, at most 2 s (at
        // least 0.1 s, so that a reader that keeps up gets the last lines even with
        // --shutdown-grace 0).
        let graceEnd = monotonicMilliseconds() + Int64(configuration.drainDelaySeconds + configuration.shutdownGraceSeconds) * 1000
        DrainConductor(state: state, wakers: wakers, log: log)
            .run(delay: Int64(configuration.drainDelaySeconds) * 1000, grace: Int64(configuration.shutdownGraceSeconds) * 1000,
                 nextSignal: control.nextStopSignal(timeout:))
        for t in threads { pthread_join(t, nil) }
        for l in listeners where l.kind == .admin { close(l.fd) }
        // The write API and the store's thread refer to the state that holds them: let go.
        state.writeAPI.withLock { $0 = nil }
        state.storeSync.withLock { $0 = nil }
        log.info("stopped")
        let now = monotonicMilliseconds()
        flushDeadline = max(now + 100, min(graceEnd, now + 2000))
        return 0
    }

    /// A socket systemd passed (socket activation). Its options are the socket unit's to set
    /// (`DeferAcceptSec=`, `Backlog=`): the socket outlives this process.
    private func adopt(_ passed: PassedListener) throws(SystemError) -> Listener {
        let address = try Socket.adopt(passed.fd)
        log.info("listening \(passed.kind.name) \(address) (passed by systemd, descriptor \(passed.fd))")
        return Listener(fd: passed.fd, kind: passed.kind, address: address)
    }

    private func bind(_ address: SocketAddress, _ kind: ListenerKind) throws(SystemError) -> Listener {
        let (fd, bound) = try Socket.listen(on: address)
        if kind != .admin {
            // Wake accept only once the client has sent something (its ClientHello or request
            // line), so a new connection is handled in one turn of the loop instead of two.
            try? Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_DEFER_ACCEPT, 1)
        }
        log.info("listening \(kind.name) \(bound)")
        return Listener(fd: fd, kind: kind, address: bound)
    }
}

/// `--watch`: inotify sees only changes made through this machine's kernel, so a directory on
/// a network filesystem is polled (docs/serving.md, "Validation and hot reload").
public enum WatchMode: String, Sendable, CaseIterable {
    /// `poll` for a directory on a network filesystem (found with statfs), `inotify` elsewhere.
    case auto
    case inotify
    case poll
}
