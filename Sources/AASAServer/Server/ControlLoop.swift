import AASACore
import CLinux
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The main thread after start: waits for signals (signalfd) and for changes in the config and
/// certs directories (inotify), and rebuilds the snapshot off the hot path (docs/serving.md, "Validation and hot reload", "Logs and signals").
final class ControlLoop {
    private let configuration: ServerConfiguration
    private let publisher: SnapshotPublisher
    private let state: ServerState
    private let log: Log
    private let signalFD: Int32
    private let watcher: DirectoryWatcher?
    private let epfd: Int32
    /// Whether the config and the certs directory are polled rather than watched (`--watch`).
    private let pollsConfig: Bool
    private let pollsCertificates: Bool
    /// `--store`: the store's thread keeps the folders and publishes (``StoreSync``).
    private let followsStore: Bool

    /// How often the watched directories are checked for having been replaced, and how often
    /// everything is read again when inotify cannot watch it all.
    private let rescanInterval: Int64 = 1000

    /// Fails when the loop could never be told to stop: SIGTERM is blocked in every thread and
    /// only this signalfd receives it.
    init(configuration: ServerConfiguration, publisher: SnapshotPublisher, state: ServerState, log: Log, signals: sigset_t) throws(SystemError) {
        self.configuration = configuration
        self.publisher = publisher
        self.state = state
        self.log = log
        // With the PostgreSQL store the folders are its local copy, written by the store's own
        // thread, which publishes each change itself: nothing to watch.
        let (pollsConfig, pollsCertificates) = configuration.storeURL != nil ? (false, false) : ControlLoop.decidePolling(configuration, log: log)
        self.followsStore = configuration.storeURL != nil
        (self.pollsConfig, self.pollsCertificates) = (pollsConfig, pollsCertificates)
        let interval = configuration.pollIntervalSeconds
        state.watch.set {
            $0.polls = pollsConfig || pollsCertificates
            $0.pollInterval = interval
        }
        var signals = signals
        var opened: [Int32] = []
        do {
            let signalFD = try check("signalfd") { signalfd(-1, &signals, Int32(SFD_NONBLOCK | SFD_CLOEXEC)) }
            opened.append(signalFD)
            let epfd = try Epoll.create()
            opened.append(epfd)
            try Epoll.add(epfd, signalFD, events: Epoll.readable, data: 0)
            // Nothing to watch when both directories are polled.
            let watcher = followsStore || (pollsConfig && (pollsCertificates || configuration.certsDirectory == nil)) ? nil : DirectoryWatcher(log: log)
            if let watcher { try Epoll.add(epfd, watcher.fd, events: Epoll.readable, data: 1) }
            (self.signalFD, self.epfd, self.watcher) = (signalFD, epfd, watcher)
        } catch {
            for fd in opened { close(fd) }
            throw error
        }
    }

    deinit {
        close(signalFD)
        close(epfd)
    }

