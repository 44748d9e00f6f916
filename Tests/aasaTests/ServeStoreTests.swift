import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let aasaPath = "apple-app-site-association"
private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// Replicas on one PostgreSQL store (docs/replicas.md), against a real throwaway cluster.
@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "needs Debian's postgresql (make test-deps installs it)"))
struct ServeStoreTests {
    /// A replica on `url`, with the write API on; ready (its first load done).
    static func replica(_ url: String, extra: [String] = [], waitReady: Bool = true) throws -> ServerProcess {
        let server = try ServeWriteAPITests.server(sites: [:], extra: extra, store: url)
        if waitReady {
            guard ServerProcess.waitFor(timeout: 15, { try server.admin("/readyz").status == 200 }) else {
                throw HarnessError(description: "replica not ready: \(server.log)")
            }
        }
        return server
    }

    /// The store's tables, as the first replica makes them.
    static func prepare(_ pg: PostgresCluster) throws {
        let first = try replica(pg.url)
        _ = first.stop()
    }

    /// A file row written by SQL, as a platform's backend would.
    static func upsert(_ pg: PostgresCluster, _ host: String, _ body: String, file: String = aasaPath) throws {
        let hex = body.utf8.map { String(format: "%02x", $0) }.joined()
        let r = try pg.sql("""
            INSERT INTO aasa_files (host, name, content) VALUES ('\(host)', '\(file)', '\\x\(hex)'::bytea)
            ON CONFLICT (host, name) DO UPDATE SET content = EXCLUDED.content, updated_at = now()
            """)
        if r.status != 0 { throw HarnessError(description: r.stderr) }
    }

    static func within(_ seconds: Double, _ condition: () throws -> Bool) -> Bool {
        ServerProcess.waitFor(timeout: seconds, condition)
    }

