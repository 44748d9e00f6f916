import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif


private let wellKnown = monitorWellKnown
private let assetLinksPath = monitorAssetLinksPath
private let app = monitorApp
private let fingerprint = monitorFingerprint
private typealias World = MonitorWorld
private func line(_ r: CommandResult, _ name: String, host: String = "example.com") -> String { monitorLine(r, name, host: host) }

@Suite(.serialized) struct MonitorCommandTests {
    @Test func aWellServedDomainIsOkAtItsOriginCurrentAtTheCDNAndCurrentAtGoogle() throws {
        let world = try World.good()
        let r = try world.once()
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let names = r.stdout.split(separator: "\n").dropLast().map { $0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces) }
        #expect(names == ["resolve", "tls", "status", "bot-blocked", "content-type", "size", "validate", "app", "assetlinks", "cdn", "google"])
        #expect(line(r, "status") == "pass: 200 OK for GET \(wellKnown) as AASA-Bot/1.0.0")
        #expect(line(r, "bot-blocked") == "skip: not run: status did not fail")
        #expect(line(r, "app").hasPrefix("pass: \(app) is listed for applinks"))
        #expect(line(r, "assetlinks") == "pass: \(assetLinksPath): valid, 1 app fingerprint for App Links")
        #expect(line(r, "cdn") == "pass: current")
        #expect(line(r, "google") == "pass: current")
        #expect(r.stdout.hasSuffix("1 domain: 1 ok, 0 warn, 0 failing\n"))
        // The origin was asked as Apple's bot, saying it is the monitor; the CDN and Google as aasa.
        let asked = world.origin.requests.first { $0.hasPrefix("GET \(wellKnown) ") } ?? ""
        #expect(asked.contains("User-Agent: AASA-Bot/1.0.0\r\n"))
        #expect(asked.lowercased().contains("aasa-check: monitor\r\n"))
        #expect(world.cdn.requests.first?.hasPrefix("GET /a/v1/example.com HTTP/1.1\r\n") == true)
        #expect(world.cdn.requests.first?.contains("User-Agent: aasa/") == true)
        #expect(world.google.requests.first?.hasPrefix("GET /v1/statements:list?source.web.site=https://example.com&relation=delegate_permission/common.handle_all_urls HTTP/1.1\r\n") == true)
    }

    @Test func jsonOutputHasTheShapeOfStatus() throws {
        let world = try World.good()
        let r = try world.once(["--format", "json"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let json = try r.json()
        let summary = try #require(json["summary"] as? [String: Any])
        #expect(summary["domains"] as? Int == 1)
        #expect(summary["ok"] as? Int == 1)
        #expect((summary["cdn"] as? [String: Int])?["current"] == 1)
        #expect((summary["google"] as? [String: Int])?["current"] == 1)
        #expect(json["next"] is NSNull)
        let domain = try #require((json["domains"] as? [[String: Any]])?.first)
        #expect(domain["host"] as? String == "example.com")
        let origin = try #require(domain["origin"] as? [String: Any])
        #expect(origin["state"] as? String == "ok")
        #expect(origin["version"] as? String == "\"v1\"")
        #expect((origin["checks"] as? [[String: Any]])?.count == 9)
        let cdn = try #require(domain["cdn"] as? [String: Any])
        #expect(cdn["state"] as? String == "current")
        #expect(cdn["httpStatus"] as? Int == 200)
        #expect(cdn["differs"] as? [String] == [])
        let google = try #require(domain["google"] as? [String: Any])
        #expect(google["state"] as? String == "current")
        let story = try #require(domain["story"] as? [[String: Any]])
        #expect(story.map { $0["event"] as? String ?? "" }.contains("the origin serves version \"v1\""))
        #expect(story.map { $0["event"] as? String ?? "" }.contains("origin pending -> ok"))
    }

    @Test func withoutAnETagTheVersionIsAHashOfTheBody() throws {
        let world = try World(routes: [wellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom)])
        let r = try world.once(["--format", "json"])
        let domain = try #require((try r.json()["domains"] as? [[String: Any]])?.first)
        let version = try #require((domain["origin"] as? [String: Any])?["version"] as? String)
        let sha = try Shell.run("/bin/sh", ["-c", "printf '%s' \"$0\" | sha256sum", exampleCom]).stdout.prefix(16)
        #expect(version == "sha256:\(sha)")
    }

    @Test func anOriginThatAnswersApplesBotDifferentlyFromBrowsersFailsBotBlocked() throws {
        let world = try World(origin: { request in
            let head = String(decoding: request, as: UTF8.self)
            if head.contains("AASA-Bot") { return ScriptedServer.response("403 Forbidden", ["Content-Type: text/plain"], body: "Forbidden") }
            if head.hasPrefix("GET \(wellKnown) ") { return ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom) }
            return ScriptedServer.response("404 Not Found", body: "no")
        })
        let r = try world.once()
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(line(r, "status").hasPrefix("fail: 403 Forbidden"))
        #expect(line(r, "bot-blocked").hasPrefix("fail: AASA-Bot/1.0.0 gets 403 but a browser gets 200 with the file"))
        let browser = world.origin.requests.first { $0.contains("Safari/") } ?? ""
        #expect(browser.hasPrefix("GET \(wellKnown) "))
        #expect(browser.contains("User-Agent: Mozilla/5.0 "))
        #expect(r.stdout.hasSuffix("1 domain: 0 ok, 0 warn, 1 failing\n"))
    }

    @Test func checkAlsoPrintsTheBotBlockedFindingAfterStatusWhenTheBotGetsAnError() throws {
        let world = try World(origin: { request in
            let head = String(decoding: request, as: UTF8.self)
            if head.contains("AASA-Bot") { return ScriptedServer.response("403 Forbidden", ["Content-Type: text/plain"], body: "Forbidden") }
            if head.hasPrefix("GET \(wellKnown) ") { return ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom) }
            return ScriptedServer.response("404 Not Found", body: "no")
        })
        let r = try AASABinary.run(["check", "example.com", "--connect", "127.0.0.1:\(world.front.port)", "--cacert", TestCertificates.caFile,
                                    "--no-cdn"])
        #expect(r.status == 1)
        let names = r.stdout.split(separator: "\n").compactMap { $0.hasPrefix("example.com: ") ? $0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces) : nil }
        #expect(Array(names.prefix(4)) == ["resolve", "tls", "status", "bot-blocked"], "\(r.stdout)")
        #expect(line(r, "bot-blocked").hasPrefix("fail: AASA-Bot/1.0.0 gets 403 but a browser gets 200 with the file"), "\(r.stdout)")
        // The browser's request says it is our check, as the bot's does.
        let browser = world.origin.requests.first { $0.contains("Safari/") } ?? ""
        #expect(browser.contains("AASA-Check: check"), "\(browser)")
        // A host whose file is served: no bot-blocked line at all.
        let good = try World.good()
        let ok = try AASABinary.run(["check", "example.com", "--connect", "127.0.0.1:\(good.front.port)", "--cacert", TestCertificates.caFile, "--no-cdn"])
        #expect(ok.status == 0 && !ok.stdout.contains("bot-blocked"), "\(ok.stdout)")
    }

    @Test func anOriginThatRefusesBrowsersTooIsNotCalledBotBlocked() throws {
        let world = try World(routes: [:])
        let r = try world.once()
        #expect(r.status == 1)
        #expect(line(r, "bot-blocked") == "pass: a browser gets 404 Not Found too: the origin does not single out Apple's bot")
        #expect(line(r, "assetlinks") == "skip: not validated: 404 Not Found for GET \(assetLinksPath)")
        // The CDN's copy has nothing to be compared with.
        #expect(line(r, "cdn") == "warn: stale: the origin has served no good file to compare the CDN's copy with")
    }

    @Test func aCDNCopyOfAnOlderVersionIsStaleAndSaysWhatDiffers() throws {
        let older = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/old/*"}]}]}}"#
        let world = try World.good(cdn: ScriptedServer.response("200 OK", ["Content-Type: application/json", "Cache-Control: max-age=21600", "Age: 60"], body: older))
        let r = try world.once(["--format", "json"])
        #expect(r.status == 0, "a stale CDN is no failure of the origin")
        let domain = try #require((try r.json()["domains"] as? [[String: Any]])?.first)
        let cdn = try #require(domain["cdn"] as? [String: Any])
        #expect(cdn["state"] as? String == "stale")
        #expect(cdn["age"] as? Int == 60)
        #expect(cdn["maxAge"] as? Int == 21_600)
        #expect((cdn["differs"] as? [String])?.isEmpty == false)
    }

    @Test func theCDNsFailureHeadersAreQuoted() throws {
        let refused = ScriptedServer.response("404 Not Found", ["Apple-Failure-Reason: SWCERR00101 Bad HTTP Response: 403 Forbidden",
                                                                "Apple-Failure-Details: Origin answered 403"], body: "Not Found")
        let world = try World.good(cdn: refused)
        let r = try world.once()
        #expect(line(r, "cdn") == "fail: failing: the CDN answers 404, Apple-Failure-Reason: SWCERR00101 Bad HTTP Response: 403 Forbidden, Apple-Failure-Details: Origin answered 403")
    }

    @Test func googleListingOtherAppsIsStaleAndNothingOnBothSidesIsAbsent() throws {
        let other = "AA:" + fingerprint.dropFirst(3)
        let world = try World.good(google: googleAnswer([("com.example.app", String(other))]))
        let r = try world.once()
        // Whole fingerprints, as the file and Google write them: what Play Console and keytool show.
        #expect(line(r, "google") == "warn: stale: Google does not list com.example.app (\(fingerprint)) yet; Google still lists com.example.app (\(other)), which the origin's assetlinks.json no longer does")

        let bare = try World(routes: [wellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom)],
                             google: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: "{}"))
        #expect(line(try bare.once(), "google") == "pass: absent")

        let broken = try World.good(google: ScriptedServer.response("503 Service Unavailable", body: "busy"))
        #expect(line(try broken.once(), "google") == "fail: failing: Google answers 503 Service Unavailable")

        let r2 = try world.once(["--dal-base", "off"])
        #expect(!r2.stdout.contains("example.com: google:"))
    }

    @Test func badLinesOfTheDomainsFileAreReportedWithTheirNumbersAndTheOthersWatched() throws {
        let world = try World.good()
        let text = """
        # the domains we serve through our CDN
        *.example.com
        example.com/path
        example.com:8443
        example.com connect=127.0.0.1:\(world.front.port) app=\(app)   # the main one
        Example.COM
        example.com colour=blue

        """
        let r = try world.once(domains: text)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let problems = r.stderr.split(separator: "\n").map(String.init)
        #expect(problems.count == 5, "\(r.stderr)")
        #expect(problems.contains { $0.hasSuffix("domains.txt:2: *.example.com: a wildcard is not a domain a device fetches from; list the names themselves (a *. entitlement fetches the base name's file); line skipped") })
        #expect(problems.contains { $0.contains("domains.txt:3: example.com/path: give a host name only") })
        #expect(problems.contains { $0.contains("domains.txt:4: example.com:8443: give a host name only") })
        #expect(problems.contains { $0.contains("domains.txt:6: example.com is already listed on line 5") })
        #expect(problems.contains { $0.contains("domains.txt:7: colour=blue: expected app=APPID or connect=ADDR:PORT") })
        #expect(r.stdout.hasSuffix("1 domain: 1 ok, 0 warn, 0 failing\n"))
    }

    @Test func theDomainsFileMayBeNamedByAASA_DOMAINS() throws {
        let world = try World.good()
        let r = try AASABinary.run(["monitor", "--once"] + world.arguments, environment: ["AASA_DOMAINS": try world.domains()], timeout: 120)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.hasSuffix("1 domain: 1 ok, 0 warn, 0 failing\n"))
    }

    @Test func badUsageExitsTwo() throws {
        #expect(try AASABinary.run(["monitor", "--once"]).status == 2)
        #expect(try AASABinary.run(["monitor", "--domains", "/nonexistent/domains.txt", "--once"]).status == 2)
        let dir = try TemporaryDirectory()
        let file = try dir.write("d.txt", "example.com\n")
        #expect(try AASABinary.run(["monitor", "--domains", file, "--format", "json"]).status == 2)
        #expect(try AASABinary.run(["monitor", "--domains", file, "--once", "--timeout", "0"]).status == 2)
        #expect(try AASABinary.run(["monitor", "--domains", file, "--once", "--dal-base", "not a url"]).status == 2)
    }

    @Test func onceAsksTheCDNAndGoogleOncePerDomainHoweverLongThePassLasts() throws {
        // The pass outlasts the interval (a hung origin holds its check for the time-out): the
        // good domain, checked first, is due again meanwhile, and is still asked once.
        let hung = try ScriptedServer(silent: true)
        let world = try World.good()
        let text = """
        example.com connect=127.0.0.1:\(world.front.port)
        hung.example connect=127.0.0.1:\(hung.port)
        """
        let r = try world.once(["--timeout", "2", "--interval", "1"], domains: text)
        #expect(line(r, "cdn") == "pass: current", "\(r.stdout)")
        #expect(world.cdn.requests.filter { $0.hasPrefix("GET /a/v1/example.com ") }.count == 1)
        #expect(world.cdn.requests.filter { $0.hasPrefix("GET /a/v1/hung.example ") }.count == 1)
        #expect(world.google.requests.filter { $0.contains("source.web.site=https://example.com&") }.count == 1)
        #expect(world.google.requests.filter { $0.contains("source.web.site=https://hung.example&") }.count == 1)
    }

    @Test func theCDNAndGoogleEachKeepTheRateWhenHeldChecksAreLetGoAtOnce() throws {
        // Eight origins hold their checks (accepted, never answered) until they all close at
        // once: eight checks then reach their CDN and Google requests in the same instant.
        let hung = try ScriptedServer(silent: true)
        let cdn = try FakeCDN()
        let google = try FakeCDN()
        let directory = try TemporaryDirectory()
        let file = try directory.write("domains.txt", (0..<8).map { "d\($0).example connect=127.0.0.1:\(hung.port)\n" }.joined())
        // Started 0.55 s apart at --rate 2: all eight under way after about 4 s.
        DispatchQueue.global().asyncAfter(deadline: .now() + 5.5) { hung.stop() }
        let r = try AASABinary.run(["monitor", "--domains", file, "--once", "--rate", "2", "--timeout", "10",
                                    "--cdn-base", cdn.base, "--dal-base", google.base], timeout: 120)
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        #expect(cdn.arrivals.count == 8)
        #expect(google.arrivals.count == 8)
        let cdnTimes = cdn.arrivals.map(\.time)
        #expect(cdn.busiestSecond <= 2, "\(cdnTimes)")
        #expect(google.busiestSecond <= 2, "\(google.arrivals.map(\.time))")
    }

    @Test func googleIsNeverCurrentAgainstAnAssetLinksFileThatIsHTML() throws {
        let html = ScriptedServer.response("200 OK", ["Content-Type: text/html"], body: "<html><body>Welcome</body></html>")
        let world = try World(routes: [wellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom),
                                       assetLinksPath: html],
                              google: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: "{}"))
        let r = try world.once()
        #expect(line(r, "assetlinks").hasPrefix("fail: "))
        #expect(line(r, "google").hasPrefix("skip: pending: the origin has served no valid assetlinks.json to compare Google's list with"), "\(r.stdout)")
        // An error status is no file either, nor a statement that there is none.
        let failing = try World(routes: [wellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom),
                                         assetLinksPath: ScriptedServer.response("503 Service Unavailable", body: "busy")],
                                google: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: "{}"))
        #expect(line(try failing.once(), "google").hasPrefix("skip: pending: "))
    }

    @Test func anOriginThatNeverAnswersHoldsItsCheckForTheTimeoutOnly() throws {
        let hung = try ScriptedServer(silent: true)
        let world = try World.good()
        let text = """
        hung.example connect=127.0.0.1:\(hung.port)
        example.com connect=127.0.0.1:\(world.front.port)
        """
        let started = Date()
        let r = try world.once(["--timeout", "1"], domains: text)
        let took = Date().timeIntervalSince(started)
        #expect(r.status == 1)
        #expect(took < 15, "took \(took) s")
        #expect(line(r, "tls", host: "hung.example").hasPrefix("fail: "))
        #expect(line(r, "status", host: "example.com").hasPrefix("pass: "))
    }
}

/// What hostile peers do to one pass (`Tests/hostile/origin.py` in mode `monitor`: origins that
/// misbehave as their first label says, and on its plain port stand-ins for Apple's CDN and Google
/// that misbehave as the path's first segment says). Each peer's misbehaviour is that check's
/// result, within that peer's time-out, and nothing a peer sent reaches the terminal unescaped.
extension MonitorCommandTests {
    @Test func eachHostileOriginGetsItsVerdictAndThePassEndsWithinOneTimeOut() throws {
        let origin = try HostileOrigin("monitor")
        let names = ["good", "hang", "trickle", "headers", "redirect", "html", "big", "invalid", "escape"]
        let directory = try TemporaryDirectory()
        let file = try directory.write("domains.txt", names.map { "\($0).pool.test connect=127.0.0.1:\(origin.port)\n" }.joined())
        let api = "http://127.0.0.1:\(origin.plainPort)/good"
        let started = Date()
        let r = try AASABinary.run(["monitor", "--domains", file, "--once", "--timeout", "2", "--rate", "50", "--cacert", TestCertificates.caFile,
                                    "--cdn-base", api, "--dal-base", api], timeout: 60)
        let took = Date().timeIntervalSince(started)
        #expect(r.status == 1, "\(r.stdout)\(r.stderr)")
        // Checked at once, each origin's requests (the file, the legacy location, assetlinks.json)
        // within its one 2 s time-out: less than two of them in all.
        #expect(took < 3.9, "took \(took) s")
        func check(_ host: String, _ name: String) -> String { line(r, name, host: "\(host).pool.test") }
        #expect(check("good", "status") == "pass: 200 OK for GET \(wellKnown) as AASA-Bot/1.0.0")
        #expect(check("good", "cdn") == "pass: current")
        #expect(check("hang", "status") == "fail: no complete HTTP response to GET \(wellKnown): no response within 2 s")
        #expect(check("hang", "assetlinks") == "skip: not run: the host's time-out (--timeout) was spent")
        #expect(check("trickle", "status").hasPrefix("fail: no complete HTTP response to GET \(wellKnown): "))
        #expect(check("trickle", "status").hasSuffix(" within 2 s"), "\(r.stdout)")
        #expect(check("headers", "status") == "fail: no complete HTTP response to GET \(wellKnown): the response head (interim 1xx responses included) is larger than 65536 bytes")
        #expect(check("redirect", "status").hasPrefix("fail: the file is behind a 301 Moved Permanently to https://www.example.com/aasa.json: serve it on redirect.pool.test itself; Apple's CDN follows no redirect"))
        #expect(check("html", "content-type").hasPrefix("fail: the body is an HTML page (Content-Type: text/html), not the file"))
        #expect(check("html", "validate").hasPrefix("fail: 1 error, 0 warnings; first: 1:1: unexpected character '<'"))
        #expect(check("big", "size") == "fail: 131073 bytes: over the 131072-byte limit (128 KB) after which iOS stops reading: shrink the file (fewer paths, broader components)")
        #expect(check("big", "validate") == "skip: not run: size failed")
        #expect(check("invalid", "validate") == "fail: 1 error, 0 warnings; first: 1:27: unexpected character '}'; expected a value [syntax]")
        #expect(r.stdout.contains("\nhttps://invalid.pool.test\(wellKnown):1:27: error: unexpected character '}'; expected a value [syntax]\n"))
        #expect(check("escape", "status").contains(#"to https://evil.test/\u{1b}]0;pwned\u{7}\u{1b}[2J: serve it on escape.pool.test itself"#), "\(r.stdout)")
        #expect(!r.stdout.utf8.contains(0x1B) && !r.stdout.utf8.contains(0x07), "raw control bytes reached the terminal")
        for name in names.dropFirst() {
            #expect(check(name, "cdn") == "warn: stale: the origin has served no good file to compare the CDN's copy with", "\(name)")
        }
        #expect(r.stdout.hasSuffix("9 domains: 1 ok, 0 warn, 8 failing\n"))
    }

    @Test func aCDNOrGoogleThatIsDownSlowOrAnswersGarbageIsThatChecksResultWithinItsTimeOut() throws {
        let origin = try HostileOrigin("monitor")
        let closed = try freePort()
        let directory = try TemporaryDirectory()
        let file = try directory.write("domains.txt", "good.pool.test connect=127.0.0.1:\(origin.port)\n")
        func base(_ behaviour: String) -> String {
            behaviour == "down" ? "http://127.0.0.1:\(closed)" : "http://127.0.0.1:\(origin.plainPort)/\(behaviour)"
        }
        // Each behaviour once as Apple's CDN and once as Google, one pass after the other (passes
        // at once, from threads of this process, met a known teardown race of Foundation's Process
        // and libdispatch on Linux: a crash in _dispatch_event_loop_drain).
        let pairs = [("down", "hang"), ("hang", "trickle"), ("trickle", "garbage"), ("garbage", "junk"), ("junk", "down")]
        var results: [(CommandResult, Double)] = []
        for (c, g) in pairs {
            let started = Date()
            let r = try AASABinary.run(["monitor", "--domains", file, "--once", "--timeout", "1", "--cacert", TestCertificates.caFile,
                                        "--cdn-base", base(c), "--dal-base", base(g)], timeout: 60)
            results.append((r, Date().timeIntervalSince(started)))
        }
        let cdn = [
            "down": "fail: unreachable: connect (cannot connect to 127.0.0.1:\(closed): Connection refused)",
            "hang": "fail: unreachable: timeout (no response within 1 s)",
            "trickle": "fail: unreachable: timeout (",
            "garbage": #"fail: unreachable: connect (not an HTTP/1.x status line: "\u{1B}[2J\u{1B}]0;pwned\u{07} this is no HTTP "#,
            "junk": "warn: stale: the CDN still serves an older version (the CDN's copy is not JSON)",
        ]
        let google = [
            "down": "fail: failing: no answer from 127.0.0.1: cannot connect to 127.0.0.1:\(closed): Connection refused",
            "hang": "fail: failing: no answer from 127.0.0.1: no response within 1 s",
            "trickle": "fail: failing: no answer from 127.0.0.1: ",
            "garbage": #"fail: failing: no answer from 127.0.0.1: not an HTTP/1.x status line: "\u{1B}[2J\u{1B}]0;pwned\u{07} this is no HTTP "#,
            "junk": "fail: failing: Google's answer is not a statement list",
        ]
        for ((c, g), (r, took)) in zip(pairs, results) {
            // The origin is fine whatever the CDN and Google do: exit 0.
            #expect(r.status == 0, "CDN \(c), Google \(g): \(r.stdout)\(r.stderr)")
            #expect(line(r, "status", host: "good.pool.test").hasPrefix("pass: 200 OK"))
            #expect(line(r, "cdn", host: "good.pool.test").hasPrefix(cdn[c]!), "CDN \(c): \(r.stdout)")
            #expect(line(r, "google", host: "good.pool.test").hasPrefix(google[g]!), "Google \(g): \(r.stdout)")
            #expect(!r.stdout.utf8.contains(0x1B) && !r.stdout.utf8.contains(0x07), "raw control bytes reached the terminal")
            // A slow peer costs its own time-out and no more; the others answer at once.
            let slow = [c, g].count { $0 == "hang" || $0 == "trickle" }
            #expect(took < Double(slow) * 1 + 1.5, "CDN \(c), Google \(g): took \(took) s")
        }
    }
}
