import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import AASATransport

/// What the loops, the control thread and the admin endpoints share.
final class ServerState: Sendable {
    let snapshots: SnapshotStore
    let metrics: Metrics
    /// Sites loaded and listeners bound.
    let ready = Atomic<Bool>(false)
    /// The phase of the graceful stop (``Drain/Phase``), published by the control thread and
    /// followed by every loop.
    private let drainPhase = Atomic<UInt8>(Drain.Phase.serving.rawValue)
    /// SIGTERM/SIGINT received: `/readyz` answers 503, and whatever runs on its own (the CDN
    /// watch, ACME) stops.
    var isDraining: Bool { phase != .serving }
    var phase: Drain.Phase { Drain.Phase(rawValue: drainPhase.load(ordering: .acquiring)) ?? .closed }
    func publish(_ phase: Drain.Phase) { drainPhase.store(phase.rawValue, ordering: .releasing) }
    /// Loops that have swept (taken in what the kernel queued and stopped watching the client
    /// listeners); once all have, the listening sockets are closed.
    let loopsReleasedListeners = Atomic<Int>(0)
    /// The event loops, all of which release the listeners when draining.
    let loops: Int
    /// The client listeners' descriptors, set before the loops start; closed once, by
    /// ``releaseListeners()`` or ``closeClientListeners()``.
    let clientListeners = Locked<[Int32]?>(nil)
    /// Open connections per client address, for the per-client limit (touched once when a
    /// connection's address is known and once when it closes, never per request).
    /// A pthread mutex (``Locked``), not `Synchronization.Mutex`, which ThreadSanitizer cannot
    /// see: loops admitting clients at once looked like a race.
    let clientConnections = Locked<[String: Int]>([:])
    /// Request counts of every loop, fixed before the loops start.
    let loopCounters: [LoopCounters]
    let maxConnections: Int
    let shutdownGraceMilliseconds: Int64
    /// `--dev`: the dashboard, the fetch log and the development certificates.
    let dev: DevelopmentMode?
    /// `--acme`: what the ACME thread is doing, for `/status`, and the challenges it publishes.
    let acme: ACMEStatus?
    /// The server's TLS context, its parsed certificates and what its callbacks consult.
    let tls: TLSServerSettings
    /// The fetch record and the CDN watch (docs/apple-view.md).
    let appleView: AppleView
    /// How the directories are watched, for `/status`.
    let watch = WatchStatus()
    /// `--admin-token-file`: the write API (docs/platforms.md), set once before the loops start.
    let writeAPI = Locked<WriteAPI?>(nil)
    /// `--admin-tls NAME`: the certificate the admin listener serves over HTTPS.
    var adminTLS: String? { adminTLSName.withLock { $0 } }
    let adminTLSName = Locked<String?>(nil)
    /// `--store`: whether PostgreSQL is reachable, for `/status` (docs/replicas.md).
    let storeStatus = Locked(StoreStatus())
    /// Why the store cannot be read now, for `/readyz` before the first load.
    let storeProblem = Locked<String?>(nil)
    /// `--store`: the thread that follows it (SIGHUP asks it for a whole load).
    let storeSync = Locked<StoreSync?>(nil)

    /// Counts a new connection from `client` unless it already holds `limit`.
    func admit(_ client: String, limit: Int) -> Bool {
        clientConnections.withLock { counts in
            let n = counts[client, default: 0]
            guard n < limit else { return false }
            counts[client] = n + 1
            return true
        }
    }

    func release(_ client: String) {
        clientConnections.withLock { counts in
            let n = counts[client, default: 1] - 1
            counts[client] = n > 0 ? n : nil
        }
    }

    init(snapshot: SiteSnapshot, loops: Int, maxConnections: Int, shutdownGraceMilliseconds: Int64, dev: DevelopmentMode? = nil,
         acme: ACMEStatus? = nil, appleView: AppleView = AppleView(), metricsSites: Int = SiteLabels.defaultCapacity,
         http2: Bool = false) {
        self.dev = dev
        self.appleView = appleView
        self.acme = acme
        tls = TLSServerSettings(offersHTTP2: http2, challenges: acme?.challenges)
        self.shutdownGraceMilliseconds = shutdownGraceMilliseconds
        snapshots = SnapshotStore(snapshot)
        let labels = SiteLabels(capacity: metricsSites)
        metrics = Metrics(labels: labels)
        loopCounters = (0..<loops).map { _ in LoopCounters(labels: labels) }
        self.loops = loops
        self.maxConnections = maxConnections
    }
}

extension ServerState {
    /// A loop stopped watching the client listeners (it took in what the kernel had queued).
    /// The last one closes them at once: a connection that reached the backlog after its sweep
    /// would be reset, where one refused goes to another replica (a balancer retries a refused
    /// connection, not one reset after it was established). The drain's delay is what keeps
    /// that window empty: by then the balancers have stopped sending here. A socket passed by
    /// systemd is only closed, never shut down: its queue lives on in systemd's copy for the
    /// next process (docs/deployment.md). Returns the loops released so far.
    @discardableResult
    func releaseListeners() -> Int {
        let released = loopsReleasedListeners.add(1, ordering: .acquiringAndReleasing).newValue
        if released == loops { closeClientListeners() }
        return released
    }

    /// Whether every loop has swept (``releaseListeners()``).
    var loopsSwept: Bool { loopsReleasedListeners.load(ordering: .acquiring) >= loops }

    /// Closes the client listeners, once whoever asks.
    func closeClientListeners() {
        clientListeners.withLock { fds in
            for fd in fds ?? [] { close(fd) }
            fds = []
        }
    }
}