    /// Returns when SIGTERM or SIGINT arrives; the caller then drains (``DrainConductor``).
    func run() {
        // Once the watches exist, every stamp is compared after the usual debounce (a file being
        // written when they were added is read once its writer is done, like any change).
        let coverageStarted = monotonicMilliseconds()
        var settling = coverEveryFolder()
        var events = [epoll_event](repeating: epoll_event(), count: 4)
        var debounce = ReloadDebounce()
        if settling { debounce.changed(at: monotonicMilliseconds()) }
        var lastCheck = monotonicMilliseconds()
        var lastCertificateRescan = lastCheck
        var lastPoll = lastCheck
        var pending = ReloadScope()
        while true {
            var timeout = Int32(rescanInterval)
            if pollsConfig || pollsCertificates {
                timeout = Int32(max(0, min(Int64(timeout), lastPoll + Int64(configuration.pollIntervalSeconds) * 1000 - monotonicMilliseconds())))
            }
            let now = monotonicMilliseconds()
            if let due = debounce.due {
                timeout = Int32(max(0, due - now))
            }
            let n = Epoll.wait(epfd, &events, capacity: Int32(events.count), timeout: timeout)
            for i in 0..<n {
                if events[i].data.u64 == 0 {
                    switch readSignal() {
                    case SIGTERM, SIGINT:
                        log.info("signal received: stopping")
                        return
                    case SIGHUP:
                        log.info("SIGHUP: reloading")
                        PublicSuffixes.system.reload(logTo: log)
                        state.writeAPI.withLock { $0 }?.tokens.refresh(force: true)
                        state.storeSync.withLock { $0 }?.fullLoadRequested.store(true, ordering: .relaxed)
                        pending.formUnion(.everything)
                        reload(pending)
                        pending = ReloadScope()
                        debounce.reset()
                        if settling {
                            // That was the pass the watches were waiting for.
                            settling = false
                            reportCoverage(since: coverageStarted)
                        } else {
                            returnFreedMemory()
                        }
                    default:
                        break
                    }
                } else if let watcher {
                    let changed = watcher.drain()
                    if !changed.isEmpty {
                        pending.formUnion(changed)
                        debounce.changed(at: monotonicMilliseconds())
                    }
                }
            }
            let t = monotonicMilliseconds()
            if debounce.takeDue(now: t) {
                if settling {
                    settling = false
                    var everything = ReloadScope.everything
                    everything.formUnion(pending)
                    publisher.reload(everything, quietIfUnchanged: true)
                    // Watches for what the events named, not all of them again.
                    rearm(pending)
                    reportCoverage(since: coverageStarted)
                } else {
                    reload(pending)
                }
                pending = ReloadScope()
            }
            if pollsConfig || pollsCertificates, t - lastPoll >= Int64(configuration.pollIntervalSeconds) * 1000 {
                // A pass over the polled directories: every file's stamp compared, only what
                // changed read (docs/serving.md, "Validation and hot reload").
                lastPoll = t
                var scope = ReloadScope()
                scope.allSites = pollsConfig
                scope.allCertificates = pollsCertificates
                let started = monotonicMilliseconds()
                reload(scope, quietIfUnchanged: true)
                let seconds = Double(monotonicMilliseconds() - started) / 1000
                state.watch.set { $0.lastPassSeconds = seconds }
            }
            if t - lastCheck >= rescanInterval {
                lastCheck = t
                if let watcher {
                    // A watched directory replaced by another (a rename into place, a symlink
                    // swapped, a directory that is back) without an event that said so, for
                    // instance when a directory above the watched parent was renamed.
                    if let path = watcher.replacedRoot() {
                        log.info("\(path) now leads to another directory: reloading")
                        reload(.everything)
                    } else if !watcher.isComplete {
                        // Folders inotify could not watch (the per-user limit): a slice of them
                        // is checked each second by their files' stamps, so every one is seen
                        // within `unwatchedCycle` seconds without a stat of everything each second.
                        var scope = watcher.unwatchedSlice(cycle: unwatchedCycle)
                        if t - lastCertificateRescan >= unwatchedCycle * 1000 || scope.allSites, watcher.hasUnwatchedCertificates {
                            lastCertificateRescan = t
                            scope.allCertificates = true
                        }
                        if !scope.isEmpty { reload(scope, quietIfUnchanged: true) }
                    }
                } else if !followsStore, !(pollsConfig && (pollsCertificates || configuration.certsDirectory == nil)) {
                    // No inotify at all: everything, by stamps, saying nothing unless something changed.
                    reload(.everything, quietIfUnchanged: true)
                }
            }
        }
    }

    /// `--watch`: each of the config and certs directories on its own; `auto` polls a directory
    /// on a network filesystem, where inotify sees only this machine's own writes.
    static func decidePolling(_ configuration: ServerConfiguration, log: Log) -> (config: Bool, certificates: Bool) {
        func decide(_ path: String?, _ what: String) -> Bool {
            guard let path else { return false }
            switch configuration.watchMode {
            case .inotify: return false
            case .poll: return true
            case .auto:
                guard let fs = NetworkFilesystem.kind(of: path) else { return false }
                log.info("\(what) \(path) is on \(fs): inotify does not see other hosts' writes there; polling every \(configuration.pollIntervalSeconds) s")
                return true
            }
        }
        return (decide(configuration.configDirectory, "config"), decide(configuration.certsDirectory, "certs"))
    }

    /// Seconds within which every folder inotify could not watch is checked once.
    private let unwatchedCycle: Int64 = 10

