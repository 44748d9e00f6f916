import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// h2load (Debian `nghttp2-client`) over TLS while the site file is rewritten, and while the
/// server is told to stop (SPEC 3.9: graceful shutdown sends GOAWAY, finishes the streams in
/// flight, then closes).
@Suite struct ServeHTTP2LoadTests {
    @Test func noStreamFailsWhileTheSiteFileIsRewrittenTwentyTimes() throws {
        try #require(FileManager.default.isExecutableFile(atPath: h2loadPath), "h2load is missing: make test-deps installs nghttp2-client")
        let server = try ServerProcess(workers: 2)
        let file = server.config.appendingPathComponent("example.com/apple-app-site-association")
        // Twenty versions of different lengths, so the access log tells which were served.
        let versions = (1...20).map { appFile("/" + String(repeating: "v", count: $0)) }
        // Enough requests to outlast the twenty rewrites (about a second) on a quiet machine:
        // 50 000 took 0.65 s against the debug build, and the test then raced h2load.
        let requests = 200_000
        let load = try H2Load(["-n", "\(requests)", "-c", "16", "-m", "10", "-H", ":authority: example.com",
                               "https://127.0.0.1:\(server.https)/.well-known/apple-app-site-association"])
        #expect(ServerProcess.waitFor(timeout: 20) { server.accessLog.count(of: "HTTP/2.0\" 200") >= 500 }, "h2load did not start")
        for version in versions {
            try replace(file, version)
            usleep(30_000)
        }
        let stillRunning = !load.process.hasExited
        #expect(load.wait(timeout: 120), "h2load did not finish: \(load.output.text.suffix(400))")
        let summary = try #require(H2LoadSummary(load.output.text), "\(load.output.text.suffix(800))")
        #expect(summary.succeeded == requests && summary.failed == 0 && summary.errored == 0 && summary.timeout == 0,
                "\(summary.requestsLine)")
        #expect(summary.statusCodes == "\(requests) 2xx, 0 3xx, 0 4xx, 0 5xx", "\(summary.statusCodes)")
        // The rewrites happened under load, and were served as they came.
        #expect(stillRunning, "h2load finished before the twentieth rewrite: nothing was reloaded under load")
        #expect(ServerProcess.waitFor { RawHTTP.body(try server.curlHTTPS(host: "example.com", ["--http2"]).stdout) == versions.last! })
        let sizes = Set(server.accessLog.split(separator: "\n").filter { $0.contains("HTTP/2.0\" 200 ") }.compactMap {
            $0.components(separatedBy: "HTTP/2.0\" 200 ").last?.split(separator: " ").first.flatMap { Int($0) }
        })
        #expect(sizes.count >= 3, "served sizes during the run: \(sizes.sorted())")
        #expect(sizes.isSubset(of: Set(([exampleCom] + versions).map(\.utf8.count))), "\(sizes.sorted())")
        #expect(server.log.count(of: "reloaded:") >= 2)
        #expect(!server.process.hasExited)
    }

    @Test func sigtermDuringH2loadAnswersEveryStreamSentAndExitsZeroWithinTheGrace() throws {
        try #require(FileManager.default.isExecutableFile(atPath: h2loadPath), "h2load is missing: make test-deps installs nghttp2-client")
        let server = try ServerProcess(extraArguments: ["--shutdown-grace", "5"], workers: 2)
        let total = 1_000_000
        let load = try H2Load(["-n", "\(total)", "-c", "16", "-m", "10", "-H", ":authority: example.com",
                               "https://127.0.0.1:\(server.https)/.well-known/apple-app-site-association"])
        // Beside h2load, a client that knows which streams it put on the wire (Tests/h2/hostile.py,
        // over TLS and h2c): ten requests in flight until the first GOAWAY.
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        watcher.arguments = ["python3", AASABinary.packageRoot.appendingPathComponent("Tests/h2/hostile.py").path,
                             "--pid", "\(server.process.processIdentifier)", "--https", "\(server.https)", "--http", "\(server.http)",
                             "--ca", TestCertificates.caFile, "--shutdown-watch"]
        let pipe = Pipe()
        watcher.standardOutput = pipe
        watcher.standardError = pipe
        let watched = OutputBuffer(pipe.fileHandleForReading)
        try watcher.run()
        defer { watcher.stop(grace: 10) }
        #expect(ServerProcess.waitFor(timeout: 20) {
            server.accessLog.count(of: "\"h2load") >= 2000 && watched.text.contains("loaded tls") && watched.text.contains("loaded h2c")
        }, "h2load or the watcher did not start: \(watched.text)")

        let signalled = Date()
        let status = server.stop(signal: SIGTERM, timeout: 10)
        let exitedAfter = Date().timeIntervalSince(signalled)
        #expect(status == 0)
        #expect(exitedAfter < 5, "exited \(exitedAfter) s after SIGTERM, grace 5 s")

        // The watcher: every stream it sent was answered 200 in full under a final GOAWAY
        // NO_ERROR that names it, after the notice; none refused or reset; then the server closed.
        #expect(watcher.exitStatus(within: 30) == 0, "\(watched.text)")
        for transport in ["tls", "h2c"] {
            let verdict = watched.text.split(separator: "\n").first { $0.contains(" \(transport) graceful-shutdown: ") }
            #expect(verdict?.hasPrefix("PASS ") == true, "\(verdict ?? "no line"): \(watched.text)")
            #expect(verdict?.contains("GOAWAY NO_ERROR (last stream 2147483647) then GOAWAY NO_ERROR") == true)
        }

        // h2load's counts: "started" is what it handed to its nghttp2 session, "succeeded" a whole
        // 2xx/3xx response, "failed" every other request, "errored" those with no response. After
        // the GOAWAY notice h2load opens no new stream: the rest of the million are "failed" and
        // "errored" without being sent. Requests it queued in the same read that brought the notice
        // count as started, but nghttp2 never sends them (no new stream after GOAWAY): at most the
        // 16 x 10 it may have in flight.
        #expect(load.wait(timeout: 30), "h2load did not finish: \(load.output.text.suffix(400))")
        let summary = try #require(H2LoadSummary(load.output.text), "\(load.output.text.suffix(800))")
        #expect(summary.total == total)
        #expect(summary.succeeded > 0 && summary.started < total, "SIGTERM came mid-run: \(summary.requestsLine)")
        #expect(summary.started - summary.succeeded <= 16 * 10, "\(summary.requestsLine)")
        #expect(summary.failed == total - summary.succeeded && summary.errored == summary.failed && summary.timeout == 0,
                "no request failed with a response: \(summary.requestsLine)")
        #expect(summary.statusCodes == "\(summary.succeeded) 2xx, 0 3xx, 0 4xx, 0 5xx", "\(summary.statusCodes)")
        // The server logged exactly the responses h2load received: none lost in the close.
        #expect(ServerProcess.waitFor { server.accessLog.count(of: "\"h2load") == summary.succeeded },
                "\(server.accessLog.count(of: "\"h2load")) answers to h2load logged, \(summary.succeeded) received")
        print("h2load during SIGTERM: \(summary.requestsLine); watcher: \(watched.text.split(separator: "\n").filter { $0.hasPrefix("PASS") })")
    }
}

