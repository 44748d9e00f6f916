import ChildProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A loopback HTTP/1.1 server with scripted answers per path, for what `aasa serve` never
/// sends: redirects, HTML pages, wrong types, oversized or broken files, Apple's CDN with its
/// failure headers, and a server that accepts and never answers. One request per connection.
final class ScriptedServer: @unchecked Sendable {
    let port: Int
    private let fd: Int32
    /// The bytes sent back for a request: its head up to the blank line, and its body when
    /// Content-Length announces one.
    private let reply: @Sendable ([UInt8]) -> [UInt8]
    private let silent: Bool
    private let lock = NSLock()
    private var stopped = false
    private var held: [Int32] = []
    private var requestLog: [String] = []
    private let finished = DispatchSemaphore(value: 0)

    /// A whole response with `Content-Length` and `Connection: close`.
    static func response(_ status: String, _ headers: [String] = [], body: String = "") -> [UInt8] {
        let head = "HTTP/1.1 \(status)\r\n" + headers.map { $0 + "\r\n" }.joined() + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }

    /// - Parameters:
    ///   - routes: request path (without query) to the bytes sent back.
    ///   - silent: accept every connection and never read or answer (a hung server).
    convenience init(routes: [String: [UInt8]] = [:], fallback: [UInt8] = ScriptedServer.response("404 Not Found", body: "no"),
                     silent: Bool = false) throws {
        try self.init(silent: silent) { request in
            let line = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
            let target = line.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            return routes[String(target.prefix { $0 != "?" })] ?? fallback
        }
    }

    /// A server whose every answer `reply` makes from the request head; `backlog` for one that
    /// many clients reach at once (the CDN watch's checks).
    init(silent: Bool = false, backlog: Int32 = 64, reply: @escaping @Sendable ([UInt8]) -> [UInt8]) throws {
        self.reply = reply
        self.silent = silent
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var on: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard bound == 0, listen(s, backlog) == 0 else { close(s); throw HarnessError(description: "scripted server: bind/listen: \(errno)") }
        var local = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(s, $0, &length) } }
        fd = s
        port = Int(UInt16(bigEndian: local.sin_port))
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    deinit { stop() }

    /// The requests received (head and body), in order.
    var requests: [String] {
        lock.lock()
        defer { lock.unlock() }
        return requestLog
    }

    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        guard !wasStopped else { return }
        finished.wait()
        for c in held { close(c) }
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
            if silent {
                held.append(client)
                continue
            }
            answer(client)
            close(client)
        }
    }

    private func answer(_ client: Int32) {
        var tv = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        while request.count < 65536, headEnd == nil {
            let n = recv(client, &buffer, buffer.count, 0)
            if n <= 0 { return }
            request.append(contentsOf: buffer[0..<n])
            headEnd = request.endOfHead
        }
        // A body (`aasa site put`'s file) is read whole, as far as Content-Length says.
        if let headEnd {
            let length = min(request.contentLength(headEnd: headEnd), 16 * 1024 * 1024)
            while request.count < headEnd + length {
                let n = recv(client, &buffer, buffer.count, 0)
                if n <= 0 { return }
                request.append(contentsOf: buffer[0..<n])
            }
        }
        lock.lock()
        requestLog.append(String(decoding: request, as: UTF8.self))
        lock.unlock()
        let reply = reply(request)
        var offset = 0
        while offset < reply.count {
            let n = reply.withUnsafeBytes { send(client, $0.baseAddress! + offset, reply.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }
}

extension Array where Element == UInt8 {
    /// The offset just past the blank line that ends a request head, nil until it has come.
    fileprivate var endOfHead: Int? {
        guard count >= 4 else { return nil }
        for i in 0...(count - 4) where self[i] == 13 && self[i + 1] == 10 && self[i + 2] == 13 && self[i + 3] == 10 { return i + 4 }
        return nil
    }

    /// The head's Content-Length, 0 when it has none.
    fileprivate func contentLength(headEnd: Int) -> Int {
        let head = String(decoding: self[..<headEnd], as: UTF8.self)
        for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
        return 0
    }
}

/// haproxy terminating TLS in TCP mode in front of a ``ScriptedServer``: an HTTPS origin that
/// answers whatever the script says, with the certificate given.
final class TLSFront {
    let port: Int
    private let process = Process()
    private let directory: TemporaryDirectory

    init(backend: Int, certificatePEM: String) throws {
        directory = try TemporaryDirectory()
        port = try freePort()
        let pem = try directory.write("front.pem", certificatePEM)
        let config = """
        global
          maxconn 100
        defaults
          mode tcp
          timeout connect 2s
          timeout client 10s
          timeout server 10s
        frontend tls
          bind 127.0.0.1:\(port) ssl crt \(pem)
          default_backend origin
        backend origin
          server origin 127.0.0.1:\(backend)
        """
        let path = try directory.write("haproxy.cfg", config + "\n")
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/haproxy")
        process.arguments = ["-db", "-f", path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let fd = try? RawHTTP.connect(port: port, timeout: 1) {
                close(fd)
                return
            }
            usleep(50_000)
        }
        process.stop(grace: 5)
        throw HarnessError(description: "haproxy did not listen on \(port)")
    }

    deinit { process.stop(grace: 10) }
}

extension TestCertificates {
    /// A certificate and key (PEM, certificate first) from the test CA, for `names` (a
    /// subjectAltName list such as `DNS:example.com`), valid for `days` (negative: expired).
    static func issue(commonName: String, names: String, days: Int) throws -> String {
        let dir = try TemporaryDirectory()
        let script = """
        set -e
        cd '\(dir.url.path)'
        openssl ecparam -name prime256v1 -genkey -noout -out leaf.key
        openssl req -new -key leaf.key -subj '/CN=\(commonName)' -out leaf.csr 2>/dev/null
        printf 'subjectAltName=%s\\nextendedKeyUsage=serverAuth\\n' '\(names)' > leaf.ext
        openssl x509 -req -in leaf.csr -CA '\(caFile)' -CAkey '\(directory.appendingPathComponent("ca.key").path)' \
          -set_serial \(Int.random(in: 1000...999_999)) -days \(days) -sha256 -extfile leaf.ext -out leaf.crt 2>/dev/null
        cat leaf.crt leaf.key
        """
        let r = try Shell.run("/bin/bash", ["-c", script])
        guard r.status == 0 else { throw HarnessError(description: "issuing a certificate failed: \(r.stderr)") }
        return r.stdout
    }

    /// `sites.crt` and `sites.key` (example.com, www.example.com) as one PEM.
    static var sitesPEM: String {
        get throws {
            try String(contentsOf: directory.appendingPathComponent("sites.crt"), encoding: .utf8)
                + String(contentsOf: directory.appendingPathComponent("sites.key"), encoding: .utf8)
        }
    }
}
