import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The PostgreSQL store's local copy under $TMPDIR (docs/replicas.md): a start removes only the
/// copies of processes that are gone, never anything a symlink points to, never the live copy of
/// a replica in another PID namespace.
@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "needs Debian's postgresql (make test-deps installs it)"))
struct ServeStoreCopyTests {
    static func replica(_ url: String, tmp: URL, launcher: [String] = []) throws -> ServerProcess {
        // The write API on, with the token the write API's tests use.
        let tokens = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-tokens-\(UUID().uuidString)")
        try "backend:\(ServeWriteAPITests.token)\n".write(to: tokens, atomically: false, encoding: .utf8)
        let server = try ServerProcess(sites: [:], extraArguments: ["--admin-token-file", tokens.path], launcher: launcher,
                                       environment: ["TMPDIR": tmp.path], store: url)
        guard ServerProcess.waitFor(timeout: 15, { try server.admin("/readyz").status == 200 }) else {
            throw HarnessError(description: "replica not ready: \(server.log)")
        }
        return server
    }

    static func copies(in tmp: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: tmp.path).filter { $0.hasPrefix("aasa-store-") }.sorted()
    }

    @Test func aStartRemovesAbandonedCopiesButNeverFollowsASymlink() throws {
        let pg = try PostgresCluster()
        let tmp = try TemporaryDirectory()
        // Someone else's files, and a link to them under a copy's name with a PID that is gone.
        let victim = try TemporaryDirectory()
        try victim.write("keep/precious", "mine")
        try FileManager.default.createSymbolicLink(atPath: tmp.url.path + "/aasa-store-999999999-planted", withDestinationPath: victim.url.path)
        // A copy whose process is gone: a folder of ours, mode 0700, its lock held by nobody.
        let abandoned = tmp.url.appendingPathComponent("aasa-store-999999998-left")
        try FileManager.default.createDirectory(at: abandoned.appendingPathComponent("config/old.example.com"), withIntermediateDirectories: true)
        FileManager.default.createFile(atPath: abandoned.appendingPathComponent(".lock").path, contents: nil)
        chmod(abandoned.path, 0o700)
        let server = try Self.replica(pg.url, tmp: tmp.url)
        #expect(server.waitForLog("store: removed 1 local copies"), "\(server.log)")
        #expect(FileManager.default.fileExists(atPath: victim.url.path + "/keep/precious"), "a symlink was followed")
        #expect(!FileManager.default.fileExists(atPath: abandoned.path))
        let left = try Self.copies(in: tmp.url)
        #expect(left.count == 2, "its own copy and the planted link: \(left)")
    }

    @Test func aReplicaInAnotherPIDNamespaceLeavesALiveCopyAlone() throws {
        let pg = try PostgresCluster()
        let tmp = try TemporaryDirectory()
        let first = try Self.replica(pg.url, tmp: tmp.url)
        let before = try Self.copies(in: tmp.url)
        #expect(before.count == 1)
        // The second replica cannot see the first's PID: only the copy's lock says it lives.
        let second = try Self.replica(pg.url, tmp: tmp.url, launcher: ["/usr/bin/unshare", "--pid", "--fork", "--kill-child", "--mount-proc"])
        usleep(500_000)
        #expect(!second.log.contains("removed"), "\(second.log)")
        #expect(try Self.copies(in: tmp.url).contains(before[0]))
        // And both still follow the store.
        let file = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/ns"}]}]}}"#
        try ServeStoreTests.upsert(pg, "ns.example.com", file)
        for replica in [first, second] {
            #expect(ServeStoreTests.within(2) { try ServeWriteAPITests.served(replica, "ns.example.com").body == file }, "\(replica.log)")
        }
        // Looked at again once the second's clean-up has long had its turn.
        #expect(try Self.copies(in: tmp.url).contains(before[0]))
        #expect(!second.log.contains("removed"), "\(second.log)")
    }

    @Test func theFirstWriteAfterPostgreSQLRestartedSucceeds() throws {
        let pg = try PostgresCluster()
        let server = try ServeStoreTests.replica(pg.url)
        let file = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/r"}]}]}}"#
        #expect(RawHTTP.status(try ServeWriteAPITests.put(server, "restart.example.com", file)) == 201)
        pg.stop()
        usleep(500_000)
        try pg.start()
        #expect(ServeStoreTests.within(12) {
            (try server.status()["summary"] as? [String: Any]).flatMap { $0["store"] as? [String: Any] }?["connected"] as? Bool == true
        }, "\(server.log)")
        // The write API's own connection is the one from before the restart: tried once more.
        let r = try ServeWriteAPITests.put(server, "restart.example.com", file.replacingOccurrences(of: "/r", with: "/after"))
        #expect(RawHTTP.status(r) == 200, "\(r) \(server.log)")
    }

    @Test func aStoreThatComesBackAsAnotherDatabaseIsReadAgainWhole() throws {
        let pg = try PostgresCluster()
        let a = try ServeStoreTests.replica(pg.url), b = try ServeStoreTests.replica(pg.url)
        let file = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/old"}]}]}}"#
        for i in 0..<3 { #expect(RawHTTP.status(try ServeWriteAPITests.put(a, "old\(i).example.com", file)) == 201) }
        #expect(ServeStoreTests.within(2) { try ServeWriteAPITests.served(b, "old2.example.com").status == 200 })
        // The store made again from nothing (as a recreated database or an empty restore is):
        // its change log starts again at the revisions the replicas already applied.
        let r = try pg.sql("DROP TABLE aasa_files, aasa_certificates, aasa_changes, aasa_schema, aasa_store CASCADE")
        #expect(r.status == 0, "\(r.stderr)")
        for replica in [a, b] {
            #expect(ServeStoreTests.within(15) { try ServeWriteAPITests.served(replica, "old0.example.com").status == 404 }, "\(replica.log)")
        }
        // Writes after it came back reach every replica.
        let fresh = file.replacingOccurrences(of: "/old", with: "/new")
        for i in 0..<3 {
            let put = try ServeWriteAPITests.put(b, "new\(i).example.com", fresh)
            #expect(RawHTTP.status(put) == 201, "\(put)")
        }
        #expect(ServeStoreTests.within(2) { try ServeWriteAPITests.served(a, "new2.example.com").body == fresh }, "\(a.log)")
        #expect(ServeStoreTests.within(2) { try ServeWriteAPITests.served(a, "new0.example.com").body == fresh }, "\(a.log)")
    }

    @Test func aWriteCommittedWhileTheLocalCopyCannotBeWrittenSaysSoAndIsServedOnceItCan() throws {
        let pg = try PostgresCluster()
        let tmp = try TemporaryDirectory()
        // $TMPDIR on a small tmpfs of the replica's own mount namespace, filled through /proc.
        let a = try Self.replica(pg.url, tmp: tmp.url, launcher: ["/usr/bin/unshare", "-m", "/bin/sh", "-c",
                                                                  #"mount -t tmpfs -o size=2m tmpfs "$TMPDIR" && exec "$0" "$@""#])
        let b = try ServeStoreTests.replica(pg.url)
        let fill = "/proc/\(a.process.processIdentifier)/root\(tmp.url.path)/fill"
        let r = try Shell.run("/bin/bash", ["-c", "dd if=/dev/zero of='\(fill)' bs=4096 2>/dev/null; true"])
        #expect(r.status == 0)
        let file = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/full"}]}]}}"#
        let put = try ServeWriteAPITests.put(a, "full.example.com", file)
        #expect(RawHTTP.status(put) == 500, "\(put)")
        #expect(put.contains("committed to the store"), "\(put)")
        #expect(ServeStoreTests.within(2) { try ServeWriteAPITests.served(b, "full.example.com").body == file })
        let again = try ServeWriteAPITests.put(a, "full.example.com", file, headers: ["If-None-Match: *"])
        #expect(RawHTTP.status(again) == 412, "\(again)")
        unlink(fill)
        #expect(ServeStoreTests.within(10) { try ServeWriteAPITests.served(a, "full.example.com").body == file }, "\(a.log)")
    }
}
