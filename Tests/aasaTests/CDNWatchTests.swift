import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"
private let olderWww = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/old/*"}]}]}}"#

/// `aasa serve`'s view of Apple's CDN (docs/apple-view.md): the watch against a fake CDN
/// on loopback, the fetch record, and what `/status`, `/metrics` and the log say of them.
@Suite(.serialized) struct CDNWatchTests {
    /// The fake CDN behind TLS with a certificate for 127.0.0.1 from the test CA.
    private func httpsCDN() throws -> (FakeCDN, TLSFront) {
        let cdn = try FakeCDN()
        let pem = try TestCertificates.issue(commonName: "127.0.0.1", names: "IP:127.0.0.1", days: 30)
        return (cdn, try TLSFront(backend: cdn.port, certificatePEM: pem))
    }

    private func watch(_ base: String, interval: Int, rate: Int = 20, _ extra: [String] = []) -> [String] {
        ["--cdn-watch", "on", "--cdn-base", base, "--cdn-interval", "\(interval)", "--cdn-rate", "\(rate)"] + extra
    }

    /// Polls a site's `cdn` object until `until` holds.
    private func cdnStatus(_ server: ServerProcess, _ host: String, timeout: Double = 10,
                     until: ([String: Any]) -> Bool = { $0["state"] as? String != "pending" }) throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [String: Any] = [:]
        while Date() < deadline {
            if let c = try server.site(host)?["cdn"] as? [String: Any] {
                last = c
                if until(c) { return c }
            }
            usleep(100_000)
        }
        return last
    }

    @Test func eachSiteShowsTheStateOfItsCopyAtTheCDN() throws {
        let (cdn, front) = try httpsCDN()
        cdn.answer("example.com", FakeCDN.copy(exampleCom, age: 120))
        cdn.answer("www.example.com", FakeCDN.copy(olderWww, age: 7200))
        cdn.answer("example.org", FakeCDN.refused())
        let server = try ServerProcess(extraArguments: watch("https://127.0.0.1:\(front.port)", interval: 3,
                                                             ["--cdn-cacert", TestCertificates.caFile]))

        let current = try cdnStatus(server, "example.com")
        #expect(current["state"] as? String == "current")
        #expect(current["httpStatus"] as? Int == 200)
        #expect(current["age"] as? Int == 120)
        #expect(current["maxAge"] as? Int == 21_600)
        #expect(current["differs"] as? [String] == [])
        #expect(current["failureReason"] is NSNull)
        #expect((current["since"] as? String)?.hasSuffix("Z") == true)
        #expect((current["checkedAt"] as? String)?.hasSuffix("Z") == true)

        let stale = try cdnStatus(server, "www.example.com")
        #expect(stale["state"] as? String == "stale")
        #expect(stale["age"] as? Int == 7200)
        let differs = try #require(stale["differs"] as? [String])
        #expect(differs.count == 1)
        #expect(differs.first?.contains("ABCDE12345.com.example.app") == true, "\(differs)")

        // A wildcard site is asked of the CDN by its base name, which it serves.
        let failing = try cdnStatus(server, "*.example.org")
        #expect(failing["state"] as? String == "failing")
        #expect(failing["httpStatus"] as? Int == 404)
        #expect(failing["failureReason"] as? String == "SWCERR00101 Bad HTTP Response: 403 Forbidden")
        #expect(failing["failureDetails"] as? String == "Origin answered 403 \"Forbidden\"")
        #expect(failing["maxAge"] as? Int == 3600)
        #expect(failing["age"] is NSNull)
        #expect(failing["differs"] as? [String] == [])
        #expect(cdn.arrivals.allSatisfy { !$0.path.contains("*") })
        #expect(cdn.wait(for: "example.org"))

        // As Apple's CDN would be asked, by our own agent.
        #expect(cdn.arrivals.allSatisfy { $0.userAgent == "aasa/0.1.0" }, "\(cdn.arrivals.map(\.userAgent))")

        let metrics = try server.admin("/metrics").body
        #expect(metrics.contains("aasa_cdn_sites{state=\"current\"} 1"))
        #expect(metrics.contains("aasa_cdn_sites{state=\"stale\"} 1"))
        #expect(metrics.contains("aasa_cdn_sites{state=\"failing\"} 1"))
        #expect(metrics.contains("aasa_cdn_checks_total{result=\"failing\"}"))
        // The first results, one line each (there are fewer than 20 of a kind).
        #expect(server.waitForLog("cdn: www.example.com stale"))
        #expect(server.waitForLog("cdn: example.org failing: the CDN answers 404, Apple-Failure-Reason: SWCERR00101 Bad HTTP Response: 403 Forbidden"))
        let story = try #require(try server.site("www.example.com")?["story"] as? String)
        #expect(story.hasPrefix("file changed "), "\(story)")
        #expect(story.contains("CDN still old at "), "\(story)")
        #expect(story.contains("(age 2 h of 6 h)"), "\(story)")
    }

    @Test func sitesNotYetCheckedArePendingAndSitesWithoutAFileAreNotWatched() throws {
        let cdn = try FakeCDN()
        cdn.answer("example.com", FakeCDN.copy(exampleCom))
        // Three sites over an hour: the first is checked at once, the others later.
        let server = try ServerProcess(extraArguments: watch(cdn.base, interval: 3600), prepare: { config in
            // A site with only another association file serves no AASA file: not watched.
            try FileManager.default.createDirectory(at: config.appendingPathComponent("android.example"), withIntermediateDirectories: true)
            try Data(#"{"origins": ["https://example.com"]}"#.utf8).write(to: config.appendingPathComponent("android.example/webauthn"))
        })
        let first = try cdnStatus(server, "*.example.org", until: { _ in true })
        #expect(first["state"] != nil)
        let pending = try #require(try server.site("www.example.com")?["cdn"] as? [String: Any])
        #expect(pending["state"] as? String == "pending")
        #expect(pending["since"] is String)
        for field in ["checkedAt", "httpStatus", "failureReason", "failureDetails", "age", "maxAge", "differs"] {
            #expect(pending[field] is NSNull, "\(field)")
        }
        let site = try #require(try server.site("android.example"))
        #expect(site["cdn"] is NSNull)
        usleep(500_000)
        #expect(cdn.arrivals(for: "android.example").isEmpty)
        #expect(cdn.arrivals.count == 1, "\(cdn.arrivals.map(\.path))")
    }

    @Test func aCDNThatCannotBeReachedSaysWhy() throws {
        // Nothing listens on this port.
        let closed = try freePort()
        let server = try ServerProcess(extraArguments: watch("http://127.0.0.1:\(closed)", interval: 3))
        let unreachable = try cdnStatus(server, "example.com")
        #expect(unreachable["state"] as? String == "unreachable")
        #expect(unreachable["failureReason"] as? String == "connect")
        #expect(unreachable["httpStatus"] is NSNull)

        // A certificate that does not verify (no --cdn-cacert for the test CA).
        let (_, front) = try httpsCDN()
        let untrusted = try ServerProcess(extraArguments: watch("https://127.0.0.1:\(front.port)", interval: 3))
        let tls = try cdnStatus(untrusted, "example.com")
        #expect(tls["state"] as? String == "unreachable")
        #expect(tls["failureReason"] as? String == "tls")
    }

    @Test func anEditThatMatchesTheCDNTurnsStaleIntoCurrentAtOnceAndIsCheckedAgain() throws {
        let cdn = try FakeCDN()
        cdn.answer("www.example.com", FakeCDN.copy(olderWww))
        let server = try ServerProcess(extraArguments: watch(cdn.base, interval: 4, ["--log-format", "json"]))
        #expect(try cdnStatus(server, "www.example.com")["state"] as? String == "stale")
        let asked = cdn.arrivals(for: "www.example.com").count
        let edited = Date()
        _ = try server.directory.write("config/www.example.com/apple-app-site-association", olderWww)
        let current = try cdnStatus(server, "www.example.com", timeout: 3) { $0["state"] as? String == "current" }
        #expect(current["state"] as? String == "current")
        #expect(Date().timeIntervalSince(edited) < 3, "judged at once against the copy last fetched")
        // Checked again soon: within min(60 s, interval) of the change.
        #expect(cdn.wait(for: "www.example.com", count: asked + 1, timeout: 4))
        // One JSON log line for the change, with its fields.
        #expect(server.waitForLog(#""host":"www.example.com","from":"stale","to":"current","after":""#))
        let change = try #require(server.log.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.first { $0["to"] as? String == "current" })
        #expect((change["message"] as? String)?.hasPrefix("cdn: www.example.com stale -> current after ") == true, "\(change)")
        #expect((change["after"] as? String)?.hasSuffix("s") == true, "\(change)")
    }

    @Test func anEditToTheSameJSONAsTheCDNsCopyIsCheckedAgainWithinMinOf60SecondsAndTheInterval() throws {
        let cdn = try FakeCDN()
        // A stale copy cached for 6 hours: left alone, the next check would be hours away.
        cdn.answer("www.example.com", FakeCDN.copy(olderWww, age: 120))
        let server = try ServerProcess(sites: ["www.example.com": wwwExampleCom], extraArguments: watch(cdn.base, interval: 20))
        #expect(try cdnStatus(server, "www.example.com")["state"] as? String == "stale")
        let asked = cdn.arrivals(for: "www.example.com").count
        // The CDN's JSON in other bytes: another version served, equal as parsed values.
        let edited = Date()
        _ = try server.directory.write("config/www.example.com/apple-app-site-association",
                                       olderWww.replacingOccurrences(of: ": ", with: ":") + "\n")
        let current = try cdnStatus(server, "www.example.com", timeout: 3) { $0["state"] as? String == "current" }
        #expect(current["state"] as? String == "current")
        // Checked again within min(60 s, interval) = 20 s of the edit, whatever the re-evaluation found.
        #expect(cdn.wait(for: "www.example.com", count: asked + 1, timeout: 20), "\(cdn.arrivals.map(\.path))")
        #expect(cdn.arrivals(for: "www.example.com").last.map { $0.time.timeIntervalSince(edited) < 20 } == true)
        let rechecked = try cdnStatus(server, "www.example.com", timeout: 3) { c in
            (c["checkedAt"] as? String).flatMap(isoDate).map { $0 >= edited.addingTimeInterval(-0.001) } == true
        }
        let checkedAt = try #require((rechecked["checkedAt"] as? String).flatMap(isoDate))
        #expect(checkedAt >= edited.addingTimeInterval(-0.001), "checkedAt \(checkedAt) is after the edit at \(edited)")
        #expect(rechecked["state"] as? String == "current")
        #expect(server.log.components(separatedBy: "cdn: www.example.com stale -> current").count - 1 == 1, "\(server.log)")
    }

    /// `/status` times: ISO 8601 with milliseconds, in UTC.
    private func isoDate(_ text: String) -> Date? {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    @Test func theWatchIsOffWithTheFlagAndInDevelopmentMode() throws {
        let cdn = try FakeCDN()
        cdn.answer("example.com", FakeCDN.copy(exampleCom))
        // The harness's own AASA_CDN_WATCH=off is cleared: the defaults decide.
        let off = try ServerProcess(extraArguments: ["--cdn-watch", "off", "--cdn-base", cdn.base, "--cdn-interval", "1"],
                                    environment: ["AASA_CDN_WATCH": ""])
        let dev = try ServerProcess(extraArguments: ["--cdn-base", cdn.base, "--cdn-interval", "1"], dev: true,
                                    environment: ["AASA_CDN_WATCH": ""])
        usleep(1_500_000)
        #expect(cdn.arrivals.isEmpty)
        for server in [off, dev] {
            let site = try #require(try server.site("example.com"))
            #expect(site["cdn"] is NSNull)
            #expect(site["fetches"] is [String: Any])
            #expect(try !server.admin("/metrics").body.contains("aasa_cdn_sites"))
        }
    }

    @Test func manySitesAreSpreadOverTheIntervalAndNeverFasterThanTheRate() throws {
        let cdn = try FakeCDN()
        let server = try ServerProcess(extraArguments: watch(cdn.base, interval: 2, rate: 5), prepare: { config in
            for i in 0..<300 {
                let dir = config.appendingPathComponent("site\(i).example")
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                try Data(exampleCom.utf8).write(to: dir.appendingPathComponent("apple-app-site-association"))
            }
        })
        usleep(6_000_000)
        let arrivals = cdn.arrivals
        // 300 sites due within 2 s, at most 5 a second: the rate, not the schedule, decides.
        #expect(arrivals.count >= 20, "\(arrivals.count) requests in 6 s")
        #expect(cdn.busiestSecond <= 5, "\(cdn.busiestSecond) requests in one second")
        #expect(Set(arrivals.map(\.path)).count == arrivals.count, "no site asked twice before the others")
        withExtendedLifetime(server) {}
    }

    @Test func aHangingCDNDelaysNoResponseAndNoShutdown() throws {
        // Accepts every connection and never answers.
        let silent = try ScriptedServer(silent: true)
        let server = try ServerProcess(extraArguments: watch("http://127.0.0.1:\(silent.port)", interval: 1, rate: 10),
                                       environment: ["AASA_CDN_TIMEOUT_MS": "1500"])
        usleep(500_000)
        var slowest = 0.0
        for _ in 0..<20 {
            let start = Date()
            let r = try server.curlHTTPS(host: "example.com")
            #expect(r.stdout.hasPrefix("HTTP/1.1 200"))
            slowest = max(slowest, Date().timeIntervalSince(start))
        }
        #expect(slowest < 0.5, "slowest response \(slowest) s while the CDN hangs")
        // Each request ends within its time-out: a timeout, not a wait without end.
        let timedOut = try cdnStatus(server, "example.com", timeout: 5)
        #expect(timedOut["state"] as? String == "unreachable")
        #expect(timedOut["failureReason"] as? String == "timeout")
        let stopping = Date()
        #expect(server.stop() == 0)
        #expect(Date().timeIntervalSince(stopping) < 3, "shutdown waits for no CDN request")
    }

    @Test func aWildcardSiteIsNotWatchedWhereAnotherFolderServesItsBaseName() throws {
        let cdn = try FakeCDN()
        cdn.answer("example.org", FakeCDN.copy(exampleCom))
        let server = try ServerProcess(sites: ["*.example.org": wildcardOrg, "example.org": exampleCom], extraArguments: watch(cdn.base, interval: 2))
        #expect(try cdnStatus(server, "example.org")["state"] as? String == "current")
        let wildcard = try #require(try server.site("*.example.org"))
        #expect(wildcard["cdn"] is NSNull)
        #expect(Set(cdn.arrivals.map(\.path)) == ["/a/v1/example.org"])
    }

    @Test func theFirstResultsOfAPassAreSummarised() throws {
        let cdn = try FakeCDN()
        // 30 sites, each refused by the CDN (its default answer), all checked within a second.
        let server = try ServerProcess(sites: [:], extraArguments: watch(cdn.base, interval: 1, rate: 50), prepare: { config in
            for i in 0..<30 {
                let dir = config.appendingPathComponent(String(format: "site%02d.example", i))
                try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
                try Data(exampleCom.utf8).write(to: dir.appendingPathComponent("apple-app-site-association"))
            }
        })
        #expect(server.waitForLog("cdn: 10 more sites failing at their first check", timeout: 10), "\(server.log)")
        let lines = server.log.split(separator: "\n").filter { $0.contains("cdn: site") && $0.contains(" failing: ") }
        #expect(lines.count == 20)
        // Later checks of the same sites change nothing: no line.
        usleep(1_500_000)
        #expect(server.log.split(separator: "\n").filter { $0.contains("cdn: site") }.count == 20)
    }

    @Test func theDashboardTellsEachSitesStoryWhenTheWatchIsOn() throws {
        let cdn = try FakeCDN()
        cdn.answer("example.com", FakeCDN.copy(exampleCom, age: 1800))
        let server = try ServerProcess(extraArguments: watch(cdn.base, interval: 2), dev: true)
        _ = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nUser-Agent: AASA-Bot/1.0.0\r\nConnection: close\r\n\r\n")
        #expect(try cdnStatus(server, "example.com")["state"] as? String == "current")
        let r = try RawHTTP.exchange(port: server.http, "GET /api/sites HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        let sites = try #require((try JSONSerialization.jsonObject(with: Data(RawHTTP.body(r).utf8)) as? [String: Any])?["sites"] as? [[String: Any]])
        let example = try #require(sites.first { $0["host"] as? String == "example.com" })
        let timeline = try #require(example["timeline"] as? [[String: Any]])
        #expect(Set(timeline.compactMap { $0["kind"] as? String }) == ["changed", "appleCDN", "cdn"])
        #expect(timeline.first?["label"] as? String == "file changed")
        #expect((example["cdn"] as? [String: Any])?["state"] as? String == "current")
        let page = try RawHTTP.exchange(port: server.http, "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(page.contains("What Apple sees:"))
    }

    @Test func aSiteAddedWhileServingIsCheckedWithinTheInterval() throws {
        let cdn = try FakeCDN()
        let server = try ServerProcess(sites: ["example.com": exampleCom], extraArguments: watch(cdn.base, interval: 3))
        #expect(cdn.wait(for: "example.com"))
        _ = try server.directory.write("config/new.example/apple-app-site-association", exampleCom)
        let added = Date()
        #expect(cdn.wait(for: "new.example", timeout: 6))
        #expect(Date().timeIntervalSince(added) < 4.5, "within the interval of 3 s, after a reload within 1 s")
        #expect(try server.site("new.example")?["cdn"] is [String: Any])
    }

    @Test func badWatchSettingsAreUsageErrors() throws {
        for (args, message) in [(["--cdn-watch", "maybe"], "The value 'maybe' is invalid for '--cdn-watch <cdn-watch>'. Please provide one of 'on' and 'off'."), (["--cdn-rate", "0"], "--cdn-rate must be at least 1"),
                                (["--cdn-interval", "0"], "--cdn-interval must be at least 1"), (["--cdn-base", "ftp://cdn.example"], "--cdn-base"),
                                (["--cdn-cacert", "/nonexistent/ca.pem"], "--cdn-cacert: cannot read")] {
            let r = try AASABinary.run(["serve", "--http", "127.0.0.1:0", "--admin", "off"] + args, environment: ["AASA_CDN_WATCH": ""])
            #expect(r.status == 2, "\(args)")
            #expect(r.stderr.contains(message), "\(args): \(r.stderr)")
        }
        // The variables are read like the flags, and an error names the variable.
        let r = try AASABinary.run(["serve", "--http", "127.0.0.1:0", "--admin", "off"], environment: ["AASA_CDN_WATCH": "on", "AASA_CDN_RATE": "0"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("AASA_CDN_RATE must be at least 1, got 0"), "\(r.stderr)")
    }

    @Test func fetchesByAppleAndByDevicesAreRecorded() throws {
        let server = try ServerProcess()
        let version = try #require(try server.site("example.com")?["version"] as? String)
        // Apple's CDN, over HTTP/2.
        let apple = try server.curlHTTPS(host: "example.com", ["--http2", "-A", "AASA-Bot/1.0.0"])
        #expect(apple.stdout.hasPrefix("HTTP/2 200"), "\(apple.stdout)")
        // A device, at the legacy path, with a validator that holds: 304.
        let device = try server.curlHTTPS(host: "example.com", path: "/apple-app-site-association",
                                          ["-A", "swcd (unknown version) CFNetwork/1494.0.7 Darwin/23.4.0", "-H", "If-None-Match: \"\(version)\""])
        #expect(device.stdout.hasPrefix("HTTP/1.1 304"), "\(device.stdout)")
        // Neither: not recorded.
        _ = try server.curlHTTPS(host: "example.com", ["-A", "curl/8"])
        _ = try server.curlHTTPS(host: "example.com", path: "/.well-known/assetlinks.json", ["-A", "AASA-Bot/1.0.0"])
        _ = try server.curlHTTPS(host: "example.com", ["-A", "AASA-Bot/1.0.0", "-X", "POST"])

        let fetches = try #require(try server.site("example.com")?["fetches"] as? [String: Any])
        let a = try #require(fetches["appleCDN"] as? [String: Any])
        #expect(a["status"] as? Int == 200)
        #expect(a["version"] as? String == version)
        #expect(a["client"] as? String == "127.0.0.1")
        #expect((a["at"] as? String)?.hasSuffix("Z") == true)
        let d = try #require(fetches["device"] as? [String: Any])
        #expect(d["status"] as? Int == 304)
        #expect(d["version"] as? String == version)

        // A site never fetched has nulls; a 404 of a site's file names no version.
        let www = try #require(try server.site("www.example.com")?["fetches"] as? [String: Any])
        #expect(www["appleCDN"] is NSNull)
        #expect(www["device"] is NSNull)
        let story = try #require(try server.site("example.com")?["story"] as? String)
        #expect(story.contains("Apple fetched "), "\(story)")
        #expect(story.contains("got it (200, version \(version))"), "\(story)")
    }
}
