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
    /// How often the watched directories are checked for having been replaced, and how often
    /// everything is read again when inotify cannot watch it all.
    private let rescanInterval: Int64 = 1000

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
        var lastCheck = monotonicMilliseconds()
        while true {
            var timeout = Int32(rescanInterval)
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
            if t - lastCheck >= rescanInterval {
                lastCheck = t
                if let watcher, watcher.isComplete {
                    // A watched directory replaced by another (a rename into place, a symlink
                    // swapped, a directory that is back) without an event that said so, for
                    // instance when a directory above the watched parent was renamed.
                    if let path = watcher.replacedRoot() {
                        log.info("\(path) now leads to another directory: reloading")
                        reload()
                    }
                } else {
                    // Not everything is watched: read everything again, saying nothing unless
                    // something changed.
                    reload(quietIfUnchanged: true)
                }
            }
        }
    }

    private func readSignal() -> Int32 {
        var info = signalfd_siginfo()
        let n = read(signalFD, &info, MemoryLayout<signalfd_siginfo>.size)
        return n == MemoryLayout<signalfd_siginfo>.size ? Int32(info.ssi_signo) : 0
    }

    private func reload(quietIfUnchanged: Bool = false) {
        let started = monotonicMilliseconds()
        let previous = state.snapshots.load().0
        // In development the leaf certificate follows the sites: a new site gets a new leaf.
        state.dev?.ensureCertificates(configDirectory: configuration.configDirectory, log: log)
        let next = builder.build(previous: previous)
        // The paths are resolved again on every reload: the watches follow a directory that
        // replaced another.
        rearm()
        if quietIfUnchanged && next.isSame(as: previous) { return }
        state.snapshots.publish(next)
        state.metrics.reloads.add(1, ordering: .relaxed)
        // A reload error is a newly read file that was rejected, of any kind.
        let rejected = next.sites.filter { site in
            let before = previous.index[site.name]
            return site.files.contains { $0.state != .serving && $0.differs(from: before?.file($0.kind)) }
        }
        state.metrics.recordReloadErrors(sites: rejected.map(\.name.description))
        // The counts are those /status shows; "newly" counts files this reload read and refused.
        let counts = Dictionary(grouping: next.sites, by: \.state).mapValues(\.count)
        log.info("reloaded: \(next.sites.count) sites, \(counts[.serving] ?? 0) serving, \(counts[.stale] ?? 0) stale, \(counts[.rejected] ?? 0) rejected (\(rejected.count) newly), in \(monotonicMilliseconds() - started) ms")
    }

    /// Watches the config and certs directories, every folder in them, and the directories
    /// that hold them, for their names: renaming a directory into place, or swapping a symlink,
    /// changes the parent, not the directory watched before.
    private func rearm() {
        guard let watcher else { return }
        var roots = [configuration.configDirectory]
        if let certs = configuration.certsDirectory { roots.append(certs) }
        var directories = roots
        for dir in roots {
            for name in (try? DirectoryListing.names(in: dir)) ?? [] {
                let path = dir + "/" + name
                if DirectoryListing.isDirectory(path) { directories.append(path) }
            }
        }
        watcher.update(roots: roots, directories: directories)
    }
}

extension SiteSnapshot {
    /// True when a rebuild found nothing new: the builder reuses what did not change.
    func isSame(as other: SiteSnapshot) -> Bool {
        sites.count == other.sites.count && zip(sites, other.sites).allSatisfy { $0 === $1 }
            && certificates === other.certificates
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

    /// What one watch descriptor stands for: directories watched for any change inside, and
    /// names watched in a parent directory (only events about those names count).
    private struct Watch {
        var directories: Set<String> = []
        var names: Set<String> = []
    }

    private var watches: [Int32: Watch] = [:]
    private var byDirectory: [String: (wd: Int32, identity: Identity)] = [:]
    private var byParent: [String: (wd: Int32, identity: Identity)] = [:]
    /// The config and certs directories, and what they led to at the last update (nil: nothing).
    private var roots: [String: Identity?] = [:]
    /// False when a watch could not be added (the per-user limit): changes may go unseen, so
    /// the control loop reads everything again every second.
    private(set) var isComplete = true
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
    func update(roots: [String], directories: [String]) {
        var complete = true
        var parents: [String: Set<String>] = [:]
        self.roots = [:]
        for root in roots {
            self.roots[root] = Identity(root)
            if let (parent, name) = DirectoryWatcher.split(root) { parents[parent, default: []].insert(name) }
        }
        let wanted = Set(directories)
        for path in byDirectory.keys where !wanted.contains(path) { detach(directory: path) }
        for path in byParent.keys where parents[path] == nil { detach(parent: path) }
        for path in wanted {
            let identity = Identity(path)
            if let current = byDirectory[path], current.identity == identity { continue }
            if byDirectory[path] != nil { detach(directory: path) }
            guard let identity else { continue }
            guard let wd = add(path) else { complete = false; continue }
            watches[wd, default: Watch()].directories.insert(path)
            byDirectory[path] = (wd, identity)
        }
        for (path, names) in parents {
            let identity = Identity(path)
            if let current = byParent[path], current.identity == identity {
                watches[current.wd]?.names = names
                continue
            }
            if byParent[path] != nil { detach(parent: path) }
            guard let identity else { continue }
            guard let wd = add(path, mask: DirectoryWatcher.nameMask) else { complete = false; continue }
            watches[wd, default: Watch()].names = names
            byParent[path] = (wd, identity)
        }
        if complete && !isComplete {
            log.info("inotify: every directory is watched again; no more rescans")
        }
        isComplete = complete
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
        guard let (wd, _) = byDirectory.removeValue(forKey: path) else { return }
        watches[wd]?.directories.remove(path)
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

    /// Reads all pending events; returns true if any of them matters.
    func drain() -> Bool {
        var relevant = false
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
                    relevant = true
                    continue
                }
                guard let watch = watches[event.wd] else { continue }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    // The directory is gone: its watch went with it.
                    watches[event.wd] = nil
                    byDirectory = byDirectory.filter { $0.value.wd != event.wd }
                    byParent = byParent.filter { $0.value.wd != event.wd }
                    relevant = true
                    continue
                }
                if !watch.directories.isEmpty || event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    relevant = true
                } else if event.len > 0 {
                    let name = String(cString: (buffer + nameStart).assumingMemoryBound(to: CChar.self))
                    if watch.names.contains(name) { relevant = true }
                }
            }
        }
        return relevant
    }
}
