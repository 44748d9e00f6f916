import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"

private func mode(_ path: String) -> mode_t {
    var st = stat()
    stat(path, &st)
    return st.st_mode & 0o777
}

/// Debian's Chromium, run headless (`make test` installs it).
private let chromium = "/usr/bin/chromium"

@Suite struct DevModeTests {
    @Test func theDevelopmentChainVerifiesForEverySiteAndKeysArePrivate() throws {
        let server = try ServerProcess(dev: true)
        let ca = server.certs.appendingPathComponent("ca/ca.pem").path
        let leaf = server.certs.appendingPathComponent("aasa-dev.crt").path
        let verify = try Shell.run("/usr/bin/openssl", ["verify", "-CAfile", ca, leaf])
        #expect(verify.stdout.contains(": OK"), "\(verify.stderr)")
        for host in ["example.com", "www.example.com", "news.example.org", "localhost"] {
            let r = try server.curlHTTPS(host: host, ca: ca)
            #expect(r.status == 0, "\(host): \(r.stderr)")
            #expect(RawHTTP.status(r.stdout) == (host == "localhost" ? 404 : 200))
            if host == "localhost" {
                // The 404 for a host no folder serves says which hosts are configured.
                #expect(RawHTTP.body(r.stdout).contains("unknown host localhost"))
                #expect(RawHTTP.body(r.stdout).contains("  www.example.com\n"))
            }
        }
        let ip = try Shell.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", ca, "https://127.0.0.1:\(server.https)/"])
        #expect(ip.stdout == "404", "127.0.0.1 is in the certificate: \(ip.stderr)")
        #expect(mode(server.certs.appendingPathComponent("aasa-dev.key").path) == 0o600)
        #expect(mode(server.certs.appendingPathComponent("ca/ca.key").path) == 0o600)
        let text = try Shell.run("/usr/bin/openssl", ["x509", "-in", ca, "-noout", "-subject", "-ext", "basicConstraints"]).stdout
        #expect(text.contains("aasa development CA"))
        #expect(text.contains("CA:TRUE"))
        // In development, caches are told not to keep the file.
        #expect(RawHTTP.header("Cache-Control", in: try server.curlHTTPS(host: "example.com", ca: ca).stdout) == "no-cache")
    }

    @Test func theLeafIsReissuedWhenASiteIsAddedAndServedWithoutARestart() throws {
        let server = try ServerProcess(dev: true)
        let ca = server.certs.appendingPathComponent("ca/ca.pem").path
        let caBefore = try String(contentsOfFile: ca, encoding: .utf8)
        try server.directory.write("config/new.example.net/apple-app-site-association", exampleCom)
        #expect(ServerProcess.waitFor(timeout: 5) { RawHTTP.status(try server.curlHTTPS(host: "new.example.net", ca: ca).stdout) == 200 })
        #expect(try String(contentsOfFile: ca, encoding: .utf8) == caBefore, "the same CA signs the new leaf")
        let leaf = try Shell.run("/usr/bin/openssl", ["x509", "-in", server.certs.appendingPathComponent("aasa-dev.crt").path, "-noout", "-ext", "subjectAltName"])
        #expect(leaf.stdout.contains("DNS:new.example.net"))
        #expect(!server.process.hasExited)
    }

