import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Limits that protect the server from one client and from the process's own descriptor limit.
@Suite struct ServeLimitsTests {
    static let get = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"

    @Test func oneAddressAtItsLimitDoesNotLockOthersOut() throws {
        let server = try ServerProcess(extraArguments: ["--max-connections-per-client", "3"], workers: 1)
        // 127.0.0.1 holds its three connections (each has sent part of a request, so the
        // kernel has handed it to the server).
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<3 {
            let fd = try RawHTTP.connect(port: server.http, timeout: 3)
            RawHTTP.send(fd, Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\n".utf8))
            held.append(fd)
        }
        usleep(200_000)
        // A fourth from the same address is closed at once, unanswered.
        let (fourth, closed) = try RawHTTP.exchange(port: server.http, Array(Self.get.utf8), timeout: 3)
        #expect(fourth.isEmpty)
        #expect(closed)
        // Another address is served at once.
        let start = Date()
        let other = try Shell.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "--interface", "127.0.0.2",
                                                    "-H", "Host: example.com", "http://127.0.0.1:\(server.http)/.well-known/apple-app-site-association"])
        #expect(other.stdout == "200", "\(other.stderr)")
        #expect(Date().timeIntervalSince(start) < 2)
        // The held connections still get their answers.
        RawHTTP.send(held[0], Array("Host: example.com\r\nConnection: close\r\n\r\n".utf8))
        #expect(RawHTTP.status(String(decoding: RawHTTP.readToEnd(held[0]).bytes, as: UTF8.self)) == 200)
        // Once one closes, the address may connect again.
        usleep(200_000)
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.get, timeout: 3)) == 200)
    }

    @Test func aPlainHTTPListenerHasNoPerClientLimitUnlessAsked() throws {
        let server = try ServerProcess(workers: 1)
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<300 {
            let fd = try RawHTTP.connect(port: server.http, timeout: 3)
            RawHTTP.send(fd, Array("GET / HTTP/1.1\r\n".utf8))
            held.append(fd)
        }
        // More than the HTTPS default of 256 from one address, and still served.
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.get, timeout: 5)) == 200)
    }

    @Test func runningOutOfDescriptorsPausesAcceptingInsteadOfSpinning() throws {
        // The server raises its soft limit to the hard one: set both low.
        let directory = try TemporaryDirectory()
        _ = try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", "ulimit -n 48 && exec \"$0\" serve --config \"$1\" --http 127.0.0.1:0 --admin off --workers 1",
                             AASABinary.url.path, directory.url.appendingPathComponent("config").path]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        let log = OutputBuffer(err.fileHandleForReading)
        try process.run()
        defer { process.stop(grace: 15) }
        #expect(log.wait(for: "ready:", timeout: 20))
        let port = try #require(ServerProcess.port("http", in: log.text))
        // More connections than descriptors: the rest wait in the backlog.
        var held: [Int32] = []
        for _ in 0..<80 {
            guard let fd = try? RawHTTP.connect(port: port, timeout: 2) else { break }
            RawHTTP.send(fd, Array("GET / HTTP/1.1\r\n".utf8))
            held.append(fd)
        }
        #expect(log.wait(for: "not accepting", timeout: 5), "\(log.text)")
        // While they stay open, the server sleeps rather than spinning on the listener.
        let before = try cpuTicks(process.processIdentifier)
        usleep(2_000_000)
        let used = try cpuTicks(process.processIdentifier) - before
        #expect(used < 50, "\(used) ticks of CPU in 2 s while out of descriptors")
        // Descriptors free: service resumes for a new client.
        for fd in held { close(fd) }
        #expect(ServerProcess.waitFor(timeout: 10) { RawHTTP.status(try RawHTTP.exchange(port: port, Self.get, timeout: 3)) == 200 })
    }

    /// User plus system CPU time of a process, in clock ticks (usually 100 a second).
    private func cpuTicks(_ pid: Int32) throws -> Int {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
        return Int(fields[11])! + Int(fields[12])!
    }
}

/// Connections that never speak must cost what an idle plain one does (issue: TLS state made at
/// accept cost about 34 KB each).
@Suite struct SilentConnectionTests {
    @Test func silentTLSConnectionsCostLittleMemory() throws {
        let server = try ServerProcess(extraArguments: ["--max-connections-per-client", "0"], workers: 1)
        let pid = server.process.processIdentifier
        // Warm up: a handshake and a request, so lazily made state is already there.
        #expect(RawHTTP.status(try server.curlHTTPS(host: "example.com").stdout) == 200)
        let before = try residentKilobytes(pid)
        var held: [Int32] = []
        defer { for fd in held { close(fd) } }
        for _ in 0..<800 { held.append(try RawHTTP.connect(port: server.https, timeout: 2)) }
        // TCP_DEFER_ACCEPT holds silent connections back for a few seconds, then hands them over.
        #expect(ServerProcess.waitFor(timeout: 20) {
            try server.admin("/metrics").body.contains("aasa_open_connections 800")
        })
        let after = try residentKilobytes(pid)
        let perConnection = Double(after - before) * 1024 / 800
        #expect(perConnection < 8_000, "\(Int(perConnection)) bytes per silent TLS connection")
    }

    private func residentKilobytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }!
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])!
    }
}
