import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let aasaName = "apple-app-site-association"
private let merchantName = "apple-developer-merchantid-domain-association"
private let fingerprint = (0..<32).map { String(format: "%02X", $0 * 7 % 256) }.joined(separator: ":")
private let liveLinks = #"[{"relation":["delegate_permission/common.handle_all_urls"],"target":{"namespace":"android_app","package_name":"com.example.app","sha256_cert_fingerprints":["# + "\"\(fingerprint)\"" + "]}}]"
private let liveOrigins = #"{"origins":["https://example.net","https://example.org"]}"#
private let token = "import-Token_7"

/// `aasa import` against real origins on loopback: our own `aasa serve` (the test CA passed with
/// --cacert) for files served as they should be, a scripted origin behind haproxy's TLS for what
/// the server never sends (redirects, HTML, odd statuses, hangs), and a real `aasa serve` with its
/// write API as the `--admin` destination.
@Suite(.serialized) struct ImportCommandTests {
    /// An origin serving example.com's AASA file, assetlinks.json and webauthn (no Apple Pay
    /// file), and www.example.com's AASA file alone.
    private func origin(extra: [String] = []) throws -> ServerProcess {
        try ServerProcess(sites: ["example.com": exampleCom, "www.example.com": wwwExampleCom], extraArguments: extra) { config in
            try Data(liveLinks.utf8).write(to: config.appendingPathComponent("example.com/assetlinks.json"))
            try Data(liveOrigins.utf8).write(to: config.appendingPathComponent("example.com/webauthn"))
        }
    }

    private func run(_ arguments: [String], port: Int, timeout: Double = 120) throws -> CommandResult {
        try AASABinary.run(["import"] + arguments + ["--connect", "127.0.0.1:\(port)", "--cacert", TestCertificates.caFile],
                           environment: ["AASA_TOKEN_FILE": ""], timeout: timeout)
    }

    /// The line of `file` of `host` in the text output, after `HOST: FILE: `.
    private func line(_ r: CommandResult, _ file: String, host: String = "example.com") -> String {
        r.stdout.split(separator: "\n").first { $0.hasPrefix("\(host): \(file): ") }.map { String($0.dropFirst("\(host): \(file): ".count)) }
            ?? "(no \(file) line)\n\(r.stdout)\(r.stderr)"
    }

    private func read(_ dir: TemporaryDirectory, _ path: String) -> String? {
        try? String(contentsOf: dir.url.appendingPathComponent(path), encoding: .utf8)
    }

    /// An HTTPS origin for example.com answering each path as `routes` says (404 otherwise).
    private func scripted(_ routes: [String: [UInt8]]) throws -> (ScriptedServer, TLSFront) {
        let origin = try ScriptedServer(routes: routes)
        return (origin, try TLSFront(backend: origin.port, certificatePEM: try TestCertificates.sitesPEM))
    }

    private static func ok(_ body: String, type: String = "application/json") -> [UInt8] {
        ScriptedServer.response("200 OK", ["Content-Type: \(type)"], body: body)
    }

    private static func redirect(_ to: String) -> [UInt8] { ScriptedServer.response("301 Moved Permanently", ["Location: \(to)"]) }

