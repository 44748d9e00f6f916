import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A start that cannot serve ends with a message (docs/serving.md, "Start-up errors"); what the
/// server logs and reports says what is true.
@Suite struct ServeTellsTheTruthTests {
    /// `aasa serve` with the arguments, run to its end (it must fail at once).
    private func start(_ arguments: [String], in directory: TemporaryDirectory) throws -> CommandResult {
        try Shell.run(AASABinary.url.path, ["serve", "--https", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--workers", "1"] + arguments,
                      timeout: 20)
    }

    private func certs(in directory: TemporaryDirectory) throws -> String {
        let certs = directory.url.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: certs, withIntermediateDirectories: true)
        for file in ["sites.crt", "sites.key"] {
            try FileManager.default.copyItem(at: TestCertificates.directory.appendingPathComponent(file), to: certs.appendingPathComponent(file))
        }
        chmod(certs.appendingPathComponent("sites.key").path, 0o600)
        return certs.path
    }

    @Test func aMissingCertsFolderEndsTheStartNamingIt() throws {
        let directory = try TemporaryDirectory()
        try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let missing = directory.url.appendingPathComponent("nocerts").path
        let r = try start(["--config", directory.url.appendingPathComponent("config").path, "--certs", missing], in: directory)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot read --certs \(missing)"), "\(r.stderr)")
        #expect(!r.stderr.contains("keep serving"), "\(r.stderr)")
        #expect(!r.stderr.contains("ready:"), "\(r.stderr)")
    }

    @Test func aMissingConfigFolderEndsTheStartNamingIt() throws {
        let directory = try TemporaryDirectory()
        let missing = directory.url.appendingPathComponent("nonexistent").path
        let r = try start(["--config", missing, "--certs", try certs(in: directory)], in: directory)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot read --config \(missing)"), "\(r.stderr)")
        #expect(!r.stderr.contains("keeps serving"), "\(r.stderr)")
    }

