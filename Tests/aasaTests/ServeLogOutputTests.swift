import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"

/// `count` pipelined requests on one connection, the last one asking to close; `padding`
/// query bytes make each access log line that much longer.
private func pipelined(_ count: Int, padding: Int = 0) -> [UInt8] {
    let target = wellKnown + (padding > 0 ? "?" + String(repeating: "p", count: padding) : "")
    var text = ""
    for i in 0..<count {
        text += "GET \(target) HTTP/1.1\r\nHost: example.com\r\n" + (i == count - 1 ? "Connection: close\r\n" : "") + "\r\n"
    }
    return Array(text.utf8)
}

private func metric(_ name: String, in metrics: String) -> Int? {
    for line in metrics.split(separator: "\n") where line.hasPrefix(name + " ") {
        return Int(line.dropFirst(name.count + 1))
    }
    return nil
}

@Suite struct ServeLogOutputTests {
    @Test func aStdoutNobodyReadsStallsNeitherRequestsNorShutdown() throws {
        let server = try ServerProcess(extraArguments: ["--shutdown-grace", "3"], readsAccessLog: false)
        // 4 000 requests with 2 KB lines make 8 MB of access log: more than the pipe and the
        // server's buffer hold together.
        var answered = 0
        for batch in 0..<40 {
            let (text, _) = try RawHTTP.exchange(port: server.http, pipelined(100, padding: 2000), timeout: 5)
            let statuses = RawHTTP.statuses(text)
            #expect(statuses.count == 100 && statuses.allSatisfy { $0 == 200 }, "batch \(batch): \(statuses.count) answers")
            answered += statuses.filter { $0 == 200 }.count
            if statuses.count != 100 { break }
        }
        #expect(answered == 4000)
        #expect(try server.admin("/healthz").status == 200)
        let dropped = metric("aasa_log_lines_dropped_total", in: try server.admin("/metrics").body)
        #expect((dropped ?? 0) > 0, "the lines that did not fit are counted")
        #expect((try server.status()["logLinesDropped"] as? Int ?? 0) > 0)
        #expect(server.waitForLog("stdout is not being read"), "dropping is reported once on stderr")
        #expect(server.log.components(separatedBy: "stdout is not being read").count == 2)
        let started = Date()
        #expect(server.stop(signal: SIGTERM, timeout: 6) == 0)
        #expect(Date().timeIntervalSince(started) < 3.5, "the final flush gives up within the grace")
    }

    @Test func aStdoutThatIsReadGetsEveryLineAndNoneIsDropped() throws {
        // The pipe is read from the start: nothing is dropped, and every line arrives.
        let server = try ServerProcess(workers: 1)
        let (text, _) = try RawHTTP.exchange(port: server.http, pipelined(500), timeout: 5)
        #expect(RawHTTP.statuses(text).count == 500)
        #expect(ServerProcess.waitFor { server.accessLog.split(separator: "\n").count == 500 })
        #expect(metric("aasa_log_lines_dropped_total", in: try server.admin("/metrics").body) == 0)
        #expect(!server.log.contains("not being read"))
    }
}