    @Test func importsIntoFoldersThenFindsThemUnchangedThenKeepsOrReplacesOtherBytes() throws {
        let server = try origin()
        let dir = try TemporaryDirectory()
        let r = try run(["example.com", "www.example.com", "--to", dir.url.path], port: server.https)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(line(r, "assetlinks.json") == "imported (\(liveLinks.utf8.count) bytes: 1 statement)")
        #expect(line(r, aasaName) == "imported (\(exampleCom.utf8.count) bytes: applinks (1 app), webcredentials)")
        #expect(line(r, "webauthn") == "imported (\(liveOrigins.utf8.count) bytes: 2 origins)")
        #expect(line(r, merchantName).hasPrefix("absent: 404 Not Found for GET /.well-known/\(merchantName)"))
        #expect(line(r, "webauthn", host: "www.example.com").hasPrefix("absent: "))
        #expect(r.stdout.hasSuffix("2 domains: 4 imported, 0 unchanged, 4 absent, 0 invalid, 0 failed\n"), "\(r.stdout)")
        // Byte for byte, in the layout serve --config reads; nothing for an absent file.
        #expect(read(dir, "example.com/\(aasaName)") == exampleCom)
        #expect(read(dir, "example.com/assetlinks.json") == liveLinks)
        #expect(read(dir, "example.com/webauthn") == liveOrigins)
        #expect(read(dir, "www.example.com/\(aasaName)") == wwwExampleCom)
        #expect(!FileManager.default.fileExists(atPath: dir.url.appendingPathComponent("example.com/\(merchantName)").path))
        // No temporary file left beside them.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.url.appendingPathComponent("example.com").path)
        #expect(Set(names) == [aasaName, "assetlinks.json", "webauthn"])
        // Fetched as Apple's bot, marked as an import.
        #expect(server.accessLog.contains("AASA-Bot/1.0.0"))

        let again = try run(["example.com", "--to", dir.url.path], port: server.https)
        #expect(again.status == 0)
        #expect(line(again, "assetlinks.json").hasPrefix("unchanged (\(liveLinks.utf8.count) bytes: 1 statement): \(dir.url.path)/example.com/assetlinks.json already holds these bytes"))
        #expect(again.stdout.hasSuffix("1 domain: 0 imported, 3 unchanged, 1 absent, 0 invalid, 0 failed\n"), "\(again.stdout)")

        try dir.write("example.com/webauthn", #"{"origins":["https://old.example"]}"#)
        let kept = try run(["example.com", "--to", dir.url.path], port: server.https)
        #expect(kept.status == 0, "exists is not a failure")
        #expect(line(kept, "webauthn").contains("holds another version"))
        #expect(kept.stdout.hasSuffix("1 domain: 0 imported, 2 unchanged, 1 exists, 1 absent, 0 invalid, 0 failed\n"), "\(kept.stdout)")
        #expect(read(dir, "example.com/webauthn") == #"{"origins":["https://old.example"]}"#)

        let replaced = try run(["example.com", "--to", dir.url.path, "--replace"], port: server.https)
        #expect(line(replaced, "webauthn").hasPrefix("imported (\(liveOrigins.utf8.count) bytes: 2 origins): replaced version "))
        #expect(read(dir, "example.com/webauthn") == liveOrigins)
    }

    @Test func jsonGivesEachFileItsResultURLAndTheVersionTheServerServes() throws {
        let server = try origin()
        let dir = try TemporaryDirectory()
        let r = try run(["example.com", "--to", dir.url.path, "--format", "json"], port: server.https)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let json = try r.json()
        let domains = try #require(json["domains"] as? [[String: Any]])
        #expect(domains.count == 1)
        #expect(domains[0]["host"] as? String == "example.com")
        let files = try #require(domains[0]["files"] as? [[String: Any]])
        #expect(files.map { $0["name"] as? String } == [aasaName, "assetlinks.json", merchantName, "webauthn"])
        for f in files {
            #expect(Set(f.keys) == ["name", "result", "url", "redirects", "bytes", "version", "message", "diagnostics"])
        }
        let links = files[1]
        #expect(links["result"] as? String == "imported")
        #expect(links["url"] as? String == "https://example.com/.well-known/assetlinks.json")
        #expect((links["redirects"] as? [Any])?.isEmpty == true)
        #expect(links["bytes"] as? Int == liveLinks.utf8.count)
        // The version is the entity tag a server serves these bytes with: the origin, an aasa serve, says so.
        let head = try Shell.run("/usr/bin/curl", ["-sSI", "--cacert", TestCertificates.caFile, "--connect-to", "example.com:443:127.0.0.1:\(server.https)",
                                                    "https://example.com/.well-known/assetlinks.json"])
        let etag = head.stdout.split(separator: "\r\n").first { $0.lowercased().hasPrefix("etag:") }.map { $0.dropFirst(5).trimmingCharacters(in: .whitespaces) }
        #expect(etag == "\"\(links["version"] as? String ?? "none")\"", "\(head.stdout)")
        let merchant = files[2]
        #expect(merchant["result"] as? String == "absent")
        #expect(merchant["version"] is NSNull)
        #expect(merchant["bytes"] is NSNull)
        #expect((merchant["message"] as? String)?.contains("404") == true)
        let summary = try #require(json["summary"] as? [String: Int])
        #expect(summary == ["imported": 3, "unchanged": 0, "exists": 0, "invalid": 0, "absent": 1, "failed": 0])
    }

    @Test func dryRunWritesNothingAndSaysWhatWouldHappen() throws {
        let server = try origin()
        let dir = try TemporaryDirectory()
        let r = try run(["example.com", "--to", dir.url.path, "--dry-run", "--format", "json"], port: server.https)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty)
        let files = try #require((try r.json()["domains"] as? [[String: Any]])?.first?["files"] as? [[String: Any]])
        #expect(files[0]["result"] as? String == "imported")
        #expect((files[0]["message"] as? String)?.contains("--dry-run: not written") == true)
        #expect(files[0]["version"] is NSNull, "nothing was written")
        #expect(r.stderr.isEmpty, "no progress line when stderr is not a terminal: \(r.stderr)")
    }

