import AASACore
import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// The main thread after start: waits for signals (signalfd) and for changes in the config and
/// certs directories (inotify), and rebuilds the snapshot off the hot path (SPEC 3.4, 3.6).
final class ControlLoop {
    private let configuration: ServerConfiguration
    private let builder: SnapshotBuilder
    private let state: ServerState
    private let log: Log
    private let signalFD: Int32
    private let watcher: DirectoryWatcher?
    private let epfd: Int32

    /// Quiet time after the last change before a reload, and the longest a reload waits while
    /// changes keep coming: a burst of writes becomes one reload, well within a second.
    private let debounce: Int64 = 100
    private let maximumDelay: Int64 = 300

    /// Fails when the loop could never be told to stop: SIGTERM is blocked in every thread and
    /// only this signalfd receives it.
    init(configuration: ServerConfiguration, builder: SnapshotBuilder, state: ServerState, log: Log, signals: sigset_t) throws(SystemError) {
        self.configuration = configuration
        self.builder = builder
        self.state = state
        self.log = log
        var signals = signals
        var opened: [Int32] = []
        do {
            let signalFD = try check("signalfd") { signalfd(-1, &signals, Int32(SFD_NONBLOCK | SFD_CLOEXEC)) }
            opened.append(signalFD)
            let epfd = try Epoll.create()
            opened.append(epfd)
            try Epoll.add(epfd, signalFD, events: Epoll.readable, data: 0)
            let watcher = DirectoryWatcher(log: log)
            if let watcher { try Epoll.add(epfd, watcher.fd, events: Epoll.readable, data: 1) }
            (self.signalFD, self.epfd, self.watcher) = (signalFD, epfd, watcher)
        } catch {
            for fd in opened { close(fd) }
            throw error
        }
        rearm()
    }

    deinit {
        close(signalFD)
        close(epfd)
    }

    /// Returns when SIGTERM or SIGINT arrives; the caller then drains.
    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 4)
        var firstChange: Int64?
        var lastChange: Int64 = 0
        var lastRearm = monotonicMilliseconds()
        while true {
            var timeout: Int32 = 1000
            let now = monotonicMilliseconds()
            if let first = firstChange {
                let due = min(lastChange + debounce, first + maximumDelay)
                timeout = Int32(max(0, due - now))
            }
            let n = Epoll.wait(epfd, &events, capacity: Int32(events.count), timeout: timeout)
            for i in 0..<n {
                if events[i].data.u64 == 0 {
                    switch readSignal() {
                    case SIGTERM, SIGINT:
                        log.info("signal received: stopping")
                        state.draining.store(true, ordering: .releasing)
                        return
                    case SIGHUP:
                        log.info("SIGHUP: reloading")
                        reload()
                        firstChange = nil
                    default:
                        break
                    }
                } else if watcher?.drain() == true {
                    let t = monotonicMilliseconds()
                    if firstChange == nil { firstChange = t }
                    lastChange = t
                }
            }
            let t = monotonicMilliseconds()
            if let first = firstChange, t >= min(lastChange + debounce, first + maximumDelay) {
                firstChange = nil
                reload()
            }
            // A watched directory that vanished (or was never there) is looked for again.
            if t - lastRearm >= 1000 {
                lastRearm = t
                if watcher?.needsRearm(configuration.configDirectory) == true {
                    log.info("config directory \(configuration.configDirectory) is back: reloading")
                    reload()
                }
            }
        }
    }

    private func readSignal() -> Int32 {
        var info = signalfd_siginfo()
        let n = read(signalFD, &info, MemoryLayout<signalfd_siginfo>.size)
        return n == MemoryLayout<signalfd_siginfo>.size ? Int32(info.ssi_signo) : 0
    }

    private func reload() {
        let started = monotonicMilliseconds()
        let previous = state.snapshots.load().0
        // In development the leaf certificate follows the sites: a new site gets a new leaf.
        state.dev?.ensureCertificates(configDirectory: configuration.configDirectory, log: log)
        let next = builder.build(previous: previous)
        state.snapshots.publish(next)
        state.metrics.reloads.add(1, ordering: .relaxed)
        // A reload error is a newly read file that was rejected.
        let rejected = next.sites.filter { site in
            guard site.state != .serving else { return false }
            guard let before = previous.index[site.name] else { return true }
            return before.newest.bytes != site.newest.bytes || before.refusal != site.refusal
        }
        state.metrics.recordReloadErrors(sites: rejected.map(\.name.description))
        rearm()
        log.info("reloaded: \(next.sites.count) sites, \(next.sites.filter { $0.state == .serving }.count) serving, \(rejected.count) rejected, in \(monotonicMilliseconds() - started) ms")
    }

    /// Watches the config and certs directories and every folder in them.
    private func rearm() {
        guard let watcher else { return }
        var directories = [configuration.configDirectory]
        if let certs = configuration.certsDirectory { directories.append(certs) }
        for dir in directories {
            watcher.watch(dir)
            for name in (try? DirectoryListing.names(in: dir)) ?? [] {
                let path = dir + "/" + name
                if DirectoryListing.isDirectory(path) { watcher.watch(path) }
            }
        }
    }
}

/// inotify(7) on directories: any change inside is reported as "something changed"; the
/// reload compares contents, so precise events are not needed.
final class DirectoryWatcher {
    let fd: Int32
    private var watches: [Int32: String] = [:]
    private var byPath: [String: Int32] = [:]
    private let log: Log

    private static let mask = UInt32(IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO
        | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    init?(log: Log) {
        self.log = log
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 {
            log.warning("inotify unavailable (\(String(cString: strerror(errno)))); reload with SIGHUP")
            return nil
        }
    }

    deinit { close(fd) }

    func watch(_ path: String) {
        let wd = inotify_add_watch(fd, path, DirectoryWatcher.mask)
        guard wd >= 0 else { return }
        watches[wd] = path
        byPath[path] = wd
    }

    /// True when `path` is not watched (it was removed or never existed) but exists now.
    func needsRearm(_ path: String) -> Bool {
        if byPath[path] != nil { return false }
        guard DirectoryListing.isDirectory(path) else { return false }
        watch(path)
        return byPath[path] != nil
    }

    /// Reads all pending events; returns true if there were any.
    func drain() -> Bool {
        var any = false
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer, size)
            if n <= 0 { break }
            any = true
            var offset = 0
            while offset < n {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                if event.mask & UInt32(IN_IGNORED) != 0, let path = watches.removeValue(forKey: event.wd) {
                    // The directory is gone (or was replaced): its watch went with it.
                    if byPath[path] == event.wd { byPath[path] = nil }
                }
                offset += MemoryLayout<inotify_event>.size + Int(event.len)
            }
        }
        return any
    }
}
