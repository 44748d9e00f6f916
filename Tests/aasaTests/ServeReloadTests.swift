import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"

private func fetch(_ server: ServerProcess, host: String) throws -> (status: Int, body: String) {
    let r = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
    return (RawHTTP.status(r) ?? 0, RawHTTP.body(r))
}

private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// Writes `text` to `path` through a temporary file and a rename, as editors and deploy tools do.
private func replace(_ path: URL, _ text: String) throws {
    let tmp = path.deletingLastPathComponent().appendingPathComponent(".tmp-\(UUID().uuidString)")
    try Data(text.utf8).write(to: tmp)
    guard rename(tmp.path, path.path) == 0 else { throw HarnessError(description: "rename: \(errno)") }
}

@Suite struct ServeReloadTests {
    @Test func anEditIsServedWithinASecond() throws {
        let server = try ServerProcess()
        let file = server.config.appendingPathComponent("example.com/apple-app-site-association")
        let edited = appFile("/edited/*")
        try Data(edited.utf8).write(to: file)
        let started = Date()
        #expect(ServerProcess.waitFor(timeout: 1) { try fetch(server, host: "example.com").body == edited })
        #expect(Date().timeIntervalSince(started) < 1.0)
        let metrics = try server.admin("/metrics").body
        #expect(!metrics.contains("aasa_reloads_total 0"))
    }

    @Test func anInvalidEditKeepsTheLastGoodVersionAndShowsTheError() throws {
        let server = try ServerProcess()
        let file = server.config.appendingPathComponent("example.com/apple-app-site-association")
        try Data("{\n  \"applinks\": {\"details\": []}\n  \"webcredentials\": {}\n}".utf8).write(to: file)
        #expect(ServerProcess.waitFor { try server.site("example.com")?["state"] as? String == "stale" })
        #expect(try fetch(server, host: "example.com").body == exampleCom)
        let site = try #require(try server.site("example.com"))
        let error = try #require(site["error"] as? [String: Any])
        #expect(error["line"] as? Int == 2)
        #expect(error["column"] as? Int == 30)
        #expect((error["message"] as? String)?.contains("missing ','") == true)
        #expect(site["version"] as? String != nil)
        #expect(try server.admin("/metrics").body.contains("aasa_reload_errors_total{site=\"example.com\"} 1"))
        #expect(server.log.contains("apple-app-site-association:2:30: error: missing ','"))
        // Fixing it serves the fix.
        try Data(appFile("/fixed").utf8).write(to: file)
        #expect(ServerProcess.waitFor { try fetch(server, host: "example.com").body == appFile("/fixed") })
        #expect(try server.site("example.com")?["state"] as? String == "serving")
    }

    @Test func aRejectedNewSiteIsNotServed() throws {
        let server = try ServerProcess()
        try server.directory.write("config/bad.example.com/apple-app-site-association", "{\"applinks\": 1}")
        #expect(ServerProcess.waitFor { try server.site("bad.example.com")?["state"] as? String == "rejected" })
        #expect(try fetch(server, host: "bad.example.com").status == 404)
    }

    @Test func sitesAreAddedRemovedAndRenamed() throws {
        let server = try ServerProcess()
        try server.directory.write("config/new.example.com/apple-app-site-association", appFile("/new"))
        #expect(ServerProcess.waitFor { try fetch(server, host: "new.example.com").body == appFile("/new") })
        try FileManager.default.removeItem(at: server.config.appendingPathComponent("www.example.com"))
        #expect(ServerProcess.waitFor { try fetch(server, host: "www.example.com").status == 404 })
        try FileManager.default.moveItem(at: server.config.appendingPathComponent("new.example.com"),
                                         to: server.config.appendingPathComponent("renamed.example.com"))
        #expect(ServerProcess.waitFor { try fetch(server, host: "renamed.example.com").body == appFile("/new") })
        #expect(try fetch(server, host: "new.example.com").status == 404)
        #expect(try fetch(server, host: "example.com").status == 200)
    }

    @Test func aKubernetesStyleDataSwapIsPickedUp() throws {
        // A start needs a site (docs/serving.md, "Start-up errors"); the mounted one comes later.
        let server = try ServerProcess(sites: ["example.com": exampleCom])
        let config = server.config.path
        let fm = FileManager.default
        func generation(_ name: String, _ body: String) throws {
            try server.directory.write("config/\(name)/k8s.example.com/apple-app-site-association", body)
        }
        try generation("..2026_11_21_01", appFile("/one"))
        try fm.createSymbolicLink(atPath: config + "/..data", withDestinationPath: "..2026_11_21_01")
        try fm.createSymbolicLink(atPath: config + "/k8s.example.com", withDestinationPath: "..data/k8s.example.com")
        #expect(ServerProcess.waitFor { try fetch(server, host: "k8s.example.com").body == appFile("/one") })
        // What the kubelet does on a ConfigMap update: a new folder, a new link, one rename.
        try generation("..2026_11_21_02", appFile("/two"))
        try fm.createSymbolicLink(atPath: config + "/..data_tmp", withDestinationPath: "..2026_11_21_02")
        rename(config + "/..data_tmp", config + "/..data")
        try fm.removeItem(atPath: config + "/..2026_11_21_01")
        #expect(ServerProcess.waitFor { try fetch(server, host: "k8s.example.com").body == appFile("/two") })
        #expect(try server.status()["sites"].map { ($0 as! [[String: Any]]).count } == 2, "..data is not a site")
    }