    /// Watches every folder, once the server is ready: at 100 000 sites adding the watches
    /// takes a second, which clients need not wait for. What changed between the first read and
    /// the watches is then read by the caller (every stamp compared, only what changed read
    /// again). Whether there is a watch to settle.
    private func coverEveryFolder() -> Bool {
        guard watcher != nil else { return false }
        if configuration.watchDelayMilliseconds > 0 { usleep(UInt32(min(configuration.watchDelayMilliseconds, 10_000)) * 1000) }
        rearm()
        return true
    }

    /// `/status` and the log say how long after ready the watch covered everything.
    private func reportCoverage(since began: Int64) {
        let seconds = Double(monotonicMilliseconds() - began) / 1000
        state.watch.set { $0.coveredAfterReadySeconds = seconds }
        log.info("watch: \(watcher?.watchedCount ?? 0) folders watched \(Int(seconds * 1000)) ms after ready")
        returnFreedMemory()
    }

    /// After a read of every folder and certificate (the first load, the pass that settles the
    /// watches, a SIGHUP): what those passes allocated and freed per folder stays with malloc,
    /// spread over its arenas, unless it is asked to give it back. At 100 000 sites that is
    /// 90 MiB of the resident memory a minute after ready (docs/performance.md, "Start-up at
    /// 100 000 sites"). Not after every reload: the few folders a change names free little.
    private func returnFreedMemory() {
        _ = malloc_trim(0)
    }

    /// While draining: waits at most `timeout` ms for another SIGTERM/SIGINT (a SIGHUP is read
    /// and ignored: nothing is reloaded on the way out).
    func nextStopSignal(timeout: Int32) -> Bool {
        var fds = pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, timeout) > 0 else { return false }
        let signal = readSignal()
        return signal == SIGTERM || signal == SIGINT
    }

    private func readSignal() -> Int32 {
        var info = signalfd_siginfo()
        let n = read(signalFD, &info, MemoryLayout<signalfd_siginfo>.size)
        return n == MemoryLayout<signalfd_siginfo>.size ? Int32(info.ssi_signo) : 0
    }

    private func reload(_ scope: ReloadScope, quietIfUnchanged: Bool = false) {
        let read = publisher.reload(scope, quietIfUnchanged: quietIfUnchanged)
        // The watches follow the folders that changed (all of them after a full reload).
        rearm(read)
    }

    /// Watches the config and certs directories, every folder in them, and the directories
    /// that hold them, for their names: renaming a directory into place, or swapping a symlink,
    /// changes the parent, not the directory watched before. After a change to some folders,
    /// only those are looked at again.
    private func rearm(_ scope: ReloadScope = .everything) {
        guard let watcher else { return }
        let config = configuration.configDirectory
        let certs = pollsCertificates ? nil : configuration.certsDirectory
        if scope.allSites || (scope.allCertificates && certs != nil) {
            var roots: [String] = []
            var directories: [(String, DirectoryWatcher.Role)] = []
            if !pollsConfig {
                roots.append(config)
                directories.append((config, .configRoot))
                for entry in (try? DirectoryListing.entries(in: config, sorted: false)) ?? [] where !entry.name.hasPrefix(".") {
                    if DirectoryListing.isDirectory(entry, in: config) { directories.append((DirectoryListing.path(config, entry.name), .site(entry.name))) }
                }
            }
            if let certs {
                roots.append(certs)
                directories.append((certs, .certsRoot))
                // Certificate folders (certbot's `NAME/`, a Kubernetes Secret's `NAME/` whose
                // `..data` is swapped on renewal): a change inside names that certificate.
                for entry in (try? DirectoryListing.entries(in: certs, sorted: false)) ?? [] where !entry.name.hasPrefix(".") {
                    if DirectoryListing.isDirectory(entry, in: certs) { directories.append((DirectoryListing.path(certs, entry.name), .certificate(entry.name))) }
                }
            }
            watcher.update(roots: roots, directories: directories)
            return
        }
        for name in scope.sites.union(scope.checkedSites) where !pollsConfig && !name.hasPrefix(".") && !name.contains("/") {
            watcher.refresh(config + "/" + name, role: .site(name))
        }
        if let certs {
            for name in scope.certificates where !name.hasPrefix(".") && !name.contains("/") {
                watcher.refresh(certs + "/" + name, role: .certificate(name))
            }
        }
    }
}
