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

    init() throws(Failure) {
        let base = LocalCopy.base
        var template = Array((base + "/" + LocalCopy.prefix + "\(getpid())-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure(description: "cannot make the local copy under \(base): \(String(cString: strerror(errno)))")
        }
        root = String(cString: made)
        for folder in [root + "/config", root + "/certs"] where mkdir(folder, 0o700) != 0 {
            throw Failure(description: "cannot make \(folder): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes the copy, for at most `budgetMilliseconds`: a copy of 100 000 sites takes longer
    /// to unlink than a shutdown may last, and what is left is removed by the next start.
    func remove(budgetMilliseconds: Int64 = 1_000) {
        LocalCopy.removeTree(root, until: monotonicMilliseconds() + budgetMilliseconds)
    }

    /// Removes, off the start's path, the copies whose processes are gone.
    static func removeAbandoned(log: Log) {
        _ = startDetachedThread {
            var removed = 0
            for entry in (try? DirectoryListing.entries(in: base)) ?? [] where entry.name.hasPrefix(prefix) {
                let rest = entry.name.dropFirst(prefix.count)
                guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid != getpid() else { continue }
                // kill(pid, 0): ESRCH when no such process; anything else means it may live.
                if kill(pid, 0) == 0 || errno != ESRCH { continue }
                if removeTree(base + "/" + entry.name, until: Int64.max) { removed += 1 }
            }
            if removed > 0 { log.info("store: removed \(removed) local copies left by processes that are gone") }
        }
    }

    /// True when everything was removed in time.
    @discardableResult
    private static func removeTree(_ path: String, until deadline: Int64) -> Bool {
        for entry in (try? DirectoryListing.entries(in: path)) ?? [] {
            if monotonicMilliseconds() >= deadline { return false }
            let child = path + "/" + entry.name
            var st = stat()
            if lstat(child, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
                if !removeTree(child, until: deadline) { return false }
            } else {
                unlink(child)
            }
        }
        return rmdir(path) == 0
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