    @Test func drawsAProgressLineOnATerminalOnly() throws {
        let server = try origin()
        let dir = try TemporaryDirectory()
        // script(1) gives the command a terminal for stdout and stderr alike.
        let command = [AASABinary.url.path, "import", "example.com", "--to", dir.url.path, "--connect", "127.0.0.1:\(server.https)",
                       "--cacert", TestCertificates.caFile].map { "'\($0)'" }.joined(separator: " ")
        let r = try Shell.run("/usr/bin/script", ["-qec", command, "/dev/null"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(r.stdout.contains("\r\u{1b}[K0/1 domains, 0 imported, 0 failed, 0 s") || r.stdout.contains("\r\u{1b}[K1/1 domains, 3 imported, 0 failed"),
                "\(r.stdout.debugDescription)")
        #expect(r.stdout.contains("1 domain: 3 imported, 0 unchanged, 1 absent, 0 invalid, 0 failed"))
    }

    @Test func writesThroughARealServersAPIWithItsTokenAndNeverOverwritesWithoutReplace() throws {
        let server = try origin()
        let target = try TemporaryDirectory()
        let tokens = try target.write("tokens", "importer:\(token)\n")
        let destination = try ServerProcess(sites: [:], extraArguments: ["--admin-token-file", tokens])
        let api = ["--admin", "http://127.0.0.1:\(destination.admin)", "--token-file", tokens]

        let r = try run(["example.com"] + api, port: server.https)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(line(r, "assetlinks.json") == "imported (\(liveLinks.utf8.count) bytes: 1 statement)")
        #expect(destination.waitForLog("api: PUT example.com/assetlinks.json by importer: 201"), "\(destination.log)")
        // The destination serves what was imported, byte for byte.
        let served = try Shell.run("/usr/bin/curl", ["-sS", "--cacert", TestCertificates.caFile, "--connect-to", "example.com:443:127.0.0.1:\(destination.https)",
                                                      "https://example.com/.well-known/webauthn"])
        #expect(served.stdout == liveOrigins)

        let again = try run(["example.com"] + api, port: server.https)
        #expect(again.stdout.hasSuffix("1 domain: 0 imported, 3 unchanged, 1 absent, 0 invalid, 0 failed\n"), "\(again.stdout)")

        // Another version on the server: left alone (If-None-Match: *), then replaced with --replace.
        let put = try AASABinary.run(["site", "put", "example.com", "webauthn", "--file", "-"] + api, input: #"{"origins":["https://old.example"]}"#)
        #expect(put.status == 0, "\(put.stderr)")
        let kept = try run(["example.com"] + api, port: server.https)
        #expect(line(kept, "webauthn").hasPrefix("exists ("), "\(kept.stdout)")
        let replaced = try run(["example.com", "--replace", "--format", "json"] + api, port: server.https)
        let files = try #require((try replaced.json()["domains"] as? [[String: Any]])?.first?["files"] as? [[String: Any]])
        #expect(files[3]["result"] as? String == "imported")
        let get = try AASABinary.run(["site", "get", "example.com", "webauthn"] + api)
        #expect(get.stdout == liveOrigins)
        #expect((files[3]["version"] as? String).map { destination.log.contains("\"\($0)\"") } == true, "the version the server answered")
    }

    @Test func theServersRefusalAndConflictAreInvalidAndExists() throws {
        let server = try origin()
        // A write API that holds nothing, refuses the AASA file and finds assetlinks.json written meanwhile.
        let api = try ScriptedServer { bytes in
            let head = String(decoding: bytes, as: UTF8.self)
            if head.hasPrefix("GET ") { return ScriptedServer.response("404 Not Found", ["Content-Type: application/json"], body: #"{"error":"no file"}"#) }
            if head.hasPrefix("PUT /sites/example.com/\(aasaName)") {
                return ScriptedServer.response("422 Unprocessable Content", ["Content-Type: application/json"],
                                               body: #"{"error":"invalid","diagnostics":[{"severity":"error","code":"unknown-key","message":"not here","line":1,"column":2,"jsonPath":"$.x"}]}"#)
            }
            if head.hasPrefix("PUT /sites/example.com/assetlinks.json") {
                #expect(head.contains("If-None-Match: *"))
                return ScriptedServer.response("412 Precondition Failed", ["Content-Type: application/json"], body: #"{"error":"exists"}"#)
            }
            return ScriptedServer.response("201 Created", ["Content-Type: application/json", "ETag: \"0123456789abcdef\""],
                                           body: #"{"host":"example.com","file":"webauthn","version":"0123456789abcdef"}"#)
        }
        let r = try run(["example.com", "--admin", "127.0.0.1:\(api.port)", "--format", "json"], port: server.https)
        #expect(r.status == 1, "an invalid file fails the run: \(r.stdout)\(r.stderr)")
        let files = try #require((try r.json()["domains"] as? [[String: Any]])?.first?["files"] as? [[String: Any]])
        #expect(files[0]["result"] as? String == "invalid")
        let diagnostics = try #require(files[0]["diagnostics"] as? [[String: Any]])
        #expect(diagnostics.first?["code"] as? String == "unknown-key")
        #expect(diagnostics.first?["jsonPath"] as? String == "$.x")
        #expect(files[1]["result"] as? String == "exists")
        #expect(files[3]["result"] as? String == "imported")
        #expect(files[3]["version"] as? String == "0123456789abcdef")
    }

    @Test func followsThreeRedirectsAndReportsThemButNotAFourthOrAnHTTPOne() throws {
        let wk = "/.well-known/"
        let (_, front) = try scripted([
            // Three hops, then the file.
            wk + aasaName: Self.redirect("/r1"), "/r1": Self.redirect("https://example.com/r2"), "/r2": Self.redirect("r3"),
            "/r3": Self.ok(exampleCom),
            // Four hops.
            wk + "assetlinks.json": Self.redirect("/a1"), "/a1": Self.redirect("/a2"), "/a2": Self.redirect("/a3"), "/a3": Self.redirect("/a4"),
            "/a4": Self.ok(liveLinks),
            // To plain HTTP.
            wk + "webauthn": Self.redirect("http://example.com/w"),
        ])
        let dir = try TemporaryDirectory()
        let r = try run(["example.com", "--to", dir.url.path, "--format", "json"], port: front.port)
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        let files = try #require((try r.json()["domains"] as? [[String: Any]])?.first?["files"] as? [[String: Any]])
        #expect(files[0]["result"] as? String == "imported")
        #expect(files[0]["url"] as? String == "https://example.com/r3")
        #expect(files[0]["redirects"] as? [String] == ["https://example.com/r1", "https://example.com/r2", "https://example.com/r3"])
        #expect((files[0]["message"] as? String)?.contains("Apple's CDN does not follow") == true)
        #expect(read(dir, "example.com/\(aasaName)") == exampleCom)
        #expect(files[1]["result"] as? String == "failed")
        #expect((files[1]["message"] as? String)?.contains("more than the 3 followed") == true)
        #expect((files[1]["redirects"] as? [String])?.count == 3)
        #expect(files[3]["result"] as? String == "failed")
        #expect((files[3]["message"] as? String)?.contains("http:// URL") == true)
        #expect(read(dir, "example.com/assetlinks.json") == nil)
    }

    @Test func namesWhatIsWrongAsCheckDoes() throws {
        let wk = "/.well-known/"
        let (_, front) = try scripted([
            wk + aasaName: Self.ok("<!DOCTYPE html><html><body>app</body></html>", type: "text/html"),
            wk + "assetlinks.json": Self.ok(#"[{"relation":"oops"}]"#),
            wk + merchantName: ScriptedServer.response("503 Service Unavailable", body: "later"),
            wk + "webauthn": Self.ok(String(repeating: " ", count: 131_073)),
        ])
        let dir = try TemporaryDirectory()
        let r = try run(["example.com", "--to", dir.url.path], port: front.port)
        #expect(r.status == 1)
        #expect(line(r, aasaName).hasPrefix("failed: the body is an HTML page (Content-Type: text/html)"))
        #expect(line(r, "assetlinks.json").hasPrefix("invalid (1 error") || line(r, "assetlinks.json").hasPrefix("invalid ("), "\(r.stdout)")
        // Findings as validate lists them, with the URL as the file name.
        #expect(r.stdout.contains("https://example.com/.well-known/assetlinks.json:1:"), "\(r.stdout)")
        #expect(line(r, merchantName).hasPrefix("failed: 503 Service Unavailable for GET /.well-known/\(merchantName)"))
        #expect(line(r, "webauthn") == "failed: 131073 bytes: over the 131072-byte limit (128 KB) after which iOS stops reading: shrink the file (fewer paths, broader components)")
        #expect(r.stdout.hasSuffix("1 domain: 0 imported, 0 unchanged, 0 absent, 1 invalid, 3 failed\n"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).isEmpty, "nothing written")
    }

    @Test func takesTheLegacyPathWhenTheWellKnownOneIsNot200AndIsAbsentOnlyWhenBothAre() throws {
        let (_, front) = try scripted(["/\(aasaName)": Self.ok(wwwExampleCom)])
        let dir = try TemporaryDirectory()
        let r = try run(["example.com", "--to", dir.url.path, "--format", "json"], port: front.port)
        #expect(r.status == 0, "\(r.stdout)")
        let files = try #require((try r.json()["domains"] as? [[String: Any]])?.first?["files"] as? [[String: Any]])
        #expect(files[0]["result"] as? String == "imported")
        #expect(files[0]["url"] as? String == "https://example.com/\(aasaName)")
        #expect((files[0]["message"] as? String)?.contains("legacy") == true)
        #expect(read(dir, "example.com/\(aasaName)") == wwwExampleCom)

        let (_, bare) = try scripted([:])
        let none = try run(["example.com", "--to", dir.url.path], port: bare.port)
        #expect(none.status == 0, "absent is not a failure")
        #expect(line(none, aasaName) == "absent: 404 Not Found for GET /.well-known/\(aasaName), 404 Not Found for GET /\(aasaName)")
    }

    @Test func aHangingOriginFailsEachFileWithItsTimeOutOnce() throws {
        let silent = try ScriptedServer(silent: true)
        let dir = try TemporaryDirectory()
        let started = Date()
        let r = try run(["example.com", "--to", dir.url.path, "--timeout", "1"], port: silent.port, timeout: 60)
        let elapsed = Date().timeIntervalSince(started)
        #expect(r.status == 1)
        for file in [aasaName, "assetlinks.json", merchantName, "webauthn"] {
            #expect(line(r, file).hasPrefix("failed: no TLS handshake with 127.0.0.1:\(silent.port) within 1 s"), "\(r.stdout)")
        }
        // The four files at once: one time-out, not four.
        #expect(elapsed < 3.5, "took \(elapsed) s")
    }

    @Test func aCertificateThatDoesNotVerifyFails() throws {
        let server = try origin()
        let dir = try TemporaryDirectory()
        let r = try AASABinary.run(["import", "example.com", "--to", dir.url.path, "--connect", "127.0.0.1:\(server.https)"])
        #expect(r.status == 1)
        #expect(line(r, aasaName).contains("but the certificate does not verify for example.com"), "\(r.stdout)")
    }

    @Test func readsTheMonitorsDomainsFileAndRefusesAWildcardLine() throws {
        let server = try origin()
        let dir = try TemporaryDirectory()
        let list = try dir.write("domains", "# ours\nexample.com app=A.b connect=127.0.0.1:\(server.https)\nwww.example.com connect=127.0.0.1:\(server.https)\n")
        let out = try TemporaryDirectory()
        let r = try AASABinary.run(["import", "--domains", list, "--to", out.url.path, "--cacert", TestCertificates.caFile])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.hasSuffix("2 domains: 4 imported, 0 unchanged, 4 absent, 0 invalid, 0 failed\n"), "\(r.stdout)")

        let bad = try dir.write("bad", "example.com\n*.example.org\n")
        let w = try AASABinary.run(["import", "--domains", bad, "--to", out.url.path])
        #expect(w.status == 2)
        #expect(w.stderr.contains("\(bad):2: *.example.org: a wildcard"), "\(w.stderr)")
        let arg = try AASABinary.run(["import", "*.example.org", "--to", out.url.path])
        #expect(arg.status == 2)
        #expect(arg.stderr.contains("a wildcard cannot be fetched"))
    }

    @Test func badUsageIsExit2() throws {
        let dir = try TemporaryDirectory()
        let closed = try freePort()
        let cases: [([String], String)] = [
            (["import", "example.com"], "give where to write"),
            (["import", "example.com", "--to", dir.url.path, "--admin", "127.0.0.1:9"], "not both"),
            (["import", "example.com", "--to", dir.url.path + "/missing"], "no such directory"),
            (["import", "example.com", "--admin", "127.0.0.1:\(closed)"], "cannot reach the admin listener"),
            (["import", "--to", dir.url.path], "give the domains"),
            (["import", "https://example.com/", "--to", dir.url.path], "host name only"),
        ]
        for (arguments, message) in cases {
            let r = try AASABinary.run(arguments, environment: ["AASA_TOKEN_FILE": ""])
            #expect(r.status == 2, "\(arguments): \(r.stdout)\(r.stderr)")
            #expect(r.stderr.contains(message), "\(arguments): \(r.stderr)")
            #expect(r.stdout.isEmpty)
        }
    }
}