    @Test func aReplacedCertificateIsUsedForNewHandshakes() throws {
        let server = try ServerProcess()
        func presented() throws -> String {
            let r = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com"], input: "")
            return r.stdout.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst().first?
                .components(separatedBy: "-----END CERTIFICATE-----").first?.replacingOccurrences(of: "\n", with: "") ?? ""
        }
        func pem(_ file: String) throws -> String {
            try String(contentsOf: TestCertificates.directory.appendingPathComponent(file), encoding: .utf8)
                .components(separatedBy: "-----BEGIN CERTIFICATE-----")[1]
                .components(separatedBy: "-----END CERTIFICATE-----")[0].replacingOccurrences(of: "\n", with: "")
        }
        #expect(try presented() == pem("sites.crt"))
        let certs = server.certs
        try FileManager.default.removeItem(at: certs.appendingPathComponent("sites.key"))
        try FileManager.default.copyItem(at: TestCertificates.directory.appendingPathComponent("replacement.key"), to: certs.appendingPathComponent("sites.key"))
        try replace(certs.appendingPathComponent("sites.crt"), String(contentsOf: TestCertificates.directory.appendingPathComponent("replacement.crt"), encoding: .utf8))
        #expect(ServerProcess.waitFor { try presented() == pem("replacement.crt") })
        let certificates = try #require(try server.status()["certificates"] as? [[String: Any]])
        #expect((certificates.first?["dnsNames"] as? [String])?.contains("new.example.com") == true)
    }

    @Test func aVanishedConfigDirectoryKeepsEverythingServing() throws {
        let server = try ServerProcess()
        let backup = server.directory.url.appendingPathComponent("config-backup")
        try FileManager.default.moveItem(at: server.config, to: backup)
        #expect(server.waitForLog("cannot read"))
        #expect(try fetch(server, host: "example.com").body == exampleCom)
        #expect(try fetch(server, host: "news.example.org").body == wildcardOrg)
        try Data(appFile("/restored").utf8).write(to: backup.appendingPathComponent("example.com/apple-app-site-association"))
        try FileManager.default.moveItem(at: backup, to: server.config)
        #expect(ServerProcess.waitFor(timeout: 5) { try fetch(server, host: "example.com").body == appFile("/restored") })
    }

    @Test func sighupReloads() throws {
        let server = try ServerProcess()
        kill(server.process.processIdentifier, SIGHUP)
        #expect(server.waitForLog("SIGHUP: reloading"))
        #expect(try fetch(server, host: "example.com").status == 200)
    }

    @Test func noRequestFailsDuringFiftyReloads() throws {
        let server = try ServerProcess()
        let file = server.config.appendingPathComponent("example.com/apple-app-site-association")
        let versions = [appFile("/a"), appFile("/b"), exampleCom]
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var ok = 0
            var failures: [String] = []
            var done = false
        }
        let tally = Tally()
        let port = server.http
        let clients = (0..<4).map { _ in
            Thread {
                while true {
                    tally.lock.lock(); let done = tally.done; tally.lock.unlock()
                    if done { return }
                    let r = (try? RawHTTP.exchange(port: port, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")) ?? "no response"
                    let good = RawHTTP.status(r) == 200 && versions.contains(RawHTTP.body(r))
                    tally.lock.lock()
                    if good { tally.ok += 1 } else { tally.failures.append(String(r.prefix(200))) }
                    tally.lock.unlock()
                }
            }
        }
        clients.forEach { $0.start() }
        for i in 0..<50 {
            try replace(file, versions[i % versions.count])
            if i % 5 == 0 { kill(server.process.processIdentifier, SIGHUP) }
            usleep(60_000)
        }
        #expect(ServerProcess.waitFor { server.log.components(separatedBy: "reloaded:").count > 10 })
        tally.lock.lock(); tally.done = true; tally.lock.unlock()
        usleep(300_000)
        tally.lock.lock(); defer { tally.lock.unlock() }
        #expect(tally.failures.isEmpty, "\(tally.failures.prefix(3))")
        #expect(tally.ok > 50)
    }
}