    @Test func aSiteFolderGivenAsTheConfigIsRecognisedAndRefused() throws {
        let directory = try TemporaryDirectory()
        try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let site = directory.url.appendingPathComponent("config/example.com").path
        let r = try start(["--config", site, "--certs", try certs(in: directory)], in: directory)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("is itself a site folder (it holds apple-app-site-association)"), "\(r.stderr)")
        #expect(r.stderr.contains("give its parent"), "\(r.stderr)")
    }

    @Test func aConfigWithoutAnySiteEndsTheStart() throws {
        let directory = try TemporaryDirectory()
        // Folders, but none a site: no association file in it, and a name that is no host.
        try directory.write("config/example.com/README", "not an association file")
        try directory.write("config/Not A Host/apple-app-site-association", exampleCom)
        let r = try start(["--config", directory.url.appendingPathComponent("config").path, "--certs", try certs(in: directory)], in: directory)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("no site in --config"), "\(r.stderr)")
    }

    @Test func httpsWithoutAUsableCertificateEndsTheStart() throws {
        let directory = try TemporaryDirectory()
        try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let empty = directory.url.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        let r = try start(["--config", directory.url.appendingPathComponent("config").path, "--certs", empty.path], in: directory)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("no usable certificate in --certs \(empty.path)"), "\(r.stderr)")
    }

    @Test func anEmptyStartIsAllowedWhereCertificatesComeByThemselves() throws {
        // --acme orders them: an empty certs folder (made if missing) is how every ACME start begins.
        let server = try ServerProcess(sites: ["example.com": exampleCom], extraArguments: [
            "--acme", "--acme-directory", "https://127.0.0.1:1/dir", "--acme-challenge", "tls-alpn-01"], certificates: false)
        #expect(try server.admin("/readyz").status == 200)
    }

    @Test func aCACertificateIsSkippedOnceAndNeverServedOrMadeTheDefault() throws {
        let server = try ServerProcess(prepare: { config in
            let certs = config.deletingLastPathComponent().appendingPathComponent("certs")
            // The test CA's own pair beside the leaves, first in byte order ("ca" < "sites").
            for file in ["ca.pem", "ca.key"] {
                try FileManager.default.copyItem(at: TestCertificates.directory.appendingPathComponent(file), to: certs.appendingPathComponent(file))
            }
            chmod(certs.appendingPathComponent("ca.key").path, 0o600)
        })
        #expect(server.log.contains("ca.pem is a CA certificate (basicConstraints CA:TRUE), not a serving one; skipped"), "\(server.log)")
        let names = (try server.status()["certificates"] as? [[String: Any]])?.compactMap { $0["name"] as? String } ?? []
        #expect(!names.contains("ca"), "\(names)")
        // A client without SNI gets a leaf, not the CA.
        let r = try Shell.run("/bin/bash", ["-c", "openssl s_client -connect 127.0.0.1:\(server.https) -noservername </dev/null 2>/dev/null | openssl x509 -noout -subject"])
        #expect(!r.stdout.contains("aasa test CA") && r.stdout.contains("subject"), "\(r.stdout)")
        // A reload does not say it again.
        kill(server.process.processIdentifier, SIGHUP)
        #expect(server.waitForLog("SIGHUP: reloading"))
        Thread.sleep(forTimeInterval: 0.5)
        #expect(server.log.components(separatedBy: "is a CA certificate").count == 2, "\(server.log)")
    }

    @Test func aRejectedFileLogsItsWarningsAndStatusListsEveryFinding() throws {
        // One error (an app ID without a team prefix) and one warning (an unknown key).
        let rejected = #"{"applinks": {"details": [{"appIDs": ["com.example.app"], "components": [{"/": "/a/*", "exlude": true}]}]}}"#
        let server = try ServerProcess(sites: ["example.com": exampleCom, "bad.example.com": rejected])
        #expect(server.waitForLog("bad.example.com/apple-app-site-association:1:"))
        let lines = server.log.split(separator: "\n").filter { $0.contains("bad.example.com/apple-app-site-association:1:") }
        #expect(lines.contains { $0.contains("error:") }, "\(lines)")
        #expect(lines.contains { $0.contains("warning:") && $0.contains("unknown-key") }, "\(lines)")
        let site = try #require(try server.site("bad.example.com"))
        let files = try #require(site["files"] as? [[String: Any]])
        let diagnostics = try #require(files.first?["diagnostics"] as? [[String: Any]])
        #expect(diagnostics.contains { $0["severity"] as? String == "error" })
        #expect(diagnostics.contains { $0["severity"] as? String == "warning" && $0["code"] as? String == "unknown-key" })
        #expect(diagnostics.allSatisfy { $0["jsonPath"] is String && $0["line"] is Int })
        // A served file lists none.
        let good = try #require(try server.site("example.com")?["files"] as? [[String: Any]])
        #expect(good.first?["diagnostics"] == nil)
    }

    @Test func ourOwnCheckIsNotRecordedAsApplesFetchButApplesIs() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom])
        let check = try Shell.run(AASABinary.url.path, ["check", "example.com", "--connect", "127.0.0.1:\(server.https)",
                                                         "--cacert", TestCertificates.caFile, "--no-cdn"])
        #expect(check.stdout.contains("status: pass"), "\(check.stdout)")
        #expect(server.waitForAccessLog("fetcher=aasa-check"), "\(server.accessLog)")
        let fetches = try #require(try server.site("example.com")?["fetches"] as? [String: Any])
        #expect(fetches["appleCDN"] is NSNull, "\(fetches)")
        // The same request without the field is Apple's.
        _ = try server.curlHTTPS(host: "example.com", ["-A", "AASA-Bot/1.0.0"])
        let after = try #require(try server.site("example.com")?["fetches"] as? [String: Any])
        #expect((after["appleCDN"] as? [String: Any])?["status"] as? Int == 200, "\(after)")
    }

    @Test func everyRequestCountsOnceInAVisibleSeriesWhateverHappensToTheSites() throws {
        var sites: [String: String] = [:]
        for i in 0..<8 { sites["s\(i).example.com"] = exampleCom }
        let server = try ServerProcess(sites: sites, extraArguments: ["--metrics-sites", "3", "--http2", "off"])
        var sent = 0
        func ask(_ host: String) throws {
            _ = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
            sent += 1
        }
        // A rejected edit (a reload error) of a site nobody asks for, a removed site, a
        // re-added one, between requests.
        try ask("s0.example.com")
        try "{".write(to: server.config.appendingPathComponent("s7.example.com/apple-app-site-association"), atomically: true, encoding: .utf8)
        #expect(server.waitForLog("site s7.example.com: file rejected", timeout: 5))
        for i in 0..<7 { try ask("s\(i).example.com") }
        try FileManager.default.removeItem(at: server.config.appendingPathComponent("s2.example.com"))
        Thread.sleep(forTimeInterval: 0.5)
        try ask("s2.example.com")
        try server.directory.write("config/s2.example.com/apple-app-site-association", exampleCom)
        Thread.sleep(forTimeInterval: 0.5)
        for i in 0..<7 { try ask("s\(i).example.com") }
        Thread.sleep(forTimeInterval: 0.3)
        let metrics = try server.admin("/metrics").body
        let series = metrics.split(separator: "\n").filter { $0.hasPrefix("aasa_requests_total{") }
        let total = series.compactMap { Int($0.split(separator: " ").last ?? "") }.reduce(0, +)
        #expect(total == sent, "\(series)")
        let labels = Set(series.compactMap { line -> String? in
            guard let r = line.range(of: "site=\"") else { return nil }
            return String(line[r.upperBound...].prefix { $0 != "\"" })
        })
        // Three sites of their own (the rejected site's reload error takes none of their
        // slots), then "other"; "unknown" for the removed one.
        #expect(labels.subtracting(["other", "unknown"]).count == 3, "\(labels)")
        #expect(labels.contains("other"), "\(labels)")
    }
}

