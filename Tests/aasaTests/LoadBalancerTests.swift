import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"

/// Debian's haproxy in front of two aasa instances, the way operators run it: once terminating
/// TLS and forwarding plain HTTP with PROXY v2, once passing TLS through in TCP mode with PROXY
/// v1. Clients connect from 127.0.0.2, the balancer from 127.0.0.1, so the logged address shows
/// which one the server believed.
/// Only `fetch` (which reads constants) is called from other threads.
final class Balanced: @unchecked Sendable {
    var instances: [ServerProcess]
    let ports: [ServerProcess.Ports]
    let haproxy = Process()
    let terminating: Int
    let passthrough: Int
    let directory: TemporaryDirectory
    private(set) var haproxyLog: OutputBuffer! = nil

    init() throws {
        ports = try (0..<2).map { _ in ServerProcess.Ports(https: try freePort(), http: try freePort(), admin: try freePort()) }
        instances = try ports.map { try ServerProcess(extraArguments: Balanced.arguments, ports: $0) }
        terminating = try freePort()
        passthrough = try freePort()
        directory = try TemporaryDirectory()
        let certs = TestCertificates.directory
        let pem = try String(contentsOf: certs.appendingPathComponent("sites.crt"), encoding: .utf8)
            + String(contentsOf: certs.appendingPathComponent("sites.key"), encoding: .utf8)
        let pemPath = try directory.write("haproxy.pem", pem)
        func servers(_ port: KeyPath<ServerProcess.Ports, Int>, _ proxy: String) -> String {
            ports.enumerated().map { i, p in
                "  server aasa\(i) 127.0.0.1:\(p[keyPath: port]) \(proxy) check port \(p.admin) inter 100 fall 1 rise 1"
            }.joined(separator: "\n")
        }
        let config = """
        global
          maxconn 2000
        defaults
          timeout connect 2s
          timeout client 10s
          timeout server 10s
          retries 3
          option redispatch
          option httpchk GET /readyz
        frontend terminating
          mode http
          bind 127.0.0.1:\(terminating) ssl crt \(pemPath)
          default_backend aasa_http
        backend aasa_http
          mode http
          retry-on all-retryable-errors
          \(servers(\.http, "send-proxy-v2"))
        frontend passthrough
          mode tcp
          bind 127.0.0.1:\(passthrough)
          default_backend aasa_tls
        backend aasa_tls
          mode tcp
          \(servers(\.https, "send-proxy"))
        """
        let configPath = try directory.write("haproxy.cfg", config + "\n")
        haproxy.executableURL = URL(fileURLWithPath: "/usr/sbin/haproxy")
        haproxy.arguments = ["-db", "-f", configPath]
        let err = Pipe()
        haproxy.standardOutput = FileHandle.nullDevice
        haproxy.standardError = err
        haproxyLog = OutputBuffer(err.fileHandleForReading)
        try haproxy.run()
        guard ServerProcess.waitFor(timeout: 10, { try self.fetch(.terminating).status == 200 && self.fetch(.passthrough).status == 200 }) else {
            throw HarnessError(description: "haproxy did not come up: \(haproxyLog.text) \((try? fetch(.terminating)).map { "\($0)" } ?? "")")
        }
    }

    deinit { stopAll() }

    /// A drain delay well above haproxy's check interval × fall (100 ms × 1): the balancer sees
    /// /readyz 503 and stops sending here before the listeners close (docs/deployment.md).
    static let arguments = ["--proxy-protocol", "--shutdown-grace", "5", "--drain-delay", "2"]

    /// haproxy and both instances, stopped now: a test calls it on its way out, since the last
    /// reference may be dropped by a worker thread only after the test process has ended (the
    /// processes were left running then).
    func stopAll() {
        haproxy.stop(grace: 10)
        for instance in instances { instance.process.stop(grace: 15) }
    }

    enum Mode { case terminating, passthrough }

    /// One request through the balancer with curl, from 127.0.0.2.
    func fetch(_ mode: Mode, host: String = "example.com") throws -> (status: Int, body: String) {
        let port = mode == .terminating ? terminating : passthrough
        let r = try Shell.run("/usr/bin/curl", ["-sS", "-i", "--max-time", "5", "--interface", "127.0.0.2", "--cacert", TestCertificates.caFile,
                                                "--resolve", "\(host):\(port):127.0.0.1", "https://\(host):\(port)\(wellKnown)"])
        // No status: curl's own message stands for the body, to say what failed.
        guard let status = RawHTTP.status(r.stdout) else { return (0, r.stderr) }
        return (status, RawHTTP.body(r.stdout))
    }

