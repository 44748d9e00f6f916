import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct ServeCommandTests {
    @Test func badUsageIsExitTwo() throws {
        #expect(try AASABinary.run(["serve", "--https", "127.0.0.1:0"]).status == 2, "HTTPS without certificates")
        #expect(try AASABinary.run(["serve", "--http", "nonsense"]).status == 2)
        #expect(try AASABinary.run(["serve", "--http", "127.0.0.1:0", "--log-format", "xml"]).status == 2)
        #expect(try AASABinary.run(["serve", "--http", "127.0.0.1:0", "--workers", "0"]).status == 2)
        let r = try AASABinary.run(["serve", "--config", "config"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("nothing to serve"))
    }

    @Test func aUsageErrorFoundWhileRunningShowsTheSubcommandsUsage() throws {
        let r = try AASABinary.run(["serve", "--http", "nonsense"])
        #expect(r.stderr.contains("Error: --http: expected ADDR:PORT, got nonsense"))
        #expect(r.stderr.contains("Usage: aasa serve"), "\(r.stderr)")
        #expect(!r.stderr.contains("aasa <subcommand>"))
    }

    @Test func environmentVariablesConfigureTheServerAndIPv6Works() throws {
        let process = Process()
        process.executableURL = AASABinary.url
        process.arguments = ["serve"]
        var env = ProcessInfo.processInfo.environment
        env["AASA_CONFIG"] = AASABinary.packageRoot.appendingPathComponent("config").path
        env["AASA_HTTP"] = "[::1]:0, 127.0.0.1:0"
        env["AASA_ADMIN"] = "off"
        env["AASA_LOG_FORMAT"] = "json"
        env["AASA_CACHE_MAX_AGE"] = "60"
        process.environment = env
        let err = Pipe()
        let out = Pipe()
        process.standardError = err
        process.standardOutput = out
        let log = OutputBuffer(err.fileHandleForReading)
        let access = OutputBuffer(out.fileHandleForReading)
        try process.run()
        defer { process.stop(grace: 15) }
        #expect(log.wait(for: "ready:", timeout: 10))
        #expect(log.text.contains("\"level\":\"info\""), "JSON event log")
        let line = try #require(log.text.split(separator: "\n").first { $0.contains("listening http [::1]:") })
        let port = try #require(Int(line.split(separator: ":").last!.prefix(while: \.isNumber)))
        let r = try Shell.run("/usr/bin/curl", ["-sS", "-i", "-H", "Host: example.com", "http://[::1]:\(port)/.well-known/apple-app-site-association"])
        #expect(RawHTTP.status(r.stdout) == 200)
        #expect(RawHTTP.header("Cache-Control", in: r.stdout) == "public, max-age=60")
        #expect(access.wait(for: "\"status\":200", timeout: 5), "JSON access log")
    }

    /// Every site its own certificate, over the one TLS context: each name gets its own, asked
    /// for in one order, then in the other (docs/architecture.md, "Transport").
    @Test func manySitesEachGetTheirOwnCertificateOverRealHandshakes() throws {
        let hosts = (0..<12).map { "site\($0).many.test" }
        let server = try ServerProcess(sites: Dictionary(uniqueKeysWithValues: hosts.map { ($0, exampleCom) }), prepare: { config in
            let certs = config.deletingLastPathComponent().appendingPathComponent("certs").path
            for host in hosts {
                // Not a CA (req -x509 makes one by default, and a CA leaf is refused).
                let made = try Shell.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                                                              "-days", "2", "-subj", "/CN=\(host)", "-addext", "subjectAltName=DNS:\(host)",
                                                              "-addext", "basicConstraints=critical,CA:FALSE",
                                                              "-keyout", "\(certs)/\(host).key", "-out", "\(certs)/\(host).crt"])
                guard made.status == 0 else { throw HarnessError(description: "openssl req: \(made.stderr)") }
                chmod("\(certs)/\(host).key", 0o600)
            }
        })
        for host in hosts + hosts.reversed() {
            let r = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", host], input: "")
            #expect(r.stdout.contains("subject=CN = \(host)\n"), "\(host): \(r.stdout.prefix(400))")
        }
    }
}
