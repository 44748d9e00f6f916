import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `aasa serve --acme` against Pebble (docs/acme.md): real orders, real validations over loopback.
@Suite(.serialized) struct ACMETests {
    static let hosts = ["one.acme.test", "two.acme.test", "three.acme.test"]

    /// A server with ACME on, fixed ports (the CA must know them) and a retry base of `retryMS`.
    func startServer(_ pebble: Pebble?, ports: ServerProcess.Ports, directoryURL: String? = nil,
                     sites: [String] = ACMETests.hosts, challenge: String = "tls-alpn-01", extra: [String] = [],
                     retryMS: Int = 1000, reuse: TemporaryDirectory? = nil, store: String? = nil) throws -> ServerProcess {
        let directory = directoryURL ?? pebble!.directoryURL
        return try ServerProcess(sites: Dictionary(uniqueKeysWithValues: sites.map { ($0, exampleCom) }),
                                 extraArguments: ["--acme", "--acme-directory", directory, "--acme-ca-root", Pebble.caRoot,
                                                  "--acme-challenge", challenge, "--acme-email", "ops@acme.test"] + extra,
                                 workers: 2, ports: ports, certificates: false,
                                 environment: ["AASA_ACME_RETRY_BASE_MS": "\(retryMS)"], reuse: reuse, store: store)
    }

    func freePorts() throws -> ServerProcess.Ports {
        ServerProcess.Ports(https: try freePort(), http: try freePort(), admin: 0)
    }

    /// The ACME certificates `/status` lists, by name.
    func acmeCertificates(_ server: ServerProcess) throws -> [String: [String: Any]] {
        let certs = try server.status()["certificates"] as? [[String: Any]] ?? []
        var out: [String: [String: Any]] = [:]
        for c in certs where c["source"] as? String == "acme" { out[c["name"] as? String ?? ""] = c }
        return out
    }

    func waitForCertificates(_ server: ServerProcess, _ hosts: [String], timeout: Double = 60) -> Bool {
        ServerProcess.waitFor(timeout: timeout) { try Set(acmeCertificates(server).keys).isSuperset(of: hosts) }
    }

