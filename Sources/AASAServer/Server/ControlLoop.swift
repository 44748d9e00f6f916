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

    /// Quiet time after the last change before a reload, and the longest a reload waits while
    /// changes keep coming: a burst of writes becomes one reload, well within a second.
    private let debounce: Int64 = 100
    private let maximumDelay: Int64 = 300
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

    /// Returns when SIGTERM or SIGINT arrives; the caller then drains.
    func run() {
        // Once the watches exist, every stamp is compared after the usual debounce (a file being
        // written when they were added is read once its writer is done, like any change).
        let coverageStarted = monotonicMilliseconds()
        var settling = coverEveryFolder()
        var events = [epoll_event](repeating: epoll_event(), count: 4)
        var firstChange: Int64? = settling ? monotonicMilliseconds() : nil
        var lastChange: Int64 = firstChange ?? 0
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
                        state.writeAPI.withLock { $0 }?.tokens.refresh(force: true)
                        state.storeSync.withLock { $0 }?.fullLoadRequested.store(true, ordering: .relaxed)
                        pending.formUnion(.everything)
                        reload(pending)
                        pending = ReloadScope()
                        firstChange = nil
                        if settling {
                            // That was the pass the watches were waiting for.
                            settling = false
                            reportCoverage(since: coverageStarted)
                        }
                    default:
                        break
                    }
                } else if let watcher {
                    let changed = watcher.drain()
                    if !changed.isEmpty {
                        pending.formUnion(changed)
                        let t = monotonicMilliseconds()
                        if firstChange == nil { firstChange = t }
                        lastChange = t
                    }
                }
            }
            let t = monotonicMilliseconds()
            if let first = firstChange, t >= min(lastChange + debounce, first + maximumDelay) {
                firstChange = nil
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
                    if DirectoryListing.isDirectory(entry, in: config) { directories.append((config + "/" + entry.name, .site(entry.name))) }
                }
            }
            if let certs {
                roots.append(certs)
                directories.append((certs, .certsRoot))
                // Certificate folders (certbot's `NAME/`, a Kubernetes Secret's `NAME/` whose
                // `..data` is swapped on renewal): a change inside names that certificate.
                for entry in (try? DirectoryListing.entries(in: certs, sorted: false)) ?? [] where !entry.name.hasPrefix(".") {
                    if DirectoryListing.isDirectory(entry, in: certs) { directories.append((certs + "/" + entry.name, .certificate(entry.name))) }
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

/// Filesystems on which inotify reports only this machine's changes, by statfs(2) f_type
/// (linux/magic.h and the filesystems' own headers).
enum NetworkFilesystem {
    static let types: [Int: String] = [
        0x6969: "NFS",
        0x517B: "SMB",
        0xFF53_4D42: "CIFS",
        0xFE53_4D42: "SMB2",
        0x00C3_6400: "CephFS",
        0x6573_5546: "FUSE",
        0x0102_1997: "9P",
        0x4749_5046: "GlusterFS",
        0x0BD0_0BD0: "Lustre",
    ]

    /// The network filesystem `path` is on, or nil for a local one (or when statfs fails).
    static func kind(of path: String) -> String? {
        let type = aasa_statfs_type(path)
        guard type >= 0 else { return nil }
        return types[Int(UInt32(truncatingIfNeeded: type))]
    }
}

/// inotify(7) on directories: any change inside is reported as "something changed"; the
/// reload compares contents, so precise events are not needed. A directory is watched by inode,
/// so the watches are checked against what their paths lead to now, and moved when that changed.
final class DirectoryWatcher {
    let fd: Int32
    private let log: Log

    /// A directory as the kernel knows it: what a path led to when its watch was added.
    private struct Identity: Equatable {
        var device: UInt
        var inode: UInt

        init?(_ path: String) {
            var st = stat()
            guard stat(path, &st) == 0, st.st_mode & S_IFMT == S_IFDIR else { return nil }
            device = UInt(st.st_dev)
            inode = UInt(st.st_ino)
        }
    }

    /// What a watched directory is: a change inside it names the site or certificate to read.
    enum Role: Hashable {
        case configRoot
        case certsRoot
        /// A site folder, by its name in the config directory.
        case site(String)
        /// A certificate folder (certbot layout), by its name in the certs directory.
        case certificate(String)
    }

    /// What one watch descriptor stands for: directories watched for any change inside, and
    /// names watched in a parent directory (only events about those names count).
    private struct Watch {
        /// Almost always one (two paths to one inode are rare): a small array, not a
        /// dictionary per watch, at 100 000 site folders.
        var directories: [(path: String, role: Role)] = []
        var names: Set<String> = []
    }

    private var watches: [Int32: Watch] = [:]
    private var byDirectory: [String: (wd: Int32, identity: Identity, role: Role)] = [:]
    /// Folders that could not be watched (the per-user limit), checked a slice at a time.
    private var unwatched: [String: Role] = [:]
    private var unwatchedOrder: [String] = []
    private var unwatchedCursor = 0
    private var byParent: [String: (wd: Int32, identity: Identity)] = [:]
    /// The config and certs directories, and what they led to at the last update (nil: nothing).
    private var roots: [String: Identity?] = [:]
    /// False when a watch could not be added (the per-user limit): changes there may go
    /// unseen, so the control loop checks those folders by their stamps, a slice each second.
    private(set) var isComplete = true
    /// Folders watched now (site and certificate folders, and the roots).
    var watchedCount: Int { byDirectory.count }
    private var limitLogged = false

    private static let mask = UInt32(IN_CREATE | IN_DELETE | IN_MODIFY | IN_MOVED_FROM | IN_MOVED_TO
        | IN_CLOSE_WRITE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)
    /// A parent is watched for names only: a name that appears, goes or is renamed. Not for
    /// writes to its other files: a log file beside the config directory (`aasa serve > aasa.log`)
    /// would wake the control thread on every flush. Added to any mask the same directory
    /// already has (IN_MASK_ADD), for a parent that is also a watched directory.
    private static let nameMask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR | IN_MASK_ADD)

    init?(log: Log) {
        self.log = log
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        if fd < 0 {
            log.warning("inotify unavailable (\(String(cString: strerror(errno)))); the config and certs directories are read again every second")
            return nil
        }
    }

    deinit { close(fd) }

    /// Makes the watches match `directories` (watched for any change) and the parents of
    /// `roots` (watched for the roots' names), as those paths resolve now.
    func update(roots: [String], directories: [(String, Role)]) {
        unwatched = [:]
        var parents: [String: Set<String>] = [:]
        self.roots = [:]
        for root in roots {
            self.roots[root] = Identity(root)
            if let (parent, name) = DirectoryWatcher.split(root) { parents[parent, default: []].insert(name) }
        }
        let wanted = Dictionary(directories, uniquingKeysWith: { a, _ in a })
        for path in byDirectory.keys where wanted[path] == nil { detach(directory: path) }
        for path in byParent.keys where parents[path] == nil { detach(parent: path) }
        // The parents and the roots first: when the per-user limit of watches runs out (two
        // replicas of 100 000 folders each), it is site folders that go unwatched, checked a
        // slice at a time, and never the roots, whose loss meant listing every certificate
        // every 10 s (make bench-api, docs/performance.md).
        for (path, names) in parents {
            let identity = Identity(path)
            if let current = byParent[path], current.identity == identity {
                watches[current.wd]?.names = names
                continue
            }
            if byParent[path] != nil { detach(parent: path) }
            guard let identity else { continue }
            guard let wd = add(path, mask: DirectoryWatcher.nameMask) else { continue }
            watches[wd, default: Watch()].names = names
            byParent[path] = (wd, identity)
        }
        let isRoot = Set(roots)
        for (path, role) in directories where isRoot.contains(path) { refresh(path, role: role, announce: false) }
        for (path, role) in directories where !isRoot.contains(path) { refresh(path, role: role, announce: false) }
        settle()
    }

    /// Makes the watch of one directory match what its path leads to now: added when it is
    /// new or was replaced, removed when it is gone.
    func refresh(_ path: String, role: Role, announce: Bool = true) {
        let identity = Identity(path)
        if let current = byDirectory[path], current.identity == identity, current.role == role { return }
        if byDirectory[path] != nil { detach(directory: path) }
        guard let identity else {
            if unwatched.removeValue(forKey: path) != nil, announce { settle() }
            return
        }
        guard let wd = add(path) else {
            if unwatched.updateValue(role, forKey: path) == nil { unwatchedOrder.append(path) }
            if announce { settle() }
            return
        }
        watches[wd, default: Watch()].directories.removeAll { $0.path == path }
        watches[wd, default: Watch()].directories.append((path, role))
        byDirectory[path] = (wd, identity, role)
        if unwatched.removeValue(forKey: path) != nil, announce { settle() }
    }

    private func settle() {
        let complete = unwatched.isEmpty
        if complete && !isComplete {
            log.info("inotify: every directory is watched again; no more rescans")
            unwatchedOrder = []
            unwatchedCursor = 0
        }
        isComplete = complete
    }

    static let minimumSlice = 1000

    /// Whether a certificate folder could not be watched.
    var hasUnwatchedCertificates: Bool {
        unwatched.values.contains { if case .certificate = $0 { return true } else { return false } }
    }

    /// The next slice of the folders that could not be watched, sized so that each is checked
    /// once per `cycle` calls, and at least ``minimumSlice`` of them each time (a few folders
    /// are all checked every call).
    func unwatchedSlice(cycle: Int64) -> ReloadScope {
        var scope = ReloadScope()
        guard !unwatched.isEmpty else { return scope }
        if unwatchedOrder.count > 2 * unwatched.count {
            unwatchedOrder = unwatchedOrder.filter { unwatched[$0] != nil }
            unwatchedCursor = 0
        }
        let size = max(DirectoryWatcher.minimumSlice, (unwatched.count + Int(cycle) - 1) / Int(cycle))
        var taken = 0
        var steps = 0
        while taken < size, steps < unwatchedOrder.count {
            if unwatchedCursor >= unwatchedOrder.count { unwatchedCursor = 0 }
            let path = unwatchedOrder[unwatchedCursor]
            unwatchedCursor += 1
            steps += 1
            guard let role = unwatched[path] else { continue }
            taken += 1
            // A root that could not be watched: its listing may have changed.
            switch role {
            case .site(let name): scope.checkedSites.insert(name)
            case .configRoot: scope.allSites = true
            case .certsRoot: scope.allCertificates = true
            case .certificate: break
            }
        }
        return scope
    }

    /// A root (config or certs directory) that leads somewhere else than at the last update.
    func replacedRoot() -> String? {
        roots.first { path, identity in Identity(path) != identity }?.key
    }

    private func add(_ path: String, mask: UInt32 = DirectoryWatcher.mask) -> Int32? {
        let wd = inotify_add_watch(fd, path, mask)
        if wd >= 0 { return wd }
        let error = errno
        // Gone or replaced by a file since it was listed: the next reload sees it.
        if error == ENOENT || error == ENOTDIR { return nil }
        if !limitLogged {
            limitLogged = true
            let remedy = error == ENOSPC
                ? "the per-user limit on inotify watches is reached; raise it with sysctl fs.inotify.max_user_watches=N (or /proc/sys/user/max_inotify_watches)"
                : String(cString: strerror(error))
            log.warning("inotify: cannot watch \(path): \(remedy); until every directory is watched, the config and certs directories are read again every second")
        }
        return nil
    }

    private func detach(directory path: String) {
        guard let (wd, _, _) = byDirectory.removeValue(forKey: path) else { return }
        watches[wd]?.directories.removeAll { $0.path == path }
        removeIfUnused(wd)
    }

    private func detach(parent path: String) {
        guard let (wd, _) = byParent.removeValue(forKey: path) else { return }
        watches[wd]?.names = []
        removeIfUnused(wd)
    }

    private func removeIfUnused(_ wd: Int32) {
        guard let watch = watches[wd], watch.directories.isEmpty, watch.names.isEmpty else { return }
        watches[wd] = nil
        inotify_rm_watch(fd, wd)
    }

    /// `/a/b/config` → (`/a/b`, `config`); `config` → (`.`, `config`); nil for `/`, `.` or `..`.
    static func split(_ path: String) -> (parent: String, name: String)? {
        let name = path.split(separator: "/").last.map(String.init) ?? ""
        guard !name.isEmpty, name != ".", name != ".." else { return nil }
        guard let slash = path.lastIndex(of: "/") else { return (".", name) }
        let parent = String(path[..<slash])
        return (parent.isEmpty ? "/" : parent, name)
    }

    /// Reads all pending events: what they name (site folders, certificates), or everything
    /// when an event was lost or a watched root itself changed.
    func drain() -> ReloadScope {
        var scope = ReloadScope()
        let size = 64 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer, size)
            if n <= 0 { break }
            var offset = 0
            while offset < n {
                let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
                let nameStart = offset + MemoryLayout<inotify_event>.size
                offset = nameStart + Int(event.len)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    // Events were lost: compare everything by stamps.
                    scope.formUnion(.everything)
                    continue
                }
                guard let watch = watches[event.wd] else { continue }
                let name = event.len > 0 ? String(cString: (buffer + nameStart).assumingMemoryBound(to: CChar.self)) : nil
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    // The directory is gone: its watch went with it.
                    watches[event.wd] = nil
                    for (path, role) in watch.directories {
                        byDirectory[path] = nil
                        DirectoryWatcher.note(role, name: nil, in: &scope)
                    }
                    if !watch.names.isEmpty {
                        byParent = byParent.filter { $0.value.wd != event.wd }
                        scope.formUnion(.everything)
                    }
                    continue
                }
                for (_, role) in watch.directories { DirectoryWatcher.note(role, name: name, in: &scope) }
                if !watch.names.isEmpty {
                    if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                        scope.formUnion(.everything)
                    } else if let name, watch.names.contains(name) {
                        scope.formUnion(.everything)
                    }
                }
            }
        }
        return scope
    }

    /// What an event in a watched directory asks to read again.
    private static func note(_ role: Role, name: String?, in scope: inout ReloadScope) {
        switch role {
        case .configRoot:
            // An entry of the config directory is a site folder; the directory itself (no
            // name: moved, deleted) takes everything.
            guard let name else { scope.allSites = true; return }
            if !name.hasPrefix(".") { scope.sites.insert(name) }
        case .certsRoot:
            guard let name else { scope.allCertificates = true; return }
            // `..data` and the like: a Kubernetes Secret mounted as the certs directory swaps
            // every file at once.
            if name.hasPrefix("..") { scope.allCertificates = true } else if !name.hasPrefix(".") {
                scope.certificates.insert(CertificateStore.certificateName(forEntry: name))
            }
        case .site(let folder):
            scope.sites.insert(folder)
        case .certificate(let folder):
            scope.certificates.insert(folder)
        }
    }
}
