import AASAPostgres
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The folders a replica keeps its copy of the PostgreSQL store in (docs/replicas.md): private
/// to the process (mode 0700 under $TMPDIR), made at start and removed at exit. A copy can be
/// made again from the store at any time, so its writes are not synced to disk.
struct LocalCopy {
    let root: String
    var config: String { root + "/config" }
    var certs: String { root + "/certs" }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The folder copies are made in: $TMPDIR, else /tmp.
    static var base: String { TemporaryFolder.path }

    /// `aasa-store-PID-`: the process that owns a copy, so a later start can tell the copies
    /// of processes that are gone (killed before they could remove theirs).
    private static let prefix = "aasa-store-"

    /// `.lock` in the copy, held (flock) by its process while it lives: a later start, in this
    /// PID namespace or another sharing $TMPDIR (a container's replicas), removes a copy only
    /// when it can take that lock. A PID says nothing across namespaces.
    private static let lockName = ".lock"
    /// The lock's descriptor, held open (and so locked) until the process ends.
    private let lock: Int32

    init() throws(Failure) {
        let base = LocalCopy.base
        // Made under a name no clean-up looks at, locked, then renamed to its own: another
        // replica's clean-up never sees it without its lock held.
        var template = Array((base + "/." + LocalCopy.prefix + "\(getpid())-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure(description: "cannot make the local copy under \(base): \(String(cString: strerror(errno)))")
        }
        let hidden = String(cString: made)
        lock = open(hidden + "/" + LocalCopy.lockName, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard lock >= 0, flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            throw Failure(description: "cannot lock the local copy \(hidden): \(String(cString: strerror(errno)))")
        }
        root = base + "/" + String(hidden.split(separator: "/").last!.dropFirst())
        guard rename(hidden, root) == 0 else {
            throw Failure(description: "cannot rename the local copy \(hidden): \(String(cString: strerror(errno)))")
        }
        for folder in [root + "/config", root + "/certs"] where mkdir(folder, 0o700) != 0 {
            throw Failure(description: "cannot make \(folder): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes the copy, for at most `budgetMilliseconds`: a copy of 100 000 sites takes longer
    /// to unlink than a shutdown may last, and what is left is removed by the next start.
    func remove(budgetMilliseconds: Int64 = 1_000) {
        let parent = open(LocalCopy.base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return }
        defer { close(parent) }
        let name = String(root.split(separator: "/").last ?? "")
        LocalCopy.removeTree(name, in: parent, until: monotonicMilliseconds() + budgetMilliseconds)
    }

    /// Removes, off the start's path, the copies of processes that are gone: a folder of this
    /// user, never a symlink (an entry is opened with O_NOFOLLOW and checked before anything
    /// in it goes), whose lock no process holds.
    static func removeAbandoned(log: Log) {
        _ = startDetachedThread {
            let parent = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard parent >= 0 else { return }
            defer { close(parent) }
            var removed = 0
            for entry in (try? DirectoryListing.entries(in: base)) ?? [] where entry.name.hasPrefix(prefix) {
                let folder = openat(parent, entry.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                guard folder >= 0 else { continue }
                defer { close(folder) }
                var st = stat()
                guard fstat(folder, &st) == 0, st.st_uid == geteuid(), st.st_mode & 0o077 == 0 else { continue }
                let held = openat(folder, lockName, O_RDWR | O_NOFOLLOW | O_CLOEXEC)
                if held >= 0 {
                    defer { close(held) }
                    // Its owner is alive, here or in another PID namespace.
                    guard flock(held, LOCK_EX | LOCK_NB) == 0 else { continue }
                } else {
                    // A copy made before the lock: its process, if this namespace can tell.
                    let rest = entry.name.dropFirst(prefix.count)
                    guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid != getpid() else { continue }
                    if kill(pid, 0) == 0 || errno != ESRCH { continue }
                }
                if removeTree(entry.name, in: parent, until: Int64.max) { removed += 1 }
            }
            if removed > 0 { log.info("store: removed \(removed) local copies left by processes that are gone") }
        }
    }

    /// Removes `name` in the directory open as `parent` and everything under it, never following
    /// a symlink (each directory is opened with O_NOFOLLOW, so one swapped for a link is only
    /// unlinked). True when everything was removed in time.
    @discardableResult
    private static func removeTree(_ name: String, in parent: Int32, until deadline: Int64) -> Bool {
        let fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else {
            // Not a directory (a file, a symlink): the entry itself goes.
            return unlinkat(parent, name, 0) == 0 || errno == ENOENT
        }
        guard let directory = fdopendir(fd) else {
            close(fd)
            return false
        }
        var children: [String] = []
        while let entry = readdir(directory) {
            let child = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if child != ".", child != ".." { children.append(child) }
        }
        defer { closedir(directory) }
        for child in children {
            if monotonicMilliseconds() >= deadline { return false }
            if unlinkat(fd, child, 0) != 0, errno == EISDIR || errno == EPERM {
                if !removeTree(child, in: fd, until: deadline) { return false }
            }
        }
        return unlinkat(parent, name, AT_REMOVEDIR) == 0
    }
}

/// The first contact with the store, before the listeners are bound: a schema newer than this
/// server knows ends the start; a store that cannot be reached does not (the replica starts,
/// not ready, and keeps trying).
enum PostgresStartup {
    struct Refused: Error, CustomStringConvertible {
        var description: String
    }

    static func check(url: String, log: Log) throws(Refused) {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            throw Refused(description: "--store must be a postgres:// or postgresql:// URL")
        }
        do {
            let c = try PostgresConnection(url: url)
            try PostgresSchema.prepare(c)
        } catch {
            if error.state == "aasa-schema" { throw Refused(description: error.message) }
            let message = url.isEmpty ? error.message : error.message.replacing(url, with: "--store URL")
            log.error("store: cannot reach PostgreSQL yet (\(message)); not ready until the first load, retrying")
        }
    }
}
