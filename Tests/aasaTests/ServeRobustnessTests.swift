import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private struct Hostile: Decodable {
    var name: String
    var request: String
    var status: Int
    var bytes: [UInt8] { request.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }
}

private let corpus: [Hostile] = {
    let url = AASABinary.packageRoot.appendingPathComponent("Tests/Fixtures/hostile-requests.json")
    return try! JSONDecoder().decode([Hostile].self, from: Data(contentsOf: url))
}()

private let okRequest = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"

@Suite struct ServeRobustnessTests {
    @Test func everyHostileRequestGetsItsStatusAndTheConnectionCloses() throws {
        let server = try ServerProcess(workers: 1)
        #expect(corpus.count >= 40)
        // The HTTP/2 preface on a plain listener is h2c (prior knowledge) while HTTP/2 is on:
        // ServeHTTP2Tests covers it.
        for hostile in corpus where !hostile.name.hasPrefix("HTTP/2 preface") {
            let (text, closed) = try RawHTTP.exchange(port: server.http, hostile.bytes, timeout: 5)
            #expect(RawHTTP.status(text) == hostile.status, "\(hostile.name): \(text.prefix(80))")
            #expect(closed, "\(hostile.name): the connection must close")
        }
        // Garbage before a TLS handshake, and a TLS record to the plain port.
        for garbage in [[UInt8](repeating: 0, count: 100), Array("\u{16}\u{03}\u{01}\u{00}\u{05}hello".utf8)] {
            _ = try RawHTTP.exchange(port: server.https, garbage, timeout: 5)
        }
        // The server still serves normal clients afterwards, on both listeners.
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, okRequest)) == 200)
        #expect(RawHTTP.status(try server.curlHTTPS(host: "example.com").stdout) == 200)
        #expect(try server.admin("/metrics").body.contains("aasa_tls_handshake_errors_total"))
        #expect(!server.process.hasExited)
    }

    @Test func slowClientsDoNotDelayOthersAndAreClosedByTheHeaderTimeout() throws {
        let server = try ServerProcess()
        let count = 500
        var slow: [Int32] = []
        for _ in 0..<count {
            let fd = try RawHTTP.connect(port: server.http, timeout: 1)
            slow.append(fd)
        }
        defer { for fd in slow { close(fd) } }
        let request = Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\n".utf8)
        let started = Date()
        var sent = 0
        var fastLatencies: [Double] = []
        // One byte a second on every slow connection, and a normal client in between.
        while Date().timeIntervalSince(started) < 13 {
            if sent < request.count, Date().timeIntervalSince(started) >= Double(sent) {
                for fd in slow { RawHTTP.send(fd, [request[sent]]) }
                sent += 1
            }
            let t = Date()
            let r = try RawHTTP.exchange(port: server.http, okRequest, timeout: 5)
            fastLatencies.append(Date().timeIntervalSince(t))
            #expect(RawHTTP.status(r) == 200)
            usleep(200_000)
        }
        #expect(fastLatencies.max()! < 1.0, "a normal client waited \(fastLatencies.max()!) s")
        // Every slow connection got a 408 and was closed.
        var timedOut = 0
        for fd in slow {
            var tv = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            let (bytes, closed) = RawHTTP.readToEnd(fd)
            if closed && String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 408") { timedOut += 1 }
        }
        #expect(timedOut == count)
    }

    @Test func overMaxConnectionsTheServerStopsAcceptingButKeepsServing() throws {
        let server = try ServerProcess(extraArguments: ["--max-connections", "5"], workers: 1)
        var held: [Int32] = []
        for _ in 0..<5 {
            // A first byte, so the kernel hands the connection over (TCP_DEFER_ACCEPT).
            let fd = try RawHTTP.connect(port: server.http, timeout: 2)
            RawHTTP.send(fd, Array("G".utf8))
            held.append(fd)
        }
        defer { for fd in held { close(fd) } }
        usleep(200_000)
        // A sixth connection is not accepted (it waits in the backlog): no answer yet.
        let waiting = try RawHTTP.connect(port: server.http, timeout: 0.7)
        defer { close(waiting) }
        RawHTTP.send(waiting, Array(okRequest.utf8))
        #expect(RawHTTP.readToEnd(waiting).bytes.isEmpty)
        // The held connections are still served.
        RawHTTP.send(held[0], Array(okRequest.utf8.dropFirst()))
        #expect(String(decoding: RawHTTP.readToEnd(held[0]).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        // That one closed; a slot is free and the waiting client gets its answer.
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(waiting, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        #expect(String(decoding: RawHTTP.readToEnd(waiting).bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
    }
}
