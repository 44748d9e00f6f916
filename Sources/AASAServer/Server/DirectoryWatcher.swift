import CLinux
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

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
        /// Almost always one directory (two paths to one inode are rare): that one inline, the
        /// others in an array made only for them, at 100 000 site folders.
        private var first: (path: String, role: Role)?
        private var others: [(path: String, role: Role)] = []
        var names: Set<String> = []

        var directories: [(path: String, role: Role)] { (first.map { [$0] } ?? []) + others }
        var hasDirectories: Bool { first != nil }

        /// `path` watched as `role`, in place of what it was watched as before.
        mutating func set(_ path: String, role: Role) {
            remove(path)
            if first == nil { first = (path, role) } else { others.append((path, role)) }
        }

        mutating func remove(_ path: String) {
            others.removeAll { $0.path == path }
            if first?.path == path { first = others.isEmpty ? nil : others.removeFirst() }
        }
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
        watches[wd, default: Watch()].set(path, role: role)
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
        watches[wd]?.remove(path)
        removeIfUnused(wd)
    }

    private func detach(parent path: String) {
        guard let (wd, _) = byParent.removeValue(forKey: path) else { return }
        watches[wd]?.names = []
        removeIfUnused(wd)
    }

    private func removeIfUnused(_ wd: Int32) {
        guard let watch = watches[wd], !watch.hasDirectories, watch.names.isEmpty else { return }
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