    @Test func theProfileCarriesTheSameCA() throws {
        let server = try ServerProcess(dev: true)
        let r = try RawHTTP.exchange(port: server.http, "GET /ca.mobileconfig HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.header("Content-Type", in: r) == "application/x-apple-aspen-config")
        let profile = try server.directory.write("ca.mobileconfig", RawHTTP.body(r))
        let check = """
        import plistlib, ssl, sys
        p = plistlib.load(open(sys.argv[1], 'rb'))
        payload = p['PayloadContent'][0]
        assert p['PayloadType'] == 'Configuration' and payload['PayloadType'] == 'com.apple.security.root'
        pem = ssl.DER_cert_to_PEM_cert(payload['PayloadContent'])
        print('same' if pem.strip() == open(sys.argv[2]).read().strip() else 'different')
        """
        let result = try Shell.run("/usr/bin/python3", ["-c", check, profile, server.certs.appendingPathComponent("ca/ca.pem").path])
        #expect(result.stdout == "same\n", "\(result.stderr)")
        let pem = try RawHTTP.exchange(port: server.http, "GET /ca.pem HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.body(pem) == (try String(contentsOf: server.certs.appendingPathComponent("ca/ca.pem"), encoding: .utf8)))
    }

    @Test func theAPIListsSitesFetchesAndMatches() throws {
        let server = try ServerProcess(dev: true)
        _ = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nUser-Agent: AASA-Bot/1.0.0\r\nConnection: close\r\n\r\n")
        func api(_ path: String) throws -> [String: Any] {
            let r = try RawHTTP.exchange(port: server.http, "GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return try JSONSerialization.jsonObject(with: Data(RawHTTP.body(r).utf8)) as! [String: Any]
        }
        let sites = try #require(try api("/api/sites")["sites"] as? [[String: Any]])
        let example = try #require(sites.first { $0["host"] as? String == "example.com" })
        #expect(example["entitlements"] as? [String] == ["applinks:example.com?mode=developer", "webcredentials:example.com?mode=developer"])
        let fetches = try #require(try api("/api/fetches")["fetches"] as? [[String: Any]])
        #expect(fetches.first?["userAgent"] as? String == "AASA-Bot/1.0.0")
        #expect(fetches.first?["fetcher"] as? String == "apple-cdn")
        let match = try api("/api/match?url=https%3A%2F%2Fexample.com%2Fbuy%2F42")
        let results = try #require(match["results"] as? [[String: Any]])
        #expect(results.first?["decision"] as? String == "match")
        #expect(results.first?["component"] as? Int == 0)
        #expect(server.log.contains("applinks:*.example.org?mode=developer"), "entitlement lines printed at start")
        #expect(server.log.contains("Associated Domains Development"))
        // A configured host on the HTTP listener still gets its file, not the dashboard.
        let site = try RawHTTP.exchange(port: server.http, "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(site) == 404)
    }

    @Test func theDashboardWorksInARealBrowserAndShowsMarkupAsText() throws {
        let hostile = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/x", "<script>document.title='pwned'</script>": 1}]}]}}"#
        let server = try ServerProcess(sites: ["example.com": exampleCom, "evil.example.com": hostile], dev: true, prepare: { config in
            try assetLinks.write(to: config.appendingPathComponent("example.com/assetlinks.json"), atomically: true, encoding: .utf8)
            try #"{"origins": ["https://example.de/shop"]}"#.write(to: config.appendingPathComponent("example.com/webauthn"), atomically: true, encoding: .utf8)
        })
        _ = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nUser-Agent: AASA-Bot/1.0.0\r\nConnection: close\r\n\r\n")
        // The guidance speaks of Android's side once a site has assetlinks.json.
        #expect(server.log.contains("Android: example.com serves assetlinks.json"))
        #expect(server.log.contains("autoVerify"))
        let profile = server.directory.url.appendingPathComponent("chromium").path
        let page = "http://127.0.0.1:\(server.http)/?url=https%3A%2F%2Fexample.com%2Fbuy%2F42"
        let r = try Shell.run(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=\(profile)",
                                          "--virtual-time-budget=8000", "--dump-dom", page])
        let dom = r.stdout
        #expect(dom.contains("<title>aasa development server</title>"), "\(r.stderr.suffix(500))")
        #expect(dom.contains("data-host=\"example.com\""))
        #expect(dom.contains("data-host=\"evil.example.com\""))
        #expect(dom.contains("applinks:example.com?mode=developer"))
        #expect(dom.contains("AASA-Bot/1.0.0 (Apple CDN)"))
        #expect(dom.contains("<td class=\"match\">match</td>"))
        #expect(dom.contains("details[0], component 0"))
        // Every file of the site, each with its verdict and findings.
        #expect(dom.contains("data-file=\"assetlinks.json\""))
        #expect(dom.contains("data-file=\"webauthn\""))
        #expect(dom.contains("[webauthn-invalid-origin]"))
        // The key with markup is shown as text, and never runs.
        #expect(dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"))
        #expect(!dom.contains("<title>pwned</title>"))
    }

    @Test func theGuidanceSaysHowToReachPort443AndGivesAWorkingFirstRequest() throws {
        let server = try ServerProcess(dev: true)
        #expect(server.log.contains("A device fetches port 443"))
        #expect(server.log.contains("--to-ports \(server.https)"))
        #expect(server.log.contains("TCP-LISTEN:443,fork,reuseaddr TCP:127.0.0.1:\(server.https)"))
        let line = try #require(server.log.split(separator: "\n").first { $0.contains("curl --cacert") })
        let words = line.split(separator: " ").map(String.init)
        let curl = try #require(words.firstIndex(of: "curl"))
        let arguments = Array(words[(curl + 1)...])
        #expect(arguments == ["--cacert", server.certs.path + "/ca/ca.pem", "--resolve", "example.com:\(server.https):127.0.0.1",
                              "https://example.com:\(server.https)/.well-known/apple-app-site-association"])
        // Run exactly as printed: it must work.
        let r = try Shell.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}"] + arguments)
        #expect(r.stdout == "200", "\(r.stderr)")
    }