private let h2loadPath = "/usr/bin/h2load"

private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// Writes `text` to `path` through a temporary file and a rename, as deploy tools do.
private func replace(_ path: URL, _ text: String) throws {
    let tmp = path.deletingLastPathComponent().appendingPathComponent(".tmp-\(UUID().uuidString)")
    try Data(text.utf8).write(to: tmp)
    guard rename(tmp.path, path.path) == 0 else { throw HarnessError(description: "rename: \(errno)") }
}

/// h2load running in the background; stopped (by its own PID) if the test leaves it running.
private final class H2Load {
    let process = Process()
    let output: OutputBuffer

    init(_ arguments: [String]) throws {
        process.executableURL = URL(fileURLWithPath: h2loadPath)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        output = OutputBuffer(out.fileHandleForReading)
        try process.run()
    }

    deinit {
        process.stop(grace: 10)
    }

    /// Waits for h2load to exit, and for its last lines to be read.
    func wait(timeout: Double) -> Bool {
        if process.exitStatus(within: timeout) == nil { return false }
        return output.wait(for: "status codes:", timeout: 5)
    }
}

/// h2load's closing counts, from its lines
/// `requests: 1000 total, 1000 started, 1000 done, 990 succeeded, 10 failed, 10 errored, 0 timeout`
/// and `status codes: 990 2xx, 0 3xx, 0 4xx, 0 5xx`.
private struct H2LoadSummary {
    var total = 0, started = 0, done = 0, succeeded = 0, failed = 0, errored = 0, timeout = 0
    var requestsLine: String
    var statusCodes: String

    init?(_ output: String) {
        let lines = output.split(separator: "\n").map(String.init)
        guard let requests = lines.last(where: { $0.hasPrefix("requests: ") }),
              let codes = lines.last(where: { $0.hasPrefix("status codes: ") }) else { return nil }
        requestsLine = requests
        statusCodes = String(codes.dropFirst("status codes: ".count))
        var counts: [String: Int] = [:]
        for part in requests.dropFirst("requests: ".count).split(separator: ",") {
            let words = part.split(separator: " ")
            if words.count == 2, let n = Int(words[0]) { counts[String(words[1])] = n }
        }
        guard let total = counts["total"], let started = counts["started"], let done = counts["done"],
              let succeeded = counts["succeeded"], let failed = counts["failed"], let errored = counts["errored"],
              let timeout = counts["timeout"] else { return nil }
        (self.total, self.started, self.done, self.succeeded, self.failed, self.errored, self.timeout) =
            (total, started, done, succeeded, failed, errored, timeout)
    }
}

extension String {
    /// How many times `needle` occurs.
    func count(of needle: String) -> Int { components(separatedBy: needle).count - 1 }
}
