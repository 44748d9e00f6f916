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

/// `aasa monitor` running, its admin listener on a free port.
private final class MonitorProcess {
    let process = Process()
    let admin: Int
    private let stderr: OutputBuffer

    init(_ arguments: [String]) throws {
        admin = try freePort()
        process.executableURL = AASABinary.url
        process.arguments = ["monitor", "--admin", "127.0.0.1:\(admin)"] + arguments
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        stderr = OutputBuffer(err.fileHandleForReading)
        try process.run()
        guard stderr.wait(for: "admin on http://", timeout: 20) else {
            process.stop(grace: 5)
            throw HarnessError(description: "the monitor did not start: \(stderr.text)")
        }
    }

    deinit { process.stop(grace: 5) }

    var log: String { stderr.text }

    func waitForLog(_ text: String, timeout: Double = 10) -> Bool { stderr.wait(for: text, timeout: timeout) }

    /// Waits until the log holds `text` `count` times.
    func waitForLog(_ text: String, count: Int, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if log.components(separatedBy: text).count > count { return true }
            usleep(20_000)
        }
        return false
    }

    func get(_ path: String) throws -> (status: Int, body: String) {
        let response = try RawHTTP.exchange(port: admin, "GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n")
        return (RawHTTP.status(response) ?? 0, RawHTTP.body(response))
    }

    func status(_ query: String = "") throws -> [String: Any] {
        let body = try get("/status\(query)").body
        return try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
    }
}

/// A file answer that a test may change while the monitor runs.
private final class Changing: @unchecked Sendable {
    private let lock = NSLock()
    private var value: [UInt8]

    init(_ value: [UInt8]) { self.value = value }

    func set(_ v: [UInt8]) { lock.lock(); value = v; lock.unlock() }
    func get() -> [UInt8] { lock.lock(); defer { lock.unlock() }; return value }
}

@Suite(.serialized) struct MonitorRunningTests {
    @Test func theAdminListenerAnswersHealthReadinessMetricsAndStatusAndSIGTERMEndsItWithStatusZero() throws {
        let world = try World.good()
        let monitor = try MonitorProcess(["--domains", try world.domains(), "--interval", "60"] + world.arguments)
        #expect(try monitor.get("/healthz").status == 200)
        #expect(try monitor.get("/readyz").status == 200)
        #expect(monitor.waitForLog("origin: example.com pending -> ok"))
        #expect(monitor.waitForLog("cdn: example.com pending -> current"))
        let status = try monitor.status()
        #expect((status["summary"] as? [String: Any])?["ok"] as? Int == 1)
        let metrics = try monitor.get("/metrics").body
        #expect(metrics.contains("aasa_monitor_domains{check=\"origin\",state=\"ok\"} 1\n"))
        #expect(metrics.contains("aasa_monitor_domains{check=\"cdn\",state=\"current\"} 1\n"))
        #expect(metrics.contains("aasa_monitor_domains{check=\"google\",state=\"current\"} 1\n"))
        #expect(metrics.contains("aasa_monitor_checks_total{check=\"origin\",result=\"ok\"} 1\n"))
        #expect(metrics.contains("# TYPE aasa_monitor_propagation_seconds histogram\n"))
        #expect(try monitor.get("/status?domain=nowhere.example").status == 404)
        #expect(try monitor.get("/nothing").status == 404)
        let started = Date()
        #expect(monitor.process.stop(signal: SIGTERM, grace: 10) == 0)
        #expect(Date().timeIntervalSince(started) < 10)
    }

