import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct ServeShutdownTests {
    @Test func sigtermFinishesTheRequestInFlightAndExitsZero() throws {
        let server = try ServerProcess(extraArguments: ["--shutdown-grace", "5"])
        // A request whose head is half sent when the signal arrives.
        let inFlight = try RawHTTP.connect(port: server.http, timeout: 5)
        defer { close(inFlight) }
        RawHTTP.send(inFlight, Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: exa".utf8))
        // An idle keep-alive connection, which is closed at once.
        let idle = try RawHTTP.connect(port: server.http, timeout: 5)
        defer { close(idle) }
        RawHTTP.send(idle, Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8))
        usleep(200_000)
        let started = Date()
        kill(server.process.processIdentifier, SIGTERM)
        #expect(server.waitForLog("draining"))
        #expect(try server.admin("/readyz").status == 503)
        let (idleBytes, idleClosed) = RawHTTP.readToEnd(idle)
        #expect(String(decoding: idleBytes, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        #expect(idleClosed)
        // New connections are refused at once.
        #expect(throws: HarnessError.self) { try RawHTTP.connect(port: server.http) }
        RawHTTP.send(inFlight, Array("mple.com\r\n\r\n".utf8))
        let (bytes, closed) = RawHTTP.readToEnd(inFlight)
        let response = String(decoding: bytes, as: UTF8.self)
        #expect(RawHTTP.status(response) == 200)
        #expect(RawHTTP.header("Connection", in: response) == "close")
        #expect(closed)
        #expect(server.stop(signal: 0, timeout: 5) == 0)
        #expect(Date().timeIntervalSince(started) < 5)
    }

    @Test func aClientThatNeverFinishesCannotHoldTheProcessPastTheGrace() throws {
        let server = try ServerProcess(extraArguments: ["--shutdown-grace", "1"])
        let stuck = try RawHTTP.connect(port: server.http, timeout: 5)
        defer { close(stuck) }
        RawHTTP.send(stuck, Array("GET / HTTP/1.1\r\n".utf8))
        usleep(100_000)
        let started = Date()
        #expect(server.stop(signal: SIGTERM, timeout: 5) == 0)
        #expect(Date().timeIntervalSince(started) < 2.5)
    }
}
