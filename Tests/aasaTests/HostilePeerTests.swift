import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A hostile HTTPS origin (`Tests/hostile/origin.py`) on loopback, with a certificate from the
/// test CA: it answers as its mode says, each connection bounded, and is stopped by PID.
final class HostileOrigin {
    let port: Int
    let plainPort: Int
    private let process = Process()
    private let output: OutputBuffer
    private let directory: TemporaryDirectory

    init(_ mode: String, names: String = "DNS:example.com,DNS:*.pool.test,DNS:localhost") throws {
        directory = try TemporaryDirectory()
        port = try freePort()
        plainPort = try freePort()
        let pem = try directory.write("origin.pem", try TestCertificates.issue(commonName: "hostile", names: names, days: 30))
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [AASABinary.packageRoot.appendingPathComponent("Tests/hostile/origin.py").path,
                             "--port", "\(port)", "--pem", pem, "--mode", mode, "--plain-port", "\(plainPort)"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        output = OutputBuffer(out.fileHandleForReading)
        try process.run()
        guard output.wait(for: "listening", timeout: 10) else {
            process.stop(grace: 2)
            throw HarnessError(description: "the hostile origin did not start")
        }
    }

    deinit { process.stop(grace: 2) }

    /// What the origin printed: "plain connection" for each connection to the plain port.
    var log: String { output.text }
}

/// What a peer we do not control may send, against `aasa check` and the ACME client of
/// `aasa serve`: each answer ends with a clear verdict within the time-out, never a hang, a
/// crash or a terminal taken over.
@Suite(.serialized) struct HostilePeerTests {
    private func check(_ hosts: [String], port: Int, timeout: Int = 5, _ extra: [String] = []) throws -> (CommandResult, Double) {
        let start = Date()
        let r = try AASABinary.run(["check"] + hosts + ["--connect", "127.0.0.1:\(port)", "--cacert", TestCertificates.caFile,
                                                         "--no-cdn", "--timeout", "\(timeout)"] + extra, timeout: 120)
        return (r, Date().timeIntervalSince(start))
    }

    private func line(_ r: CommandResult, _ name: String, host: String = "example.com") -> String {
        r.stdout.split(separator: "\n").first { $0.hasPrefix("\(host): \(name): ") }.map { String($0.dropFirst("\(host): \(name): ".count)) } ?? "(no \(name) line)\n\(r.stdout)"
    }

    @Test func endlessInterimResponsesEndAtTheHeadLimitNotAfterTheTimeOut() throws {
        let origin = try HostileOrigin("interim-flood")
        let (r, seconds) = try check(["example.com"], port: origin.port)
        #expect(r.status == 1)
        #expect(line(r, "status").contains("the response head (interim 1xx responses included) is larger than 65536 bytes"), "\(r.stdout)")
        #expect(seconds < 5, "took \(seconds) s")
    }

    @Test func endlessTrailersEndAtTheTrailerLimit() throws {
        let origin = try HostileOrigin("trailer-flood")
        let (r, seconds) = try check(["example.com"], port: origin.port)
        #expect(r.status == 1)
        #expect(line(r, "status").contains("the trailer section is larger than 65536 bytes"), "\(r.stdout)")
        #expect(seconds < 5, "took \(seconds) s")
    }

    @Test func aBodyCutByATCPCloseWithoutCloseNotifyIsATruncatedFetchNotABadFile() throws {
        let origin = try HostileOrigin("cut")
        let (r, _) = try check(["example.com"], port: origin.port)
        #expect(r.status == 1)
        #expect(line(r, "status").contains("truncated (TLS closed without close_notify)"), "\(r.stdout)")
        #expect(line(r, "validate").hasPrefix("skip: "), "\(r.stdout)")
    }

    @Test func aBodyEndedByCloseNotifyIsWhole() throws {
        let origin = try HostileOrigin("whole-close-notify")
        let (r, _) = try check(["example.com"], port: origin.port)
        #expect(line(r, "status").hasPrefix("pass: 200"), "\(r.stdout)")
        #expect(line(r, "validate").hasPrefix("pass: "), "\(r.stdout)")
    }

