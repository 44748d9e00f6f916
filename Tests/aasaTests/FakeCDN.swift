import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Apple's CDN on loopback, for the server's CDN watch: an answer per host that a test may
/// change at any time, and every request's arrival time, path and User-Agent. Plain HTTP; a
/// ``TLSFront`` in front of it makes it HTTPS with a certificate from the test CA.
final class FakeCDN: @unchecked Sendable {
    struct Arrival {
        var time: Date
        var path: String
        var userAgent: String
    }

    let port: Int
    private let fd: Int32
    private let lock = NSLock()
    private var answers: [String: [UInt8]] = [:]
    private var log: [Arrival] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    /// A 200 as the CDN sends a good copy: cached 6 hours, with `Age` and `Apple-From`.
    static func copy(_ body: String, age: Int = 120) -> [UInt8] {
        ScriptedServer.response("200 OK", ["Content-Type: application/json", "Cache-Control: max-age=21600", "Age: \(age)",
                                           "Apple-From: https://origin.example/.well-known/apple-app-site-association"], body: body)
    }

    /// The CDN's 404 when Apple's fetcher was refused: cached 1 hour, the reason in headers.
    static func refused(reason: String = "SWCERR00101 Bad HTTP Response: 403 Forbidden",
                        details: String = "Origin answered 403 \"Forbidden\"") -> [UInt8] {
        ScriptedServer.response("404 Not Found", ["Cache-Control: max-age=3600", "Apple-Failure-Reason: \(reason)",
                                                  "Apple-Failure-Details: \(details)"], body: "Not Found")
    }

    init() throws {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var on: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(s, 256) == 0 else { close(s); throw HarnessError(description: "fake CDN: bind/listen: \(errno)") }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) } }
        fd = s
        port = Int(UInt16(bigEndian: local.sin_port))
        Thread { [self] in serve() }.start()
    }

    deinit { stop() }

    var base: String { "http://127.0.0.1:\(port)" }

    func answer(_ host: String, _ response: [UInt8]) {
        lock.lock()
        answers[host] = response
        lock.unlock()
    }

    var arrivals: [Arrival] {
        lock.lock()
        defer { lock.unlock() }
        return log
    }

    func arrivals(for host: String) -> [Arrival] { arrivals.filter { $0.path == "/a/v1/\(host)" } }

    /// Waits until `host` has been asked `count` times.
    func wait(for host: String, count: Int = 1, timeout: Double = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if arrivals(for: host).count >= count { return true }
            usleep(20_000)
        }
        return false
    }

    /// The most requests that arrived within any one second.
    var busiestSecond: Int {
        let times = arrivals.map(\.time).sorted()
        var most = 0
        for (i, t) in times.enumerated() {
            most = max(most, times[i...].prefix { $0.timeIntervalSince(t) < 1 }.count)
        }
        return most
    }

    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        guard !wasStopped else { return }
        finished.wait()
        close(fd)
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func serve() {
        defer { finished.signal() }
        while !isStopped {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, 50) > 0 else { continue }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { continue }
            answer(client)
            close(client)
        }
    }

    private func answer(_ client: Int32) {
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        while request.count < 65536, !(request.count >= 4 && Array(request.suffix(4)) == end) {
            let n = recv(client, &buffer, buffer.count, 0)
            if n <= 0 { return }
            request.append(contentsOf: buffer[0..<n])
        }
        let text = String(decoding: request, as: UTF8.self)
        let lines = text.split(separator: "\r\n")
        let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
        let agent = lines.first { $0.lowercased().hasPrefix("user-agent:") }.map { String($0.dropFirst(11)).trimmingCharacters(in: .whitespaces) } ?? ""
        let host = path.hasPrefix("/a/v1/") ? String(path.dropFirst(6)) : ""
        lock.lock()
        log.append(Arrival(time: Date(), path: path, userAgent: agent))
        let reply = answers[host] ?? ScriptedServer.response("404 Not Found", ["Apple-Failure-Reason: SWCERR00301 Timeout"], body: "")
        lock.unlock()
        var offset = 0
        while offset < reply.count {
            let n = reply.withUnsafeBytes { send(client, $0.baseAddress! + offset, reply.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }
}