    /// 80 sites, as a team with many domains has: a start-up summary that fits a screen, and a
    /// dashboard that puts problems first and can be filtered.
    @Test func manySitesGetASummaryInTheGuidanceAndADashboardThatSortsAndFilters() throws {
        var sites: [String: String] = [:]
        for i in 1...78 { sites["site\(i < 10 ? "0" : "")\(i).example.com"] = exampleCom }
        sites["site42.example.com"] = #"{"applinks": "#
        sites["legacy.example.com"] = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "paths": ["NOT /private/*", "*"]}]}, "appclips": {"apps": ["ABCDE12345.com.example.app.Clip"]}}"#
        sites["*.example.org"] = wildcardOrg
        let server = try ServerProcess(sites: sites, dev: true)
        let log = server.log
        let start = try #require(log.range(of: "Development mode:"))
        let end = try #require(log.range(of: "Dashboard:", range: start.upperBound..<log.endIndex))
        let guidance = log[start.lowerBound..<end.upperBound]
        let lines = guidance.split(separator: "\n", omittingEmptySubsequences: false).count
        #expect(lines <= 40, "the guidance fits a screen: \(lines) lines\n\(guidance)")
        #expect(guidance.contains("80 sites: 79 serving, 0 stale, 1 rejected. The first 5:"))
        #expect(guidance.contains("full list: the dashboard at http://127.0.0.1:\(server.http)/, or curl -s http://127.0.0.1:\(server.http)/entitlements.txt"))
        #expect(guidance.contains("(site42.example.com is not served: "))
        let all = try RawHTTP.exchange(port: server.http, "GET /entitlements.txt HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        // applinks and webcredentials for 77 sites; applinks for the rejected one and the wildcard;
        // applinks and appclips for the legacy one.
        #expect(RawHTTP.body(all).split(separator: "\n").count == 2 * 77 + 1 + 1 + 2)

        // One site goes stale: its new file has errors, the old one still serves.
        try server.directory.write("config/site03.example.com/apple-app-site-association", #"{"applinks": ["#)
        #expect(ServerProcess.waitFor(timeout: 5) { try server.site("site03.example.com")?["state"] as? String == "stale" })

        func dom(_ query: String) throws -> String {
            let profile = server.directory.url.appendingPathComponent("chromium").path
            let r = try Shell.run(chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=\(profile)",
                                             "--virtual-time-budget=8000", "--dump-dom", "http://127.0.0.1:\(server.http)/\(query)"])
            return r.stdout
        }
        let page = try dom("?url=https%3A%2F%2Flegacy.example.com%2Fprivate%2F1")
        #expect(page.contains(#"<span class="count" id="count-total">80</span>"#))
        #expect(page.contains(#"<span class="count" id="count-serving">78</span>"#))
        #expect(page.contains(#"<span class="count" id="count-stale">1</span>"#))
        #expect(page.contains(#"<span class="count" id="count-rejected">1</span>"#))
        let hosts = page.components(separatedBy: #"class="card site" data-host=""#).dropFirst().map { $0.prefix { $0 != "\"" } }
        #expect(hosts.count == 80)
        #expect(hosts.prefix(4) == ["site42.example.com", "site03.example.com", "*.example.org", "legacy.example.com"],
                "rejected, then stale, then by name")
        // Every service's apps are listed, not only universal links'.
        #expect(page.contains("App Clips: "))
        #expect(page.contains("ABCDE12345.com.example.app.Clip"))
        #expect(page.contains("Web credentials: "))
        // The URL tester names a legacy path and quotes it.
        #expect(page.contains(#"details[0], path 0 "NOT /private/*""#))

        let filtered = try dom("?filter=site07")
        #expect(filtered.contains("showing 1 of 80"))
        #expect(filtered.components(separatedBy: #"class="card site""#).count - 1 == 80)
        #expect(filtered.components(separatedBy: #"hidden="""#).count - 1 >= 79, "every other card is hidden")
        let card = try #require(filtered.range(of: #"data-host="site07.example.com""#))
        #expect(!filtered[card.upperBound...].prefix { $0 != ">" }.contains("hidden"), "the card that matches is shown")
    }

    @Test func devCertsMakesAndKeepsCertificates() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/example.com/apple-app-site-association", exampleCom)
        let out = dir.url.appendingPathComponent("out").path
        let first = try AASABinary.run(["dev-certs", "--config", dir.url.appendingPathComponent("config").path, "--out", out, "--name", "extra.test"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("created"))
        let san = try Shell.run("/usr/bin/openssl", ["x509", "-in", out + "/aasa-dev.crt", "-noout", "-ext", "subjectAltName"]).stdout
        for name in ["DNS:localhost", "DNS:example.com", "DNS:extra.test", "IP Address:127.0.0.1", "IP Address:0:0:0:0:0:0:0:1"] {
            #expect(san.contains(name), "\(san)")
        }
        #expect(mode(out + "/aasa-dev.key") == 0o600)
        let second = try AASABinary.run(["dev-certs", "--config", dir.url.appendingPathComponent("config").path, "--out", out, "--name", "extra.test"])
        #expect(second.stdout.contains("already covers"))
    }

    @Test func devCertsRefusesAConfigDirectoryThatIsNotThere() throws {
        let dir = try TemporaryDirectory()
        let out = dir.url.appendingPathComponent("out").path
        let r = try AASABinary.run(["dev-certs", "--config", "/nonexistent", "--out", out])
        #expect(r.status == 2)
        #expect(r.stderr.contains("--config /nonexistent: not a directory"))
        #expect(!FileManager.default.fileExists(atPath: out + "/aasa-dev.crt"), "nothing is issued for a mistyped directory")
    }

    @Test func devCertsHelpShowsEachDefaultOnce() throws {
        let help = try AASABinary.run(["dev-certs", "--help"]).stdout
        #expect(help.components(separatedBy: "./config").count - 1 == 1, "\(help)")
        #expect(help.components(separatedBy: "certs-dev").count - 1 == 1, "\(help)")
    }

    @Test func aWildcardSiteServesItsBaseNameAndTheDevCertificateCoversBoth() throws {
        let server = try ServerProcess(sites: ["*.example.org": wildcardOrg], dev: true)
        let ca = server.certs.appendingPathComponent("ca/ca.pem").path
        for host in ["example.org", "a.example.org"] {
            // curl verifies the chain and the name: the leaf must carry example.org and *.example.org.
            let r = try server.curlHTTPS(host: host, ca: ca)
            #expect(r.status == 0, "\(host): \(r.stderr)")
            #expect(RawHTTP.status(r.stdout) == 200, "\(host)")
            #expect(RawHTTP.body(r.stdout) == wildcardOrg)
            let plain = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
            #expect(RawHTTP.status(plain) == 200, "\(host) over HTTP")
        }
        let leaf = server.certs.appendingPathComponent("aasa-dev.crt").path
        let verify = try Shell.run("/usr/bin/openssl", ["verify", "-CAfile", ca, "-verify_hostname", "example.org", leaf])
        #expect(verify.stdout.contains(": OK"), "\(verify.stderr)")
        // One level only: a TLS wildcard does not cover a.b.example.org, and everyone is told so.
        let deep = try Shell.run("/usr/bin/openssl", ["verify", "-CAfile", ca, "-verify_hostname", "a.b.example.org", leaf])
        #expect(!deep.stdout.contains(": OK"))
        #expect(server.log.contains("covers one level"))
        let site = try #require(try server.site("*.example.org"))
        #expect((site["certificateNote"] as? String)?.contains("covers one level (a.example.org), not a.b.example.org") == true)
    }
}