    /// `count` requests on one keep-alive connection through the balancer (curl opens a new one
    /// only when told `Connection: close`): each request's status, 0 for one that failed, and
    /// curl's messages.
    func fetchKeepingAlive(_ mode: Mode, count: Int) throws -> (statuses: [Int], errors: String) {
        let port = mode == .terminating ? terminating : passthrough
        let url = "https://example.com:\(port)\(wellKnown)"
        let r = try Shell.run("/usr/bin/curl", ["-sS", "--http1.1", "--max-time", "30", "--interface", "127.0.0.2", "--cacert", TestCertificates.caFile,
                                                "--resolve", "example.com:\(port):127.0.0.1", "-w", "%{http_code}\\n"]
                                               + Array(repeating: [url, "-o", "/dev/null"], count: count).flatMap { $0 })
        return (r.stdout.split(separator: "\n").map { Int($0) ?? 0 }, r.stderr)
    }

    /// SIGTERM one instance, wait for it to exit, start it again on the same ports.
    func restart(_ i: Int) throws {
        let status = instances[i].stop(signal: SIGTERM, timeout: 10)
        #expect(status == 0)
        instances[i] = try ServerProcess(extraArguments: Balanced.arguments, ports: ports[i])
    }
}

@Suite(.serialized) struct LoadBalancerTests {
    @Test func bothModesServeAndLogTheOriginalClient() throws {
        let lb = try Balanced()
        defer { lb.stopAll() }
        for mode in [Balanced.Mode.terminating, .passthrough] {
            for host in ["example.com", "www.example.com"] {
                let r = try lb.fetch(mode, host: host)
                #expect(r.status == 200)
                #expect(r.body == (host == "example.com" ? exampleCom : wwwExampleCom))
            }
        }
        let logs = { lb.instances.map(\.accessLog).joined() }
        #expect(ServerProcess.waitFor { logs().components(separatedBy: " 127.0.0.2 ").count - 1 >= 4 })
        #expect(!logs().contains(" 127.0.0.1 example.com"), "the balancer's own address must not be logged as the client")
        #expect(logs().contains(" 127.0.0.2 www.example.com \"GET \(wellKnown) HTTP/1.1\" 200 "))
    }

    /// With a drain delay, no request is lost: neither a new connection (the balancer stopped
    /// sending before the listeners closed) nor a keep-alive one (told `Connection: close`,
    /// never closed under its client).
    @Test func aRollingRestartUnderLoadLosesNoRequest() throws {
        let lb = try Balanced()
        defer { lb.stopAll() }
        final class Tally: @unchecked Sendable {
            let lock = NSLock()
            var ok = 0
            var failed: [String] = []
            var stop = false
        }
        let tally = Tally()
        let finished = DispatchSemaphore(value: 0)
        // Three clients opening a new connection per request, two keeping theirs alive.
        let oneShot = [Balanced.Mode.terminating, .passthrough, .passthrough].map { mode in
            Thread {
                defer { finished.signal() }
                for _ in 0..<2000 {
                    tally.lock.lock(); let stop = tally.stop; tally.lock.unlock()
                    if stop { return }
                    let r: (status: Int, body: String) = (try? lb.fetch(mode)) ?? (0, "")
                    tally.lock.lock()
                    if r.status == 200 && r.body == exampleCom { tally.ok += 1 } else { tally.failed.append("\(mode): \(r.status) \(r.body.prefix(200))") }
                    tally.lock.unlock()
                }
            }
        }
        let keepAlive = [Balanced.Mode.terminating, .passthrough].map { mode in
            Thread {
                defer { finished.signal() }
                for _ in 0..<2000 {
                    tally.lock.lock(); let stop = tally.stop; tally.lock.unlock()
                    if stop { return }
                    let r: (statuses: [Int], errors: String) = (try? lb.fetchKeepingAlive(mode, count: 20)) ?? ([], "curl did not run")
                    tally.lock.lock()
                    tally.ok += r.statuses.filter { $0 == 200 }.count
                    if r.statuses.count != 20 || r.statuses.contains(where: { $0 != 200 }) {
                        tally.failed.append("\(mode) keep-alive: \(r.statuses) \(r.errors.prefix(300))")
                    }
                    tally.lock.unlock()
                }
            }
        }
        let workers = oneShot + keepAlive
        workers.forEach { $0.start() }
        // The workers stop however the restarts end (each within one request).
        defer { tally.lock.lock(); tally.stop = true; tally.lock.unlock() }
        usleep(500_000)
        // Each replica restarted three times in turn, the other one serving meanwhile.
        for _ in 0..<3 {
            for i in 0..<2 {
                try lb.restart(i)
                usleep(500_000)
            }
        }
        tally.lock.lock(); tally.stop = true; tally.lock.unlock()
        for _ in workers { #expect(finished.wait(timeout: .now() + 60) == .success, "a worker did not stop") }
        tally.lock.lock(); defer { tally.lock.unlock() }
        #expect(tally.failed.isEmpty, "\(tally.failed.count) failed: \(tally.failed.prefix(5)); haproxy: \(lb.haproxyLog.text.suffix(2000)); instances: \(lb.instances.map { $0.log.suffix(3000) })")
        #expect(tally.ok > 100)
    }
}
