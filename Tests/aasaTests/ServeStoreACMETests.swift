import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--acme` with `--store` (docs/replicas.md, "ACME with the store"): replicas on one PostgreSQL
/// store behind a round-robin balancer, against Pebble.
@Suite(.serialized, .enabled(if: PostgresCluster.isAvailable, "needs Debian's postgresql (make test-deps installs it)"))
struct ServeStoreACMETests {
    let acme = ACMETests()

    /// A store holding `hosts`' files, its tables made by a first replica.
    private func store(_ hosts: [String]) throws -> PostgresCluster {
        let pg = try PostgresCluster()
        try ServeStoreTests.prepare(pg)
        for host in hosts { try ServeStoreTests.upsert(pg, host, exampleCom) }
        return pg
    }

    private func count(_ pg: PostgresCluster, _ query: String) throws -> Int {
        let r = try pg.sql(query)
        guard r.status == 0, let n = Int(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw HarnessError(description: "\(query): \(r.stdout) \(r.stderr)")
        }
        return n
    }

    private func replica(_ pebble: Pebble, _ ports: ServerProcess.Ports, _ pg: PostgresCluster, challenge: String = "tls-alpn-01",
                         extra: [String] = []) throws -> ServerProcess {
        try acme.startServer(pebble, ports: ports, sites: [], challenge: challenge, extra: extra, store: pg.url)
    }

    @Test(arguments: ["tls-alpn-01", "http-01"])
    func replicasOnOneStoreOrderEachHostOnceAnswerEachOthersChallengesAndSealTheKeys(challenge: String) throws {
        let pg = try store(ACMETests.hosts)
        let replicaPorts = [try acme.freePorts(), try acme.freePorts()]
        let tlsFront = try freePort(), httpFront = try freePort()
        let pebble = try Pebble(.init(httpPort: httpFront, tlsPort: tlsFront))
        let (haproxy, balancer) = try ACMETests.roundRobin(tls: tlsFront, http: httpFront, replicas: replicaPorts)
        defer { haproxy.stop(grace: 10); _ = balancer }
        let secret = try TemporaryDirectory()
        let secretFile = try secret.write("secret", String(repeating: "s3cr3t-", count: 8))
        let extra = ["--store-secret-file", secretFile]
        let a = try replica(pebble, replicaPorts[0], pg, challenge: challenge, extra: extra)
        let b = try replica(pebble, replicaPorts[1], pg, challenge: challenge, extra: extra)
        #expect(acme.waitForCertificates(a, ACMETests.hosts, timeout: 90), "\(a.log)\n\(b.log)")
        #expect(acme.waitForCertificates(b, ACMETests.hosts, timeout: 10), "\(b.log)")
        usleep(1_000_000)
        let issued = try (acme.metric(a, "issued") ?? 0) + (acme.metric(b, "issued") ?? 0)
        #expect(issued == ACMETests.hosts.count, "each host ordered once: \(a.log)\n\(b.log)")
        #expect(try acme.metric(a, "failed") == 0 && acme.metric(b, "failed") == 0, "\(a.log)\n\(b.log)")
        // In the store: one certificate row per host, marked as ACME's, its key sealed; one account.
        #expect(try count(pg, "SELECT count(*) FROM aasa_certificates c JOIN aasa_acme_certificates USING (name)") == 3)
        #expect(try count(pg, "SELECT count(*) FROM aasa_certificates WHERE key LIKE 'aasa-sealed:v1:%'") == 3)
        #expect(try count(pg, "SELECT count(*) FROM aasa_acme_accounts WHERE key LIKE 'aasa-sealed:v1:%' AND url IS NOT NULL") == 1)
        #expect(try count(pg, "SELECT count(*) FROM aasa_acme_challenges") == 0, "every challenge withdrawn")
        let root = try pebble.issuingRoot()
        for host in ACMETests.hosts {
            #expect(try acme.verify(host, port: tlsFront, root: root).stdout.contains("Verify return code: 0 (ok)"))
        }
        if challenge == "http-01" {
            // Both replicas answered the CA's fetches, from the store's challenges.
            #expect(a.accessLog.contains("/.well-known/acme-challenge/") && b.accessLog.contains("/.well-known/acme-challenge/"))
            #expect(!a.accessLog.contains("\" 404 "), "\(a.accessLog)")
            #expect(!b.accessLog.contains("\" 404 "), "\(b.accessLog)")
        }
    }

    @Test func aRestartOrdersNothingAndASiteDeletedBySQLLosesItsCertificate() throws {
        let hosts = ["one.acme.test", "two.acme.test"]
        let pg = try store(hosts)
        let ports = try acme.freePorts()
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        var first: ServerProcess? = try replica(pebble, ports, pg)
        #expect(acme.waitForCertificates(first!, hosts, timeout: 60), "\(first!.log)")
        #expect(first!.log.contains("no --store-secret-file"), "keys stored as PEM, said once")
        #expect(first!.stop() == 0)
        first = nil
        // Another replica (the first one's local copy is gone): the certificates come from the store.
        let next = try replica(pebble, ports, pg)
        #expect(ServerProcess.waitFor(timeout: 15) { try next.admin("/readyz").status == 200 })
        #expect(acme.waitForCertificates(next, hosts, timeout: 10), "\(next.log)")
        usleep(1_500_000)
        #expect(!next.log.contains("ordering"), "nothing ordered again: \(next.log)")
        #expect(try acme.verify("one.acme.test", port: next.https, root: try pebble.issuingRoot()).stdout.contains("Verify return code: 0 (ok)"))
        // The platform deletes a site by SQL: its certificate goes once the site has been gone 10 s.
        #expect(try pg.sql("DELETE FROM aasa_files WHERE host = 'two.acme.test'").status == 0)
        #expect(ServerProcess.waitFor(timeout: 25) { try count(pg, "SELECT count(*) FROM aasa_certificates WHERE name = 'two.acme.test'") == 0 },
                "\(next.log)")
        #expect(try count(pg, "SELECT count(*) FROM aasa_acme_certificates") == 1)
        #expect(next.waitForLog("acme: two.acme.test: no site uses this certificate any more; removed"))
        #expect(try acme.acmeCertificates(next).keys.sorted() == ["one.acme.test"])
    }

    /// The holder of a host's lock dies mid-order (a psql session stands in for a replica killed
    /// by SIGKILL): PostgreSQL releases its lock with its session, and the replica that waited orders.
    @Test func aHolderOfTheLockThatDiesReleasesItAndAnotherReplicaOrders() throws {
        let pg = try store(["one.acme.test"])
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/psql")
        holder.arguments = ["-X", "-q", "-h", "127.0.0.1", "-p", String(pg.port), "-U", "postgres", "-d", "postgres"]
        // The lock taken, then the session idle (as a replica's is while it talks to the CA),
        // psql waiting for more input that never comes.
        let input = Pipe()
        holder.standardInput = input
        holder.standardOutput = FileHandle.nullDevice
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        input.fileHandleForWriting.write(Data("SELECT pg_advisory_lock(hashtextextended('aasa-acme:one.acme.test', 0));\n".utf8))
        defer { try? input.fileHandleForWriting.close() }
        defer { if holder.isRunning { kill(holder.processIdentifier, SIGKILL) } }
        #expect(ServerProcess.waitFor(timeout: 10) { try count(pg, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") == 1 })
        let ports = try acme.freePorts()
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        let server = try replica(pebble, ports, pg)
        // It waits while the lock is held.
        #expect(ServerProcess.waitFor(timeout: 15) {
            let hosts = (try server.status()["acme"] as? [String: Any])?["hosts"] as? [[String: Any]] ?? []
            return hosts.contains { ($0["error"] as? String)?.contains("another replica") == true }
        }, "\(server.log)")
        #expect(try acme.acmeCertificates(server).isEmpty)
        // The holder dies; the lock goes with its session, and the next attempt (5 s on) orders.
        kill(holder.processIdentifier, SIGKILL)
        #expect(acme.waitForCertificates(server, ["one.acme.test"], timeout: 30), "\(server.log)")
        #expect(try count(pg, "SELECT count(*) FROM aasa_acme_certificates") == 1)
    }

    @Test func theOrderRateIsOneBucketForAllReplicas() throws {
        let pg = try store(ACMETests.hosts)
        let replicaPorts = [try acme.freePorts(), try acme.freePorts()]
        let tlsFront = try freePort(), httpFront = try freePort()
        let pebble = try Pebble(.init(httpPort: httpFront, tlsPort: tlsFront))
        let (haproxy, balancer) = try ACMETests.roundRobin(tls: tlsFront, http: httpFront, replicas: replicaPorts)
        defer { haproxy.stop(grace: 10); _ = balancer }
        // Two orders per 3 hours for the whole store: each replica's own bucket would allow four.
        let a = try replica(pebble, replicaPorts[0], pg, extra: ["--acme-order-rate", "2"])
        let b = try replica(pebble, replicaPorts[1], pg, extra: ["--acme-order-rate", "2"])
        #expect(ServerProcess.waitFor(timeout: 60) { try count(pg, "SELECT count(*) FROM aasa_acme_certificates") >= 2 }, "\(a.log)\n\(b.log)")
        usleep(5_000_000)
        #expect(try count(pg, "SELECT count(*) FROM aasa_acme_certificates") == 2, "\(a.log)\n\(b.log)")
        // The third host waits, and /status says for how long (about 1.5 hours).
        let queue = try #require(try a.status()["acme"] as? [String: Any])
        #expect(queue["queued"] as? Int == 1, "\(queue)")
        let next = try #require((queue["nextOrderAt"] as? String).flatMap { ISO8601DateFormatter.withMilliseconds.date(from: $0) }, "\(queue)")
        #expect(next.timeIntervalSinceNow > 3_600 && next.timeIntervalSinceNow < 3 * 3_600, "\(queue)")
    }
}

private extension ISO8601DateFormatter {
    static var withMilliseconds: ISO8601DateFormatter {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f
    }
}
