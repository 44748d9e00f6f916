import AASACore
import AASAHTTP
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The monitor's admin endpoint: `/healthz`, `/readyz`, `/metrics`, `/status`. Deliberately
/// small (docs/monitor.md): one thread accepts and answers one connection at a time, HTTP/1.1
/// with `Connection: close`, a GET of at most 8 KiB of head read within 5 s. It is for a
/// scraper and an operator on a private address, not for the public; the serving stack of
/// `aasa serve` is not needed for that.
package final class MonitorAdmin: Sendable {
    let fd: Int32
    package let address: SocketAddress
    let monitor: Monitor

    package init(address: SocketAddress, monitor: Monitor) throws(SystemError) {
        (fd, self.address) = try Socket.listen(on: address, backlog: 64)
        self.monitor = monitor
    }

    /// Answers on a thread of its own until `stop` says so.
    package func start(stop: @escaping @Sendable () -> Bool) {
        let thread = startThread { [self] in
            while !stop() {
                var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&p, 1, 100) > 0 else { continue }
                guard case .accepted(let client, _) = Socket.accept(fd) else { continue }
                answer(client)
                close(client)
            }
        }
        pthread_detach(thread)
    }

    static let headLimit = 8 * 1024
    static let readMilliseconds: Int64 = 5000

    private func answer(_ client: Int32) {
        let deadline = monotonicMilliseconds() + MonitorAdmin.readMilliseconds
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.hasHeadEnd {
            let left = deadline - monotonicMilliseconds()
            guard left > 0, head.count < MonitorAdmin.headLimit else { return }
            var p = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, Int32(min(left, 1000))) >= 0 else { return }
            let n = read(client, &buffer, buffer.count)
            if n == 0 { return }
            if n < 0 {
                if errno == EAGAIN || errno == EINTR { continue }
                return
            }
            head += buffer[0..<n]
        }
        let requestLine = String(decoding: head.prefix { $0 != 0x0D && $0 != 0x0A }, as: UTF8.self)
        let parts = requestLine.split(separator: " ")
        let (status, type, body): (Int, String, String)
        if parts.count != 3 || !parts[2].hasPrefix("HTTP/1.") {
            (status, type, body) = (400, "text/plain", "bad request\n")
        } else if parts[0] != "GET" && parts[0] != "HEAD" {
            (status, type, body) = (405, "text/plain", "only GET\n")
        } else {
            (status, type, body) = respond(String(parts[1]))
        }
        let reason = [200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 503: "Service Unavailable"][status] ?? "Error"
        let bytes = Array(body.utf8)
        var out = Array("HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(type)\r\nContent-Length: \(bytes.count)\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n".utf8)
        if parts.first != "HEAD" { out += bytes }
        var sent = 0
        while sent < out.count, monotonicMilliseconds() < deadline + MonitorAdmin.readMilliseconds {
            let n = out[sent...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n > 0 { sent += n; continue }
            if n < 0, errno != EAGAIN, errno != EINTR { return }
            var p = pollfd(fd: client, events: Int16(POLLOUT), revents: 0)
            _ = poll(&p, 1, 1000)
        }
    }

    /// Status, content type and body for a GET of `target`.
    package func respond(_ target: String) -> (Int, String, String) {
        let (path, query) = MonitorAdmin.split(target)
        switch path {
        case "/healthz":
            return (200, "text/plain", "ok\n")
        case "/readyz":
            return monitor.state.withLock(\.ready) ? (200, "text/plain", "ready\n") : (503, "text/plain", "the domains file is not read yet\n")
        case "/metrics":
            return (200, "text/plain; version=0.0.4", monitor.state.withLock { MonitorReport.metrics($0) })
        case "/status":
            return status(query)
        default:
            return (404, "application/json", #"{"error":"not found"}"# + "\n")
        }
    }

    /// Pages as the server's `/status` pages sites: in byte order of host, `after` the last one
    /// shown, at most `limit` (1 to 1 000, default 1 000), `state=` on the origin's state,
    /// `domain=HOST` for one domain (404 when it is not watched).
    private func status(_ query: [String: String]) -> (Int, String, String) {
        var limit = 1000
        if let text = query["limit"] {
            guard let n = Int(text), (1...1000).contains(n) else {
                return (400, "application/json", #"{"error":"limit must be a whole number from 1 to 1000"}"# + "\n")
            }
            limit = n
        }
        var stateFilter: OriginState?
        if let text = query["state"] {
            guard let s = OriginState(rawValue: text) else {
                return (400, "application/json", #"{"error":"state must be ok, warn, failing or pending"}"# + "\n")
            }
            stateFilter = s
        }
        // The state's lock is held only to copy what the answer shows; the JSON (1.7 MB for a page
        // of 1 000 domains) is made outside it. Made under it, each page of 10 000 domains held up
        // the scheduler and the checks finishing, which take the same lock (docs/performance.md).
        if let host = query["domain"] {
            let name = URLParts.normalizeHost(host)
            let page = monitor.state.withLock { s in s.records[name] == nil ? nil : MonitorReport.page(s, listed: [name], next: nil) }
            guard let page else {
                var w = JSONWriter()
                w.beginObject(); w.key("error"); w.value("no domain \(name) is watched"); w.endObject()
                return (404, "application/json", w.output + "\n")
            }
            return (200, "application/json", MonitorReport.render(page) + "\n")
        }
        let after = query["after"]
        var hosts = monitor.state.withLock { s in
            s.records.compactMap { host, record in
                (after == nil || after!.utf8.lexicographicallyPrecedes(host.utf8)) && (stateFilter == nil || record.origin.state == stateFilter)
                    ? host : nil
            }
        }
        hosts.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        let listed = Array(hosts.prefix(limit))
        let page = monitor.state.withLock { MonitorReport.page($0, listed: listed, next: hosts.count > limit ? listed.last : nil) }
        return (200, "application/json", MonitorReport.render(page) + "\n")
    }

    static func split(_ target: String) -> (String, [String: String]) {
        guard let q = target.firstIndex(of: "?") else { return (target, [:]) }
        var query: [String: String] = [:]
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            query[percentDecoded(String(kv[0]))] = kv.count == 2 ? percentDecoded(String(kv[1])) : ""
        }
        return (String(target[..<q]), query)
    }

    static func percentDecoded(_ s: String) -> String {
        var out: [UInt8] = []
        var bytes = Array(s.utf8)[...]
        while let b = bytes.popFirst() {
            if b == UInt8(ascii: "%"), bytes.count >= 2, let v = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16) {
                out.append(v)
                bytes = bytes.dropFirst(2)
            } else {
                out.append(b == UInt8(ascii: "+") ? 0x20 : b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension [UInt8] {
    fileprivate var hasHeadEnd: Bool {
        guard count >= 4 else { return false }
        // A head ends at the first blank line; anything after it (a body) is not read.
        return indices.dropLast(3).contains { self[$0] == 0x0D && self[$0 + 1] == 0x0A && self[$0 + 2] == 0x0D && self[$0 + 3] == 0x0A }
    }
}
