import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport
@testable import AASASessions

/// The loop in process, with timeouts in milliseconds: what the black-box tests wait seconds
/// for takes a fraction of one here.
@Suite struct EventLoopTests {
    static let get = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\n\r\n"

    @Test func servesTheFileOverARealSocket() throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }
        client.send(Self.get)
        let (text, _) = client.receive { $0.contains("ABCDE12345") }
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(text.contains("Content-Type: application/json\r\n"))
    }

    @Test func anIncompleteHeadIsAnswered408WithinTheHeaderTimeout() throws {
        var http1 = HTTP1Configuration()
        http1.headerTimeout = 150
        let server = try InProcessServer(http1: http1)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }
        let start = monotonicMilliseconds()
        client.send("GET / HTTP/1.1\r\nHost: exa")
        let (text, closed) = client.receive()
        let elapsed = monotonicMilliseconds() - start
        #expect(text.hasPrefix("HTTP/1.1 408 "))
        #expect(closed)
        #expect(elapsed >= 150)
        #expect(elapsed < 2_000)
    }

    @Test func anIdleKeepAliveConnectionIsClosedAfterTheIdleTimeout() throws {
        var http1 = HTTP1Configuration()
        http1.idleTimeout = 200
        let server = try InProcessServer(http1: http1)
        defer { server.stop() }
        let client = try TestClient(port: server.port)
        defer { client.close() }
        client.send(Self.get)
        let start = monotonicMilliseconds()
        let (text, closed) = client.receive()
        #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(closed)
        #expect(monotonicMilliseconds() - start < 2_000)
    }

    @Test func manyIdleConnectionsWaitOnTheirOwnDeadlines() throws {
        var http1 = HTTP1Configuration()
        http1.idleTimeout = 300
        let server = try InProcessServer(http1: http1)
        defer { server.stop() }
        // Connections opened at different times each close at their own deadline, not in one
        // sweep: the first is gone while the last one still answers.
        let first = try TestClient(port: server.port)
        first.send(Self.get)
        _ = first.receive { $0.contains("ABCDE12345") }
        usleep(200_000)
        let second = try TestClient(port: server.port)
        second.send(Self.get)
        _ = second.receive { $0.contains("ABCDE12345") }
        let (_, firstClosed) = first.receive()
        #expect(firstClosed)
        second.send(Self.get)
        let (again, _) = second.receive { $0.contains("ABCDE12345") }
        #expect(again.hasPrefix("HTTP/1.1 200 OK"))
        first.close()
        second.close()
    }

    @Test func drainingAnswersARequestOnItsWayAndThenStops() throws {
        let server = try InProcessServer()
        let client = try TestClient(port: server.port)
        client.send("GET /.well-known/apple-app-site-association HTTP/1.1\r\n")
        usleep(50_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + 0.1) {
            client.send("Host: example.com\r\n\r\n")
        }
        // The drain runs to its end here: the request's rest arrives meanwhile, and its answer
        // waits in the client's socket.
        server.stop()
        let (text, closed) = client.receive()
        #expect(text.hasPrefix("HTTP/1.1 200 OK"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(closed)
        client.close()
    }

    @Test func snapshotsPublishedWhileServingAreSeenWhole() throws {
        let server = try InProcessServer()
        defer { server.stop() }
        let builder = SnapshotBuilder(configDirectory: server.configDirectory, certsDirectory: nil, defaultCertificate: nil,
                                      cacheControl: "no-cache", usesTLS: false, log: Log(minimum: .error))
        let done = Locked(false)
        let (state, configDirectory) = (server.state, server.configDirectory)
        // Reloads on another thread, as the control thread does, each a whole new snapshot.
        let reloader = startThread {
            var previous: SiteSnapshot? = nil
            for i in 0..<200 where !done.withLock({ $0 }) {
                let document = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.v\#(i)"], "components": [{"/": "/*"}]}]}}"#
                try? document.write(toFile: configDirectory + "/example.com/apple-app-site-association", atomically: true, encoding: .utf8)
                let next = builder.build(previous: previous)
                state.snapshots.publish(next)
                previous = next
            }
        }
        var answered = 0
        for _ in 0..<100 {
            let client = try TestClient(port: server.port)
            client.send(Self.get)
            let (text, _) = client.receive { $0.hasSuffix("}]}]}}") }
            client.close()
            // Every response is one whole version: its length matches its body.
            if text.hasPrefix("HTTP/1.1 200 OK"), let length = text.components(separatedBy: "Content-Length: ").dropFirst().first?.prefix(while: \.isNumber),
               let n = Int(length), let body = text.components(separatedBy: "\r\n\r\n").last, body.utf8.count == n {
                answered += 1
            }
        }
        done.withLock { $0 = true }
        pthread_join(reloader, nil)
        #expect(answered == 100)
    }

    @Test func timerHeapReturnsEntriesInTimeOrder() {
        var heap = TimerHeap()
        let times: [Int64] = [50, 10, 40, 10, 30, 20, 60, 0]
        for (i, t) in times.enumerated() { heap.push(.init(time: t, fd: Int32(i), serial: 0)) }
        #expect(heap.popDue(-1) == nil)
        var out: [Int64] = []
        while let e = heap.popDue(45) { out.append(e.time) }
        #expect(out == [0, 10, 10, 20, 30, 40])
        #expect(heap.next == 50)
        #expect(heap.count == 2)
    }
}