    /// `openssl s_client` with verification against pebble's issuing root and the host name.
    func verify(_ host: String, port: Int, root: String) throws -> CommandResult {
        try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(port)", "-servername", host, "-verify_hostname", host,
                                           "-verify_return_error", "-CAfile", root], input: "")
    }

    func metric(_ server: ServerProcess, _ result: String) throws -> Int? {
        let line = try server.admin("/metrics").body.split(separator: "\n").first { $0.hasPrefix("aasa_acme_orders_total{result=\"\(result)\"}") }
        return line.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    private func checkServed(_ server: ServerProcess, hosts: [String], root: String) throws {
        for host in hosts {
            let r = try verify(host, port: server.https, root: root)
            #expect(r.stdout.contains("Verify return code: 0 (ok)"), "\(host): \(r.stdout.suffix(400)) \(r.stderr)")
            #expect(r.stdout.contains("CN = \(host)") || r.stdout.contains("CN=\(host)"), "\(host)")
            let curl = try server.curlHTTPS(host: host, ca: root)
            #expect(RawHTTP.status(curl.stdout) == 200, "\(host): \(curl.stdout) \(curl.stderr)")
        }
    }

    @Test func threeSitesGetCertificatesThroughTLSALPN01FromAnEmptyCertsDirectory() throws {
        let ports = try freePorts()
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        let server = try startServer(pebble, ports: ports)
        #expect(waitForCertificates(server, ACMETests.hosts), "\(server.log)")
        try checkServed(server, hosts: ACMETests.hosts, root: try pebble.issuingRoot())
        // docs/acme.md, storage: the certbot layout, keys 0600, the account beside them.
        for host in ACMETests.hosts {
            var st = stat()
            #expect(stat(server.certs.appendingPathComponent("\(host)/privkey.pem").path, &st) == 0 && st.st_mode & 0o777 == 0o600)
            #expect(FileManager.default.fileExists(atPath: server.certs.appendingPathComponent("\(host)/fullchain.pem").path))
        }
        var st = stat()
        #expect(stat(server.certs.appendingPathComponent("acme/account.key").path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let account = try String(contentsOf: server.certs.appendingPathComponent("acme/account.json"), encoding: .utf8)
        #expect(account.contains("my-account"))
        let certs = try acmeCertificates(server)
        for host in ACMETests.hosts {
            #expect((certs[host]?["renewAfter"] as? String)?.hasSuffix("Z") == true)
            #expect((certs[host]?["notAfter"] as? String)?.hasSuffix("Z") == true)
        }
        #expect(try metric(server, "issued") == 3)
        #expect(pebble.log.contains("tls-alpn-01") || pebble.log.contains("set VALID"), "the CA validated")
        // The challenge certificate was only there during the challenge: acme-tls/1 now gets
        // the ordinary certificate or nothing, never a challenge certificate.
        let after = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "one.acme.test",
                                                       "-alpn", "acme-tls/1"], input: "")
        #expect(!after.stdout.contains("1.3.6.1.5.5.7.1.31"))
        #expect(!after.stdout.contains("ALPN protocol: acme-tls/1"))
    }

    @Test func threeSitesGetCertificatesThroughHTTP01() throws {
        let ports = try freePorts()
        // A third of good nonces refused: every order goes through badNonce retries (the
        // chance that eleven in a row fail is about 2 in a million).
        var options = Pebble.Options(httpPort: ports.http, tlsPort: ports.https)
        options.nonceRejectPercent = 30
        let pebble = try Pebble(options)
        let server = try startServer(pebble, ports: ports, challenge: "http-01")
        #expect(waitForCertificates(server, ACMETests.hosts), "\(server.log)")
        try checkServed(server, hosts: ACMETests.hosts, root: try pebble.issuingRoot())
        // The CA fetched the key authorizations from the HTTP listener.
        #expect(server.accessLog.contains("GET /.well-known/acme-challenge/"))
        #expect(server.accessLog.contains("\" 200 ") && server.accessLog.contains("Pebble-VA"))
        // A token that is not pending is a 404, like any other unknown path.
        let unknown = try RawHTTP.exchange(port: server.http, "GET /.well-known/acme-challenge/nope HTTP/1.1\r\nHost: one.acme.test\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(unknown) == 404)
        let status = try server.status()
        #expect((status["acme"] as? [String: Any])?["challenge"] as? String == "http-01")
        #expect(server.log.contains("(badNonce); retrying at once"))
        #expect(try metric(server, "failed") == 0, "badNonce never fails an order")
    }

    @Test func aSiteAddedWhileRunningGetsACertificateWithoutARestartAndLosesItWhenItGoes() throws {
        let ports = try freePorts()
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        let server = try startServer(pebble, ports: ports, sites: ["one.acme.test"])
        #expect(waitForCertificates(server, ["one.acme.test"]), "\(server.log)")
        try server.directory.write("config/late.acme.test/apple-app-site-association", exampleCom)
        #expect(waitForCertificates(server, ["late.acme.test"], timeout: 30), "\(server.log)")
        try checkServed(server, hosts: ["late.acme.test"], root: try pebble.issuingRoot())
        #expect(try metric(server, "issued") == 2)
        // The site goes again: 10 s later its certificate goes too (and only ACME's files).
        try FileManager.default.removeItem(at: server.config.appendingPathComponent("late.acme.test"))
        try server.directory.write("certs/late.acme.test/notes.txt", "the operator's\n")
        #expect(server.waitForLog("acme: late.acme.test: no site uses this certificate any more; removed", timeout: 25), "\(server.log)")
        #expect(ServerProcess.waitFor(timeout: 5) { try Set(acmeCertificates(server).keys) == ["one.acme.test"] })
        let left = try FileManager.default.contentsOfDirectory(atPath: server.certs.appendingPathComponent("late.acme.test").path)
        #expect(left == ["notes.txt"])
        #expect(!FileManager.default.fileExists(atPath: server.certs.appendingPathComponent("acme/certificates/late.acme.test.json").path))
    }

    @Test func aRestartReusesTheAccountAndTheCertificates() throws {
        let ports = try freePorts()
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        var server: ServerProcess? = try startServer(pebble, ports: ports)
        #expect(waitForCertificates(server!, ACMETests.hosts), "\(server!.log)")
        let directory = server!.directory
        let account = try Data(contentsOf: directory.url.appendingPathComponent("certs/acme/account.json"))
        let chain = try Data(contentsOf: directory.url.appendingPathComponent("certs/one.acme.test/fullchain.pem"))
        #expect(server!.stop() == 0)
        server = nil

        let restarted = try startServer(pebble, ports: ports, reuse: directory)
        #expect(waitForCertificates(restarted, ACMETests.hosts, timeout: 10))
        // Give the ACME thread time to look (it checks every second), then: no order at all.
        usleep(3_000_000)
        #expect(try metric(restarted, "issued") == 0)
        #expect(try metric(restarted, "failed") == 0)
        #expect(!restarted.log.contains("ordering a certificate"), "\(restarted.log)")
        #expect(!restarted.log.contains("new account key"))
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("certs/acme/account.json")) == account)
        #expect(try Data(contentsOf: directory.url.appendingPathComponent("certs/one.acme.test/fullchain.pem")) == chain)
        try checkServed(restarted, hosts: ACMETests.hosts, root: try pebble.issuingRoot())
    }

    @Test func anAccountTheCAForgotIsCreatedAgainAtOnce() throws {
        let ports = try freePorts()
        var pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        let caPort = pebble.port
        var server: ServerProcess? = try startServer(pebble, ports: ports, sites: ["one.acme.test"], retryMS: 60_000)
        #expect(waitForCertificates(server!, ["one.acme.test"]), "\(server!.log)")
        let directory = server!.directory
        #expect(server!.stop() == 0)
        server = nil
        // A new CA on the same address knows nothing of the saved account.
        pebble.stop()
        pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https, listenPort: caPort))
        try directory.write("config/two.acme.test/apple-app-site-association", exampleCom)
        let restarted = try startServer(pebble, ports: ports, reuse: directory)
        // The one-minute back-off does not apply: the account is made again and the order retried.
        #expect(waitForCertificates(restarted, ["two.acme.test"], timeout: 20), "\(restarted.log)")
        #expect(restarted.log.contains("accountDoesNotExist"))
        #expect(try metric(restarted, "failed") == 1)
        #expect(try metric(restarted, "issued") == 1)
    }

    @Test func renewalReplacesACertificateWhileAClientKeepsBeingServed() throws {
        let ports = try freePorts()
        // 30 s certificates: renewed once 20 s have passed (a third of the lifetime left).
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https, certificateValidity: 30))
        let server = try startServer(pebble, ports: ports, sites: ["one.acme.test"])
        #expect(waitForCertificates(server, ["one.acme.test"]), "\(server.log)")
        let root = try pebble.issuingRoot()
        let first = try #require(try acmeCertificates(server)["one.acme.test"]?["notAfter"] as? String)
        var requests = 0
        var failures: [String] = []
        var renewed = false
        let deadline = Date().addingTimeInterval(45)
        // Bounded: at most 45 s, then two more requests on the new certificate.
        var after = 0
        while Date() < deadline, after < 2 {
            let r = try server.curlHTTPS(host: "one.acme.test", ca: root)
            requests += 1
            if RawHTTP.status(r.stdout) != 200 { failures.append(r.stderr) }
            if !renewed, let now = try acmeCertificates(server)["one.acme.test"]?["notAfter"] as? String, now != first { renewed = true }
            if renewed { after += 1 }
            usleep(200_000)
        }
        #expect(renewed, "\(server.log)")
        #expect(failures.isEmpty, "\(failures.count) of \(requests) requests failed: \(failures.prefix(3))")
        #expect(requests > 20)
        #expect(try metric(server, "issued") ?? 0 >= 2)
        #expect(server.log.contains("certificate issued"))
    }

    @Test func aWildcardSiteIsReportedNotOrderedAndItsBaseNameGetsACertificate() throws {
        let ports = try freePorts()
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https))
        let server = try startServer(pebble, ports: ports, sites: ["*.wild.acme.test"])
        #expect(waitForCertificates(server, ["wild.acme.test"]), "\(server.log)")
        usleep(2_000_000)
        let hosts = try #require((try server.status()["acme"] as? [String: Any])?["hosts"] as? [[String: Any]])
        let wildcard = try #require(hosts.first { $0["host"] as? String == "*.wild.acme.test" })
        #expect(wildcard["state"] as? String == "wildcard")
        #expect((wildcard["error"] as? String)?.contains("DNS-01") == true)
        #expect(server.log.components(separatedBy: "site *.wild.acme.test is a wildcard").count == 2, "logged once")
        #expect(try metric(server, "issued") == 1)
        #expect(try metric(server, "failed") == 0)
        #expect(!pebble.log.contains("*.wild.acme.test"), "never ordered")
        try checkServed(server, hosts: ["wild.acme.test"], root: try pebble.issuingRoot())
    }

    @Test func whileTheCAIsDownTheServerBacksOffAndKeepsServingThenGetsItsCertificate() throws {
        let ports = try freePorts()
        let caPort = try freePort()
        let server = try startServer(nil, ports: ports, directoryURL: "https://localhost:\(caPort)/dir", sites: ["one.acme.test"], retryMS: 300)
        // Failures at 0, 0.3, 0.9, 2.1 s: the delays double.
        #expect(server.waitForLog("retrying in 1.2 s", timeout: 10), "\(server.log)")
        #expect(server.log.contains("retrying in 0.3 s") && server.log.contains("retrying in 0.6 s"))
        #expect(server.log.contains("order failed: directory: https://localhost:\(caPort)/dir"))
        // Serving throughout: plain HTTP answers, and /status shows the failure and the next try.
        let r = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: one.acme.test\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(r) == 200)
        let hosts = try #require((try server.status()["acme"] as? [String: Any])?["hosts"] as? [[String: Any]])
        #expect(hosts.first?["state"] as? String == "failed")
        #expect(hosts.first?["nextAttempt"] as? String != nil)
        #expect(try metric(server, "failed") ?? 0 >= 3)
        // The CA comes back on that address: the next attempt succeeds.
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https, listenPort: caPort))
        #expect(waitForCertificates(server, ["one.acme.test"], timeout: 30), "\(server.log)")
        try checkServed(server, hosts: ["one.acme.test"], root: try pebble.issuingRoot())
    }

    @Test func anOrderThatFailsValidationIsLoggedWithTheProblemAndRetried() throws {
        let ports = try freePorts()
        // The CA validates on a port where nothing listens.
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: try freePort()))
        let server = try startServer(pebble, ports: ports, sites: ["one.acme.test"], retryMS: 500)
        #expect(server.waitForLog("tls-alpn-01 validation of one.acme.test failed: urn:ietf:params:acme:error:", timeout: 30), "\(server.log)")
        #expect(ServerProcess.waitFor(timeout: 15) { server.log.components(separatedBy: "one.acme.test: ordering a certificate").count >= 3 }, "retried: \(server.log)")
        let line = try #require(server.log.split(separator: "\n").first { $0.contains("validation of one.acme.test failed") })
        #expect(line.contains("retrying in"))
        #expect(line.contains("127.0.0.1"), "the CA's detail names what it connected to: \(line)")
        #expect(ServerProcess.waitFor(timeout: 10) { try metric(server, "failed") ?? 0 >= 2 })
        #expect(try metric(server, "issued") == 0)
        let hosts = try #require((try server.status()["acme"] as? [String: Any])?["hosts"] as? [[String: Any]])
        #expect((hosts.first?["error"] as? String)?.contains("urn:ietf:params:acme:error:") == true)
    }

    @Test func externalAccountBindingCreatesTheAccountWhereTheCARequiresIt() throws {
        let ports = try freePorts()
        let key = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"
        let pebble = try Pebble(.init(httpPort: ports.http, tlsPort: ports.https, externalAccountBinding: ("kid-1", key)))
        let server = try startServer(pebble, ports: ports, sites: ["one.acme.test"], extra: ["--acme-eab-kid", "kid-1", "--acme-eab-hmac-key", key])
        #expect(waitForCertificates(server, ["one.acme.test"]), "\(server.log)")

        // Without the binding the CA's requirement is said plainly.
        let other = try freePorts()
        let strict = try Pebble(.init(httpPort: other.http, tlsPort: other.https, externalAccountBinding: ("kid-1", key)))
        let refused = try startServer(strict, ports: other, sites: ["one.acme.test"])
        #expect(refused.waitForLog("the CA requires external account binding", timeout: 15), "\(refused.log)")
    }

    /// Behind a TCP balancer that sends PROXY headers (haproxy, as in deploy/haproxy): the CA
    /// reaches aasa through it, and both challenge types still work (docs/acme.md).
    @Test(arguments: ["tls-alpn-01", "http-01"])
    func bothChallengesWorkBehindABalancerWithProxyProtocol(challenge: String) throws {
        let ports = try freePorts()
        let tlsFront = try freePort()
        let httpFront = try freePort()
        let pebble = try Pebble(.init(httpPort: httpFront, tlsPort: tlsFront))
        let dir = try TemporaryDirectory()
        let config = """
        defaults
          mode tcp
          timeout connect 2s
          timeout client 10s
          timeout server 10s
        frontend tls
          bind 127.0.0.1:\(tlsFront)
          default_backend aasa_tls
        backend aasa_tls
          server aasa 127.0.0.1:\(ports.https) send-proxy-v2
        frontend http
          bind 127.0.0.1:\(httpFront)
          default_backend aasa_http
        backend aasa_http
          server aasa 127.0.0.1:\(ports.http) send-proxy
        """
        let haproxy = Process()
        haproxy.executableURL = URL(fileURLWithPath: "/usr/sbin/haproxy")
        haproxy.arguments = ["-db", "-f", try dir.write("haproxy.cfg", config + "\n")]
        haproxy.standardOutput = FileHandle.nullDevice
        haproxy.standardError = FileHandle.nullDevice
        try haproxy.run()
        defer { haproxy.stop(grace: 10) }
        let server = try startServer(pebble, ports: ports, sites: ["one.acme.test"], challenge: challenge, extra: ["--proxy-protocol"])
        #expect(waitForCertificates(server, ["one.acme.test"]), "\(server.log)")
        let r = try verify("one.acme.test", port: tlsFront, root: try pebble.issuingRoot())
        #expect(r.stdout.contains("Verify return code: 0 (ok)"), "\(r.stdout.suffix(400))")
        // Connections without a PROXY header are still refused.
        let direct = try RawHTTP.exchange(port: server.http, "GET /.well-known/acme-challenge/x HTTP/1.1\r\nHost: one.acme.test\r\n\r\n")
        #expect(direct.isEmpty)
    }

    /// Two replicas sharing one `--certs` behind a round-robin TCP balancer: the CA's
    /// validations land on both, the replica that did not order answers from the shared
    /// challenge files, and `acme/lock` lets only one order each host.
    @Test(arguments: ["tls-alpn-01", "http-01"])
    func replicasSharingTheCertsVolumeOrderEachHostOnceAndAnswerEachOthersChallenges(challenge: String) throws {
        let replicaPorts = [try freePorts(), try freePorts()]
        let tlsFront = try freePort()
        let httpFront = try freePort()
        let pebble = try Pebble(.init(httpPort: httpFront, tlsPort: tlsFront))
        let (haproxy, balancer) = try ACMETests.roundRobin(tls: tlsFront, http: httpFront, replicas: replicaPorts)
        defer { haproxy.stop(grace: 10); _ = balancer }
        let a = try startServer(pebble, ports: replicaPorts[0], challenge: challenge)
        let b = try startServer(pebble, ports: replicaPorts[1], challenge: challenge, reuse: a.directory)
        #expect(waitForCertificates(a, ACMETests.hosts), "\(a.log)\n\(b.log)")
        #expect(waitForCertificates(b, ACMETests.hosts), "\(b.log)")
        usleep(1_000_000)
        let issued = try (metric(a, "issued") ?? 0) + (metric(b, "issued") ?? 0)
        #expect(issued == ACMETests.hosts.count, "each host ordered once: \(a.log)\n\(b.log)")
        #expect(try metric(a, "failed") == 0 && metric(b, "failed") == 0, "\(a.log)\n\(b.log)")
        let root = try pebble.issuingRoot()
        for host in ACMETests.hosts {
            #expect(try verify(host, port: tlsFront, root: root).stdout.contains("Verify return code: 0 (ok)"))
        }
        if challenge == "http-01" {
            // Both replicas answered the CA's fetches.
            #expect(a.accessLog.contains("/.well-known/acme-challenge/") && b.accessLog.contains("/.well-known/acme-challenge/"))
            #expect(!a.accessLog.contains("\" 404 "), "\(a.accessLog)")
            #expect(!b.accessLog.contains("\" 404 "), "\(b.accessLog)")
        }
    }

    /// haproxy in TCP mode sending connections to `tls` and `http` to the replicas in turn,
    /// as the CA's validations reach replicas behind a balancer.
    static func roundRobin(tls: Int, http: Int, replicas: [ServerProcess.Ports]) throws -> (Process, TemporaryDirectory) {
        let dir = try TemporaryDirectory()
        var config = """
        defaults
          mode tcp
          balance roundrobin
          timeout connect 2s
          timeout client 10s
          timeout server 10s

        """
        for (name, front, port) in [("tls", tls, \ServerProcess.Ports.https), ("http", http, \ServerProcess.Ports.http)] {
            config += "frontend \(name)\n  bind 127.0.0.1:\(front)\n  default_backend aasa_\(name)\nbackend aasa_\(name)\n"
            for (i, replica) in replicas.enumerated() { config += "  server r\(i) 127.0.0.1:\(replica[keyPath: port])\n" }
        }
        let haproxy = Process()
        haproxy.executableURL = URL(fileURLWithPath: "/usr/sbin/haproxy")
        haproxy.arguments = ["-db", "-f", try dir.write("haproxy.cfg", config)]
        haproxy.standardOutput = FileHandle.nullDevice
        haproxy.standardError = FileHandle.nullDevice
        try haproxy.run()
        return (haproxy, dir)
    }

    @Test func usageErrorsOfACMEExitTwoWithAClearMessage() throws {
        let config = AASABinary.packageRoot.appendingPathComponent("config").path
        let noCerts = try AASABinary.run(["serve", "--config", config, "--http", "127.0.0.1:0", "--acme"])
        #expect(noCerts.status == 2)
        #expect(noCerts.stderr.contains("--acme needs --certs DIR"))
        let dir = try TemporaryDirectory()
        let certs = dir.url.path
        let http01 = try AASABinary.run(["serve", "--config", config, "--certs", certs, "--acme", "--acme-challenge", "http-01"])
        #expect(http01.status == 2)
        #expect(http01.stderr.contains("http-01 needs an --http listener"))
        let halfEAB = try AASABinary.run(["serve", "--config", config, "--certs", certs, "--acme", "--acme-eab-kid", "kid-1"])
        #expect(halfEAB.status == 2)
        #expect(halfEAB.stderr.contains("needs both --acme-eab-kid and --acme-eab-hmac-key"))
        let badChallenge = try AASABinary.run(["serve", "--config", config, "--certs", certs, "--acme"], environment: ["AASA_ACME_CHALLENGE": "dns-01"])
        #expect(badChallenge.status == 2)
        #expect(badChallenge.stderr.contains("tls-alpn-01 or http-01"))
    }
}
