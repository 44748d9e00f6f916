import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"

@Suite struct ServeStartupTests {
    @Test func startedWithItsStandardDescriptorsClosedTheServerKeepsThemForItsLogs() throws {
        let directory = try TemporaryDirectory()
        let config = directory.url.appendingPathComponent("config")
        try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let (http, admin) = (try freePort(), try freePort())
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "exec 0<&- 1>&- 2>&-; exec \"$0\" \"$@\"", AASABinary.url.path, "serve",
                             "--config", config.path, "--http", "127.0.0.1:\(http)", "--admin", "127.0.0.1:\(admin)", "--workers", "2"]
        try process.run()
        defer { process.stop(signal: SIGKILL) }
        #expect(ServerProcess.waitFor(timeout: 10) {
            RawHTTP.status(try RawHTTP.exchange(port: admin, "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")) == 200
        })
        // 0, 1 and 2 are /dev/null, not the listeners or a client's socket.
        for fd in 0...2 {
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(process.processIdentifier)/fd/\(fd)")
            #expect(target == "/dev/null", "fd \(fd) is \(target ?? "closed")")
        }
        // Keep-alive and new connections alike get the file, and nothing else.
        let fd = try RawHTTP.connect(port: http)
        defer { close(fd) }
        for i in 0..<20 {
            let request = "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\n" + (i == 19 ? "Connection: close\r\n" : "") + "\r\n"
            RawHTTP.send(fd, Array(request.utf8))
            let single = try RawHTTP.exchange(port: http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
            #expect(RawHTTP.status(single) == 200 && RawHTTP.body(single) == exampleCom)
        }
        let responses = String(decoding: RawHTTP.readToEnd(fd).bytes, as: UTF8.self)
        #expect(RawHTTP.statuses(responses) == Array(repeating: 200, count: 20))
        #expect(responses.components(separatedBy: exampleCom).count == 21)
        #expect(!responses.contains("GET \(wellKnown)"), "no access log line in a response")
        kill(process.processIdentifier, SIGTERM)
        #expect(process.exitStatus(within: 10) == 0)
    }

    @Test func withoutDescriptorsForItsSignalsTheServerFailsAtStartAndSaysWhy() throws {
        let directory = try TemporaryDirectory()
        let config = directory.url.appendingPathComponent("config")
        try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let http = try freePort()
        // Descriptors 0-2 and the listener leave none for signalfd(2): the soft and hard limit
        // is 4, so the server cannot raise it.
        let r = try Shell.run("/bin/bash", ["-c", "ulimit -n 4; exec \"$0\" \"$@\"", AASABinary.url.path, "serve",
                                            "--config", config.path, "--http", "127.0.0.1:\(http)", "--admin", "off", "--workers", "1"])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("signalfd: Too many open files"), "\(r.stderr)")
    }
}