    @Test func aWriteThroughOneReplicaIsServedByTheOthersWithinASecond() throws {
        let pg = try PostgresCluster()
        let a = try Self.replica(pg.url), b = try Self.replica(pg.url), c = try Self.replica(pg.url)
        let put = try ServeWriteAPITests.put(a, "shared.example.com", appFile("/one"))
        #expect(RawHTTP.status(put) == 201, "\(put)")
        // The replica that answered serves it already; the others within a second.
        #expect(try ServeWriteAPITests.served(a, "shared.example.com").body == appFile("/one"))
        for other in [b, c] {
            #expect(Self.within(1) { try ServeWriteAPITests.served(other, "shared.example.com").body == appFile("/one") }, "\(other.log)")
        }
        // Stored as the table contract says.
        #expect(try pg.sql("SELECT convert_from(content, 'UTF8') FROM aasa_files WHERE host = 'shared.example.com'").stdout
                    .trimmingCharacters(in: .whitespacesAndNewlines) == appFile("/one"))
        let summary = try #require(try b.status()["summary"] as? [String: Any])
        let store = try #require(summary["store"] as? [String: Any])
        #expect(store["kind"] as? String == "postgres" && store["connected"] as? Bool == true && store["since"] is String)
        #expect(RawHTTP.status(try ServeWriteAPITests.call(a, "DELETE", "/sites/shared.example.com")) == 204)
        #expect(Self.within(1) { try ServeWriteAPITests.served(c, "shared.example.com").status == 404 })
    }

    @Test func rowsWrittenBySQLAreValidatedAndServedLikeFiles() throws {
        let pg = try PostgresCluster()
        let server = try Self.replica(pg.url)
        try Self.upsert(pg, "sql.example.com", appFile("/by-sql"))
        #expect(Self.within(1) { try ServeWriteAPITests.served(server, "sql.example.com").body == appFile("/by-sql") }, "\(server.log)")
        // An update to an invalid file: the last good version keeps serving, `stale`.
        try Self.upsert(pg, "sql.example.com", #"{"applinks": {"details": [{"appIDs": ["nope"]}]}}"#)
        #expect(Self.within(2) { try server.site("sql.example.com")?["state"] as? String == "stale" }, "\(server.log)")
        #expect(try ServeWriteAPITests.served(server, "sql.example.com").body == appFile("/by-sql"))
        // A wildcard site and several rows in one transaction.
        try pg.sql("""
            BEGIN;
            INSERT INTO aasa_files (host, name, content) VALUES ('*.wild.example', '\(aasaPath)', convert_to('\(appFile("/w"))', 'UTF8'));
            INSERT INTO aasa_files (host, name, content) VALUES ('two.example.com', '\(aasaPath)', convert_to('\(appFile("/2"))', 'UTF8'));
            COMMIT;
            """)
        #expect(Self.within(1) { try ServeWriteAPITests.served(server, "a.wild.example").body == appFile("/w") })
        #expect(try ServeWriteAPITests.served(server, "two.example.com").body == appFile("/2"))
        // A row no site can have is ignored, the others serve.
        try pg.sql("INSERT INTO aasa_files (host, name, content) VALUES ('Bad Host', '\(aasaPath)', '\\x7b7d'::bytea)")
        #expect(server.waitForLog("store: aasa_files row"), "\(server.log)")
        try pg.sql("DELETE FROM aasa_files WHERE host = 'sql.example.com'")
        #expect(Self.within(1) { try ServeWriteAPITests.served(server, "sql.example.com").status == 404 })
        #expect(try ServeWriteAPITests.served(server, "two.example.com").status == 200)
    }

    @Test func aCertificateRowIsUsedByTheNextHandshake() throws {
        let pg = try PostgresCluster()
        let server = try Self.replica(pg.url)
        let dir = try TemporaryDirectory()
        let (chain, key) = try ServeWriteAPICertificateTests.leaf("row.example.com", in: dir.url)
        try Self.upsert(pg, "row.example.com", appFile("/x"))
        try pg.sql("INSERT INTO aasa_certificates (name, chain, key) VALUES ('row', '\(chain)', '\(key)')")
        #expect(Self.within(2) { try ServeWriteAPICertificateTests.presented(server, "row.example.com").contains("CN = row.example.com") }, "\(server.log)")
        let r = try server.curlHTTPS(host: "row.example.com")
        #expect(r.stdout.contains("200"), "\(r.stdout) \(r.stderr)")
        try pg.sql("DELETE FROM aasa_certificates WHERE name = 'row'")
        #expect(Self.within(2) { !(try ServeWriteAPICertificateTests.presented(server, "row.example.com")).contains("row.example.com") })
    }

    @Test func aReplicaCutFromTheStoreKeepsServingRefusesWritesAndCatchesUpDeletionsIncluded() throws {
        let pg = try PostgresCluster()
        try Self.prepare(pg)
        let relay = try TCPRelay(to: pg.port)
        let url = "postgres://postgres@127.0.0.1:\(relay.port)/postgres"
        try Self.upsert(pg, "kept.example.com", appFile("/kept"))
        try Self.upsert(pg, "gone.example.com", appFile("/gone"))
        let server = try Self.replica(url)
        #expect(try ServeWriteAPITests.served(server, "gone.example.com").status == 200)
        relay.stop()
        #expect(Self.within(8) { (try server.status()["summary"] as? [String: Any]).flatMap { $0["store"] as? [String: Any] }?["connected"] as? Bool == false },
                "\(server.log)")
        // Away: it serves what it had, stays ready, and writes get 503.
        #expect(try ServeWriteAPITests.served(server, "kept.example.com").body == appFile("/kept"))
        #expect(try server.admin("/readyz").status == 200)
        let refused = try ServeWriteAPITests.put(server, "new.example.com", appFile("/n"))
        #expect(RawHTTP.status(refused) == 503, "\(refused)")
        #expect(try ServeWriteAPITests.json(refused)["error"] is String)
        // Meanwhile, on the store: a delete, an update and a new site.
        try pg.sql("DELETE FROM aasa_files WHERE host = 'gone.example.com'")
        try Self.upsert(pg, "kept.example.com", appFile("/kept2"))
        try Self.upsert(pg, "added.example.com", appFile("/added"))
        try relay.start()
        // Back within its back-off (1 s, then 2 s, 4 s …) plus the catch-up.
        #expect(Self.within(12) { try ServeWriteAPITests.served(server, "gone.example.com").status == 404 }, "\(server.log)")
        #expect(try ServeWriteAPITests.served(server, "kept.example.com").body == appFile("/kept2"))
        #expect(try ServeWriteAPITests.served(server, "added.example.com").body == appFile("/added"))
        #expect(RawHTTP.status(try ServeWriteAPITests.put(server, "new.example.com", appFile("/n"))) == 201)
    }

    @Test func postgresStoppedAndStartedUnderLoadFailsNoRequest() throws {
        let pg = try PostgresCluster()
        let server = try Self.replica(pg.url)
        #expect(RawHTTP.status(try ServeWriteAPITests.put(server, "load.example.com", appFile("/load"))) == 201)
        let failures = Guarded<[String]>([])
        let done = Guarded(false)
        let sent = Guarded(0)
        nonisolated(unsafe) let shared = server
        let reader = Thread {
            // Bounded: at most 20 s or 20 000 requests.
            let end = Date().addingTimeInterval(20)
            while !done.withLock({ $0 }), Date() < end, sent.withLock({ $0 }) < 20_000 {
                let r = (try? ServeWriteAPITests.served(shared, "load.example.com")) ?? (status: 0, body: "")
                sent.withLock { $0 += 1 }
                if r.status != 200 || r.body != appFile("/load") { failures.withLock { $0.append("\(r.status)") } }
            }
        }
        reader.start()
        usleep(300_000)
        pg.stop()
        usleep(1_500_000)
        try pg.start()
        #expect(Self.within(12) { (try server.status()["summary"] as? [String: Any]).flatMap { $0["store"] as? [String: Any] }?["connected"] as? Bool == true },
                "\(server.log)")
        try Self.upsert(pg, "after.example.com", appFile("/after"))
        #expect(Self.within(2) { try ServeWriteAPITests.served(server, "after.example.com").status == 200 })
        done.withLock { $0 = true }
        while !reader.isFinished { usleep(10_000) }
        #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0.prefix(5) })")
        #expect(sent.withLock { $0 } > 50)
    }

    @Test func aReplicaStartedWithTheStoreDownIsNotReadyAndSaysWhyUntilItLoads() throws {
        let pg = try PostgresCluster()
        try Self.prepare(pg)
        try Self.upsert(pg, "early.example.com", appFile("/early"))
        let relay = try TCPRelay(to: pg.port, start: false)
        let server = try Self.replica("postgres://postgres@127.0.0.1:\(relay.port)/postgres", waitReady: false)
        let notReady = try server.admin("/readyz")
        #expect(notReady.status == 503 && notReady.body.contains("store"), "\(notReady)")
        #expect(try server.admin("/healthz").status == 200)
        try relay.start()
        #expect(Self.within(12) { try server.admin("/readyz").status == 200 }, "\(server.log)")
        #expect(try ServeWriteAPITests.served(server, "early.example.com").body == appFile("/early"))
    }

    @Test func twoReplicasRacingOnOneVersionGiveExactlyOneWinner() throws {
        let pg = try PostgresCluster()
        let a = try Self.replica(pg.url), b = try Self.replica(pg.url)
        let first = try ServeWriteAPITests.put(a, "race.example.com", appFile("/v1"))
        let etag = try #require(RawHTTP.header("ETag", in: first))
        let results = Guarded<[Int]>([])
        nonisolated(unsafe) let replicas = [a, b]
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            let r = (try? ServeWriteAPITests.put(replicas[i % 2], "race.example.com", appFile("/r\(i)"), headers: ["If-Match: \(etag)"])) ?? ""
            results.withLock { $0.append(RawHTTP.status(r) ?? 0) }
        }
        let statuses = results.withLock { $0 }
        #expect(statuses.filter { $0 == 200 }.count == 1, "\(statuses)")
        #expect(statuses.filter { $0 == 412 }.count == 5, "\(statuses)")
    }

    @Test func keysWrittenWithASecretAreSealedInTheStoreAndOpenedByEveryReplicaWithIt() throws {
        let pg = try PostgresCluster()
        let dir = try TemporaryDirectory()
        let secret = dir.url.appendingPathComponent("secret")
        try String(repeating: "0123456789abcdef", count: 4).write(to: secret, atomically: true, encoding: .utf8)
        let a = try Self.replica(pg.url, extra: ["--store-secret-file", secret.path])
        let b = try Self.replica(pg.url, extra: ["--store-secret-file", secret.path])
        #expect(a.log.contains("private keys written to the store are sealed"), "\(a.log)")
        let (chain, key) = try ServeWriteAPICertificateTests.leaf("sealed.example.com", in: dir.url)
        try Self.upsert(pg, "sealed.example.com", appFile("/s"))
        let put = try ServeWriteAPITests.call(a, "PUT", "/certificates/sealed", body: try ServeWriteAPICertificateTests.body(chain: chain, key: key))
        #expect(RawHTTP.status(put) == 201, "\(put)")
        let stored = try pg.sql("SELECT key FROM aasa_certificates WHERE name = 'sealed'").stdout
        #expect(stored.hasPrefix("aasa-sealed:v1:") && !stored.contains("PRIVATE KEY"), "\(stored)")
        for replica in [a, b] {
            #expect(Self.within(2) { try ServeWriteAPICertificateTests.presented(replica, "sealed.example.com").contains("CN = sealed.example.com") },
                    "\(replica.log)")
        }
        // A replica without the secret says why it cannot load the certificate, and serves the rest.
        let c = try Self.replica(pg.url)
        #expect(c.waitForLog("certificate sealed: the key is sealed"), "\(c.log)")
        #expect(c.log.contains("no --store-secret-file: private keys written to the store are stored as PEM"))
        #expect(try ServeWriteAPITests.served(c, "sealed.example.com").status == 200)
        // A secret too short is refused at start.
        try "short".write(to: secret, atomically: true, encoding: .utf8)
        let r = try Shell.run(AASABinary.url.path, ["serve", "--store", pg.url, "--store-secret-file", secret.path, "--http", "127.0.0.1:0",
                                                     "--https", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--cdn-watch", "off"], timeout: 30)
        #expect(r.status == 1 && r.stderr.contains("at least 32 are needed"), "\(r.stderr)")
    }

    @Test func aStoreWithANewerSchemaIsRefusedAtStart() throws {
        let pg = try PostgresCluster()
        _ = try Self.replica(pg.url)
        try pg.sql("UPDATE aasa_schema SET version = 99")
        let r = try Shell.run(AASABinary.url.path, ["serve", "--store", pg.url, "--http", "127.0.0.1:0", "--https", "127.0.0.1:0",
                                                     "--admin", "127.0.0.1:0", "--cdn-watch", "off"], timeout: 30)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("newer than this aasa knows"), "\(r.stderr)")
    }

    @Test func theLocalCopyOfAKilledReplicaIsRemovedByTheNextStart() throws {
        let pg = try PostgresCluster()
        try Self.prepare(pg)
        try Self.upsert(pg, "copy.example.com", appFile("/c"))
        let killed = try Self.replica(pg.url)
        // "loaded N sites (…) from /tmp/aasa-store-PID-XXXXXX/config in …"
        let line = try #require(killed.log.split(separator: "\n").first { $0.contains("aasa-store-") })
        let from = try #require(line.range(of: " from "))
        let config = String(line[from.upperBound...].prefix { $0 != " " })
        let root = String(config.dropLast("/config".count))
        #expect(FileManager.default.fileExists(atPath: root))
        _ = killed.stop(signal: SIGKILL)
        #expect(FileManager.default.fileExists(atPath: root), "a killed process leaves its copy")
        let next = try Self.replica(pg.url)
        #expect(Self.within(5) { !FileManager.default.fileExists(atPath: root) }, "\(next.log)")
        // A replica stopped by SIGTERM removes its own.
        let line2 = try #require(next.log.split(separator: "\n").first { $0.contains("aasa-store-") })
        let from2 = try #require(line2.range(of: " from "))
        let root2 = String(String(line2[from2.upperBound...].prefix { $0 != " " }).dropLast("/config".count))
        #expect(next.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: root2))
    }

    @Test func storeAndFoldersTogetherIsBadUsage() throws {
        let r = try Shell.run(AASABinary.url.path, ["serve", "--store", "postgres://x@127.0.0.1:1/x", "--config", "config"])
        #expect(r.status == 64 || r.status == 2, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("--store replaces --config and --certs"))
    }
}
