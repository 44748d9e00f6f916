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

    private let server: ScriptedServer
    /// What the server's thread answers from and writes to, and the tests read.
    private let book = Book()

    var port: Int { server.port }

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
        let book = book
        server = try ScriptedServer(backlog: 256) { book.reply(to: $0) }
    }

    deinit { stop() }

    var base: String { "http://127.0.0.1:\(port)" }

    func answer(_ host: String, _ response: [UInt8]) {
        book.lock.lock()
        book.answers[host] = response
        book.lock.unlock()
    }

    var arrivals: [Arrival] {
        book.lock.lock()
        defer { book.lock.unlock() }
        return book.log
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

    func stop() { server.stop() }

    private final class Book: @unchecked Sendable {
        let lock = NSLock()
        var answers: [String: [UInt8]] = [:]
        var log: [Arrival] = []

        /// The host's answer, or the CDN's 404 for a host it has no copy of; every arrival logged.
        func reply(to request: [UInt8]) -> [UInt8] {
            let text = String(decoding: request, as: UTF8.self)
            let lines = text.split(separator: "\r\n")
            let path = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let agent = lines.first { $0.lowercased().hasPrefix("user-agent:") }.map { String($0.dropFirst(11)).trimmingCharacters(in: .whitespaces) } ?? ""
            let host = path.hasPrefix("/a/v1/") ? String(path.dropFirst(6)) : ""
            lock.lock()
            defer { lock.unlock() }
            log.append(Arrival(time: Date(), path: path, userAgent: agent))
            return answers[host] ?? ScriptedServer.response("404 Not Found", ["Apple-Failure-Reason: SWCERR00301 Timeout"], body: "")
        }
    }
}