    @Test func aChunkSizeWithASignIsMalformed() throws {
        let origin = try HostileOrigin("signed-chunk")
        let (r, _) = try check(["example.com"], port: origin.port)
        #expect(r.status == 1)
        #expect(line(r, "status").contains("malformed chunked body: bad chunk size \"+"), "\(r.stdout)")
    }

    @Test func controlCharactersFromAPeerArePrintedEscaped() throws {
        let origin = try HostileOrigin("escape-location")
        let (r, _) = try check(["example.com"], port: origin.port)
        #expect(r.status == 1)
        #expect(!r.stdout.utf8.contains(0x1B) && !r.stdout.utf8.contains(0x07), "raw control bytes reached the terminal")
        #expect(line(r, "status").contains(#"https://evil.test/\u{1b}]0;pwned\u{7}\u{1b}[2J"#), "\(r.stdout)")
    }

    @Test func hostsRunOnAPoolSoSlowHostsDoNotHoldUpABatch() throws {
        let origin = try HostileOrigin("pool")
        // 17 hosts, the first and the last slow: batches of 16 took two time-outs, a pool one.
        let hosts = ["slow1.pool.test"] + (2...16).map { "h\($0).pool.test" } + ["slow2.pool.test"]
        let (r, seconds) = try check(hosts, port: origin.port, timeout: 2)
        #expect(r.status == 1)
        #expect(line(r, "status", host: "h2.pool.test").hasPrefix("pass: "), "\(r.stdout)")
        #expect(line(r, "status", host: "slow2.pool.test").contains("within 2 s"), "\(r.stdout)")
        #expect(seconds < 3.6, "took \(seconds) s")
    }

    @Test func theLegacyLocationSharesTheHostsTimeBudget() throws {
        let origin = try HostileOrigin("pool")
        // The well-known path answers 404 after 1.2 s; the legacy one never answers.
        let (r, seconds) = try check(["missing.pool.test"], port: origin.port, timeout: 2)
        #expect(r.status == 1)
        #expect(line(r, "status", host: "missing.pool.test").contains("404"), "\(r.stdout)")
        #expect(seconds < 2.9, "took \(seconds) s")
    }

    /// One CA header used to stop every site: `Retry-After: 9999999999999999` overflowed.
    @Test func aHugeRetryAfterFromTheCAIsADayAndTheServerKeepsServing() throws {
        let origin = try HostileOrigin("retry-after")
        let server = try ServerProcess(sites: ["one.acme.test": exampleCom],
                                       extraArguments: ["--acme", "--acme-directory", "https://localhost:\(origin.port)/dir",
                                                        "--acme-ca-root", TestCertificates.caFile],
                                       certificates: false)
        #expect(server.waitForLog("retrying in 24 h", timeout: 20), "\(server.log)")
        usleep(500_000)
        #expect(!server.process.hasExited, "the server died: \(server.log)")
        #expect(try server.admin("/healthz").status == 200)
    }

    @Test func theACMEClientRefusesPlainHTTPURLsFromTheCAAndSendsNothingThere() throws {
        let origin = try HostileOrigin("http-urls")
        let server = try ServerProcess(sites: ["one.acme.test": exampleCom],
                                       extraArguments: ["--acme", "--acme-directory", "https://localhost:\(origin.port)/dir",
                                                        "--acme-ca-root", TestCertificates.caFile],
                                       certificates: false, environment: ["AASA_ACME_RETRY_BASE_MS": "300"])
        #expect(server.waitForLog("not HTTPS, refused with no request sent", timeout: 20), "\(server.log)")
        // Several attempts later, still nothing reached the plain listener.
        #expect(server.waitForLog("retrying in 0.6 s", timeout: 20), "\(server.log)")
        #expect(!origin.log.contains("plain connection"), "a request went out over plain HTTP")
        #expect(try server.admin("/healthz").status == 200)
    }
}