    @Test func theAdminListenerIsTheServersHTTP1SessionAndASlowClientHoldsUpNoOther() throws {
        let world = try World.good()
        let monitor = try MonitorProcess(["--domains", try world.domains(), "--dal-base", "off"] + world.arguments)
        // A client that starts a request and never finishes it.
        let slow = try RawHTTP.connect(port: monitor.admin)
        defer { close(slow) }
        RawHTTP.send(slow, Array("GET /heal".utf8))
        let started = Date()
        let health = try RawHTTP.exchange(port: monitor.admin, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(RawHTTP.status(health) == 200)
        #expect(Date().timeIntervalSince(started) < 2, "held up by the slow client")
        // One request a connection, said so.
        #expect(RawHTTP.header("Connection", in: health)?.lowercased() == "close")
        #expect(RawHTTP.header("Cache-Control", in: health) == "no-store")
        // The slow one gets the server's 408 when its head's time is up, as aasa serve answers it.
        let (bytes, closed) = RawHTTP.readToEnd(slow)
        #expect(RawHTTP.status(String(decoding: bytes, as: UTF8.self)) == 408)
        #expect(closed)
        // What the session refuses, it refuses as the server does: a head over its limits is a 431.
        let huge = try RawHTTP.exchange(port: monitor.admin, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n")
        #expect(RawHTTP.status(huge) == 431, "\(huge.prefix(200))")
        #expect(RawHTTP.status(try RawHTTP.exchange(port: monitor.admin, "POST /status HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n")) == 405)
        let head = try RawHTTP.exchange(port: monitor.admin, "HEAD /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        #expect(RawHTTP.status(head) == 200)
        #expect(head.hasSuffix("\r\n\r\n"), "a HEAD answer has no body")
    }

    @Test func withTheJSONLogAChangeOfStateIsAnObjectNamingTheCheckHostAndStates() throws {
        let world = try World.good()
        let monitor = try MonitorProcess(["--domains", try world.domains(), "--log-format", "json"] + world.arguments)
        #expect(monitor.waitForLog(#""check":"cdn""#))
        let line = try #require(monitor.log.split(separator: "\n").first { $0.contains(#""check":"origin""#) })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["host"] as? String == "example.com")
        #expect(object["from"] as? String == "pending")
        #expect(object["to"] as? String == "ok")
        #expect(object["level"] as? String == "info")
        #expect(object["after"] is String)
    }

    @Test func statusPagesAndFiltersTheDomains() throws {
        let world = try World.good()
        let hung = try ScriptedServer(silent: true)
        let text = """
        example.com connect=127.0.0.1:\(world.front.port)
        a.example connect=127.0.0.1:\(hung.port)
        b.example connect=127.0.0.1:\(hung.port)
        """
        let monitor = try MonitorProcess(["--domains", try world.domains(text), "--interval", "3", "--rate", "20", "--timeout", "1"] + world.arguments)
        #expect(monitor.waitForLog("origin: b.example pending -> failing", timeout: 20))
        #expect(monitor.waitForLog("origin: example.com pending -> ok", timeout: 20))
        let first = try monitor.status("?limit=2")
        #expect((first["domains"] as? [[String: Any]])?.map { $0["host"] as? String } == ["a.example", "b.example"])
        #expect(first["next"] as? String == "b.example")
        let second = try monitor.status("?limit=2&after=b.example")
        #expect((second["domains"] as? [[String: Any]])?.map { $0["host"] as? String } == ["example.com"])
        #expect(second["next"] is NSNull)
        let failing = try monitor.status("?state=failing")
        #expect((failing["domains"] as? [[String: Any]])?.map { $0["host"] as? String } == ["a.example", "b.example"])
        let one = try monitor.status("?domain=example.com")
        #expect((one["domains"] as? [[String: Any]])?.map { $0["host"] as? String } == ["example.com"])
        #expect(try monitor.get("/status?state=sideways").status == 400)
        #expect(try monitor.get("/status?limit=1001").status == 400)
    }

    @Test func anOriginChangeIsToldInTheStoryAndTheCDNCatchingUpSaysHowLongItTook() throws {
        let file = Changing(ScriptedServer.response("200 OK", ["Content-Type: application/json", "ETag: \"v1\""], body: exampleCom))
        let copy = Changing(ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom))
        let newer = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/new/*"}]}]}}"#
        let world = try World(origin: { request in
            String(decoding: request, as: UTF8.self).hasPrefix("GET \(wellKnown) ") ? file.get() : ScriptedServer.response("404 Not Found", body: "no")
        })
        let cdn = try ScriptedServer { _ in copy.get() }
        let monitor = try MonitorProcess(["--domains", try world.domains(), "--interval", "2", "--dal-base", "off",
                                          "--cacert", TestCertificates.caFile, "--cdn-base", "http://127.0.0.1:\(cdn.port)"])
        #expect(monitor.waitForLog("cdn: example.com pending -> current"))
        file.set(ScriptedServer.response("200 OK", ["Content-Type: application/json", "ETag: \"v2\""], body: newer))
        #expect(monitor.waitForLog("cdn: example.com current -> stale"))
        copy.set(ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: newer))
        #expect(monitor.waitForLog("cdn: example.com stale -> current"))
        let domain = try #require((try monitor.status()["domains"] as? [[String: Any]])?.first)
        let story = (domain["story"] as? [[String: Any]] ?? []).compactMap { $0["event"] as? String }
        #expect(story.contains("the origin's version changed from \"v1\" to \"v2\""), "\(story)")
        // The change to current itself says how long the CDN took to serve the origin's version.
        let caughtUp = try #require(story.first { $0.hasPrefix("cdn stale -> current") }, "\(story)")
        #expect(caughtUp.hasPrefix("cdn stale -> current: the origin's version \"v2\" served by Apple's CDN after "), "\(story)")
        #expect(caughtUp.range(of: #"after \d+s$"#, options: .regularExpression) != nil, "\(caughtUp)")
        let metrics = try monitor.get("/metrics").body
        #expect(metrics.contains("aasa_monitor_propagation_seconds_count 1\n"))
    }

    @Test func theDomainsFileIsReadAgainWhenItChangesAndOnSIGHUP() throws {
        let world = try World.good()
        let path = try world.domains()
        let monitor = try MonitorProcess(["--domains", path, "--interval", "60", "--dal-base", "off"] + world.arguments)
        #expect(monitor.waitForLog("origin: example.com pending -> ok"))
        try Data("www.example.com connect=127.0.0.1:\(world.front.port)\n*.example.com\n".utf8).write(to: URL(fileURLWithPath: path))
        #expect(monitor.waitForLog("read again: 1 domain"))
        #expect(monitor.log.contains("domains.txt:2: *.example.com: a wildcard"))
        #expect(monitor.waitForLog("origin: www.example.com pending -> "))
        #expect((try monitor.status()["domains"] as? [[String: Any]])?.map { $0["host"] as? String } == ["www.example.com"])
        kill(monitor.process.processIdentifier, SIGHUP)
        #expect(monitor.waitForLog("read again: 1 domain", count: 2, timeout: 5))
    }
}

extension MonitorRunningTests {
    @Test func domainsAreSpreadOverTheIntervalNotCheckedInABurstAtStart() throws {
        let cdn = try FakeCDN()
        let directory = try TemporaryDirectory()
        // Origins that refuse at once: what is timed here is when each domain's check starts.
        let refused = try freePort()
        let file = try directory.write("domains.txt", (0..<6).map { "d\($0).example connect=127.0.0.1:\(refused)\n" }.joined())
        let started = Date()
        let monitor = try MonitorProcess(["--domains", file, "--interval", "6", "--rate", "20", "--dal-base", "off", "--cdn-base", cdn.base])
        #expect(cdn.wait(for: "d5.example", timeout: 15))
        let firsts = (0..<6).compactMap { cdn.arrivals(for: "d\($0).example").first?.time.timeIntervalSince(started) }
        #expect(firsts.count == 6)
        // Domain k of 6 at about k seconds: never all at once.
        #expect((firsts.max() ?? 0) - (firsts.min() ?? 0) >= 3.5, "\(firsts)")
        #expect(cdn.busiestSecond <= 3, "\(firsts)")
        _ = monitor
    }
}

extension MonitorRunningTests {
    @Test func theFirstResultsOfAPassAreSummarisedPast20OfAState() throws {
        let directory = try TemporaryDirectory()
        let refused = try freePort()
        let file = try directory.write("domains.txt", (0..<25).map { "d\($0).example connect=127.0.0.1:\(refused)\n" }.joined())
        let monitor = try MonitorProcess(["--domains", file, "--interval", "2", "--rate", "100", "--dal-base", "off",
                                          "--cdn-base", "http://127.0.0.1:\(refused)"])
        #expect(monitor.waitForLog("origin: 5 more domains failing at their first check"))
        #expect(monitor.waitForLog("cdn: 5 more domains unreachable at their first check"))
        let lines = monitor.log.split(separator: "\n")
        #expect(lines.count { $0.contains("origin: d") && $0.contains(" pending -> failing") } == 20)
        #expect(lines.count { $0.contains("cdn: d") && $0.contains(" pending -> unreachable") } == 20)
    }
}

extension MonitorRunningTests {
    /// 10 000 lines, four of them bad far down the file: read at once, every good line watched,
    /// each bad one reported with its number.
    @Test func aDomainsFileOf10000LinesIsReadAtOnceAndItsBadLinesReportedByNumber() throws {
        let directory = try TemporaryDirectory()
        let refused = try freePort()
        var lines = (0..<10_000).map { "d\($0).example connect=127.0.0.1:\(refused)" }
        lines[2_500] = "d1.example"
        lines[5_000] = "d5000.example:8443"
        lines[7_500] = "d7500.example/apple-app-site-association"
        lines[9_999] = "*.d9999.example"
        let file = try directory.write("domains.txt", lines.joined(separator: "\n") + "\n")
        let started = Date()
        let monitor = try MonitorProcess(["--domains", file, "--dal-base", "off", "--cdn-base", "http://127.0.0.1:\(refused)"])
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(monitor.log.contains("monitor: 9996 domains from \(file)"), "\(monitor.log)")
        #expect(monitor.log.contains("domains.txt:2501: d1.example is already listed on line 2; line skipped"))
        #expect(monitor.log.contains("domains.txt:5001: d5000.example:8443: give a host name only"))
        #expect(monitor.log.contains("domains.txt:7501: d7500.example/apple-app-site-association: give a host name only"))
        #expect(monitor.log.contains("domains.txt:10000: *.d9999.example: a wildcard is not a domain"))
        let summary = try #require(try monitor.status("?limit=1")["summary"] as? [String: Any])
        #expect(summary["domains"] as? Int == 9_996)
        #expect(try monitor.get("/status?domain=d9998.example").status == 200)
        #expect(try monitor.get("/status?domain=d5000.example").status == 404)
    }
}
