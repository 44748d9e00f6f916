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

    init() throws(Failure) {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base + "/aasa-store-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure(description: "cannot make the local copy under \(base): \(String(cString: strerror(errno)))")
        }
        root = String(cString: made)
        for folder in [root + "/config", root + "/certs"] where mkdir(folder, 0o700) != 0 {
            throw Failure(description: "cannot make \(folder): \(String(cString: strerror(errno)))")
        }
    }

    /// Removes the copy, every file in it.
    func remove() {
        LocalCopy.removeTree(root)
    }

    private static func removeTree(_ path: String) {
        for entry in (try? DirectoryListing.entries(in: path)) ?? [] {
            let child = path + "/" + entry.name
            var st = stat()
            if lstat(child, &st) == 0, st.st_mode & S_IFMT == S_IFDIR {
                removeTree(child)
            } else {
                unlink(child)
            }
        }
        rmdir(path)
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
