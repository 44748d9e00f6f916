import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--drain-delay` (docs/deployment.md, "Restarts that lose nothing"): after SIGTERM `/readyz`
/// answers 503 at once, while the listeners still accept and every request is answered, each
/// answer the last on its connection; a second signal skips what is left of the delay.
@Suite struct ServeDrainTests {
    private static let get = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\n\r\n"

    @Test func readyzTurns503AtOnceWhileRequestsAreStillAnsweredWithConnectionClose() throws {
        let server = try ServerProcess(extraArguments: ["--drain-delay", "3", "--shutdown-grace", "2"])
        // A keep-alive client that made one request and is idle when the signal comes.
        let keepAlive = try RawHTTP.connect(port: server.http, timeout: 5)
        defer { close(keepAlive) }
        RawHTTP.send(keepAlive, Array(Self.get.utf8))
        var first = [UInt8](repeating: 0, count: 4096)
        #expect(recv(keepAlive, &first, first.count, 0) > 0)
        let started = Date()
        kill(server.process.processIdentifier, SIGTERM)
        #expect(server.waitForLog("stopping: /readyz answers 503"))
        #expect(try server.admin("/readyz").status == 503)
        // The idle connection was not closed under its client: its next request is answered,
        // with Connection: close, and then the server closes it.
        usleep(300_000)
        RawHTTP.send(keepAlive, Array(Self.get.utf8))
        let (bytes, closed) = RawHTTP.readToEnd(keepAlive)
        let again = String(decoding: bytes, as: UTF8.self)
        #expect(RawHTTP.status(again) == 200)
        #expect(RawHTTP.header("Connection", in: again) == "close")
        #expect(closed)
        // New connections are still accepted and answered, each once.
        for _ in 0..<3 {
            let (text, closed) = try RawHTTP.exchange(port: server.http, Array(Self.get.utf8), timeout: 5)
            #expect(RawHTTP.status(text) == 200)
            #expect(RawHTTP.header("Connection", in: text) == "close")
            #expect(closed)
            #expect(try server.admin("/readyz").status == 503)
        }
        #expect(Date().timeIntervalSince(started) < 3, "the checks ran within the delay")
        #expect(!server.log.contains("draining: finishing"))
        // Then the delay ends: the listeners close, and the process ends within delay + grace.
        #expect(server.process.exitStatus(within: 6) == 0)
        #expect(Date().timeIntervalSince(started) >= 3)
        #expect(Date().timeIntervalSince(started) < 5.5)
    }

    @Test func http2GetsAGoAwayDuringTheDelayAndTheStreamInFlightCompletes() throws {
        let server = try ServerProcess(extraArguments: ["--drain-delay", "3", "--shutdown-grace", "2"])
        // The script sends the SIGTERM itself, once its stream is open.
        let r = try Shell.run("/usr/bin/env", ["python3", drainScript, "--port", "\(server.http)", "--pid", "\(server.process.processIdentifier)"],
                              timeout: 30)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        // The notice (last stream 2^31-1), the response of the stream in flight, the final
        // GOAWAY naming it, then the close: all within the delay.
        #expect(lines == ["goaway 2147483647 0", "response 1 200 \(exampleCom.utf8.count)", "goaway 1 0", "closed"], "\(r.stdout)\n\(server.log)")
        #expect(!server.log.contains("draining: finishing"))
        #expect(server.process.exitStatus(within: 8) == 0)
    }

    @Test func aSecondSignalSkipsWhatIsLeftOfTheDelay() throws {
        let server = try ServerProcess(extraArguments: ["--drain-delay", "60", "--shutdown-grace", "2"])
        let started = Date()
        kill(server.process.processIdentifier, SIGTERM)
        #expect(server.waitForLog("stopping: /readyz answers 503"))
        #expect(try server.admin("/readyz").status == 503)
        usleep(200_000)
        kill(server.process.processIdentifier, SIGINT)
        #expect(server.process.exitStatus(within: 10) == 0)
        #expect(Date().timeIntervalSince(started) < 5)
        #expect(server.log.contains("second signal: skipping the rest of the drain delay"))
    }

    @Test func aNegativeDelayIsBadUsage() throws {
        let r = try AASABinary.run(["serve", "--config", "/nonexistent", "--http", "127.0.0.1:0", "--drain-delay=-1"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("--drain-delay must be 0 or more"))
    }
}

private let drainScript = AASABinary.packageRoot.appendingPathComponent("Tests/h2/drain.py").path
