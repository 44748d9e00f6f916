import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Development certificates for the integration tests, made once per test run with the
/// `openssl` command: a CA, `sites.crt`/`sites.key` for example.com and www.example.com, and a
/// certbot-layout `wild/` for *.example.org.
enum TestCertificates {
    static let directory: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-test-certs-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try! FileManager.default.createDirectory(at: dir.appendingPathComponent("wild"), withIntermediateDirectories: true)
        let script = """
        set -e
        cd '\(dir.path)'
        openssl ecparam -name prime256v1 -genkey -noout -out ca.key
        openssl req -x509 -new -key ca.key -sha256 -days 30 -subj '/CN=aasa test CA' -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign' -out ca.pem 2>/dev/null
        issue() {
          openssl ecparam -name prime256v1 -genkey -noout -out "$1.key"
          openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr" 2>/dev/null
          printf 'subjectAltName=%s\\nextendedKeyUsage=serverAuth\\n' "$3" > "$1.ext"
          openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -sha256 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
          rm -f "$1.csr" "$1.ext"
        }
        issue sites example.com 'DNS:example.com,DNS:www.example.com'
        issue wildcard '*.example.org' 'DNS:*.example.org'
        mv wildcard.crt wild/fullchain.pem; mv wildcard.key wild/privkey.pem
        issue replacement example.com 'DNS:example.com,DNS:www.example.com,DNS:new.example.com'
        chmod 600 *.key wild/privkey.pem
        """
        let r = try! Shell.run("/bin/bash", ["-c", script])
        precondition(r.status == 0, "making test certificates failed: \(r.stderr)")
        return dir
    }()

    static var caFile: String { directory.appendingPathComponent("ca.pem").path }
}

let exampleCom = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}, "webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#
let wwwExampleCom = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/"}]}]}}"#
let wildcardOrg = #"{"applinks": {"details": [{"appIDs": ["FGHIJ67890.org.example.reader"], "components": [{"/": "/articles/*"}]}]}}"#

/// A running `aasa serve` on ephemeral ports, with its own config and certs directories.
final class ServerProcess {
    let directory: TemporaryDirectory
    let process = Process()
    let https: Int
    let http: Int
    let admin: Int
    private let stderrBuffer: OutputBuffer
    private let stdoutBuffer: OutputBuffer

    let config: URL
    let certs: URL

    /// Fixed ports for the three listeners (a restarted instance behind a balancer), else 0.
    struct Ports {
        var https = 0
        var http = 0
        var admin = 0
    }

    /// - Parameters:
    ///   - readsAccessLog: false leaves the server's stdout a pipe that nobody reads.
    ///   - launcher: runs the binary through another command (`unshare`, a shell that sets a
    ///     limit first): the binary's path and arguments are appended to it.
    ///   - prepare: called with the config directory before the server starts.
    ///   - certificates: copy the test CA's key pairs into `certs/` (false: an empty `certs/`, as
    ///     a first start with `--acme` has).
    ///   - environment: variables set on top of the test runner's.
    ///   - reuse: the config and certs of an earlier instance, as they are (a restart).
    init(sites: [String: String] = ["example.com": exampleCom, "www.example.com": wwwExampleCom, "*.example.org": wildcardOrg],
         extraArguments: [String] = [], workers: Int = 2, ports: Ports = Ports(), dev: Bool = false,
         readsAccessLog: Bool = true, launcher: [String] = [], prepare: (URL) throws -> Void = { _ in },
         certificates: Bool = true, environment: [String: String] = [:], reuse: TemporaryDirectory? = nil,
         store: String? = nil) throws {
        directory = try reuse ?? TemporaryDirectory()
        config = directory.url.appendingPathComponent("config")
        certs = directory.url.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: config, withIntermediateDirectories: true)
        for (host, body) in sites where reuse == nil {
            try directory.write("config/\(host)/apple-app-site-association", body)
        }
        let fm = FileManager.default
        try fm.createDirectory(at: certs, withIntermediateDirectories: true)
        if !dev, certificates, reuse == nil {
            let source = TestCertificates.directory
            for file in ["sites.crt", "sites.key"] {
                try fm.copyItem(at: source.appendingPathComponent(file), to: certs.appendingPathComponent(file))
            }
            try fm.copyItem(at: source.appendingPathComponent("wild"), to: certs.appendingPathComponent("wild"))
            chmod(certs.appendingPathComponent("sites.key").path, 0o600)
        }

        try prepare(config)
        // With a store, its rows replace both folders (the folders are made all the same, unused).
        let sources = store.map { ["--store", $0] } ?? ["--config", config.path, "--certs", certs.path]
        let arguments = ["serve"] + sources + [
                         "--https", "127.0.0.1:\(ports.https)", "--http", "127.0.0.1:\(ports.http)", "--admin", "127.0.0.1:\(ports.admin)",
                         "--workers", "\(workers)"] + (dev ? ["--dev"] : []) + extraArguments
        if let command = launcher.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = Array(launcher.dropFirst()) + [AASABinary.url.path] + arguments
        } else {
            process.executableURL = AASABinary.url
            process.arguments = arguments
        }
        // No test server asks the real Apple CDN: a test that watches one names its fake with
        // --cdn-watch on (a flag wins over the variable).
        process.environment = ProcessInfo.processInfo.environment.merging(["AASA_CDN_WATCH": "off"].merging(environment) { $1 }) { $1 }
        let err = Pipe()
        let out = Pipe()
        process.standardError = err
        process.standardOutput = out
        stderrBuffer = OutputBuffer(err.fileHandleForReading)
        stdoutBuffer = readsAccessLog ? OutputBuffer(out.fileHandleForReading) : OutputBuffer()
        try process.run()
        let ready = stderrBuffer.wait(for: "ready:", timeout: 20)
        guard ready, let h = ServerProcess.port("https", in: stderrBuffer.text), let p = ServerProcess.port("http", in: stderrBuffer.text),
              let a = ServerProcess.port("admin", in: stderrBuffer.text) else {
            process.stop(grace: 5)
            throw HarnessError(description: "server did not start: \(stderrBuffer.text)")
        }
        https = h
        http = p
        admin = a
    }

    deinit {
        // A server that ignores SIGTERM (the bug under test) must not hang the test run.
        process.stop(grace: 15)
    }

    var log: String { stderrBuffer.text }
    var accessLog: String { stdoutBuffer.text }

    /// Waits until the server's event log contains `text`.
    func waitForLog(_ text: String, timeout: Double = 5) -> Bool { stderrBuffer.wait(for: text, timeout: timeout) }
    /// Waits until the access log contains `text`.
    func waitForAccessLog(_ text: String, timeout: Double = 5) -> Bool { stdoutBuffer.wait(for: text, timeout: timeout) }

    static func port(_ kind: String, in log: String) -> Int? {
        for line in log.split(separator: "\n") where line.contains("listening \(kind) ") {
            // The digits after the last colon: the end of a text line, or of a JSON log's message.
            if let colon = line.lastIndex(of: ":") { return Int(line[line.index(after: colon)...].prefix { $0.isNumber }) }
        }
        return nil
    }

    /// `curl` against the HTTPS listener, resolving `host` to 127.0.0.1 and trusting the test CA
    /// (or the CA given).
    func curlHTTPS(host: String, path: String = "/.well-known/apple-app-site-association", _ extra: [String] = [],
                   ca: String = TestCertificates.caFile) throws -> CommandResult {
        // HTTP/1.1 unless the test asks for HTTP/2: most tests read the HTTP/1.1 head.
        let version = extra.contains(where: { $0.hasPrefix("--http2") }) ? [] : ["--http1.1"]
        return try Shell.run("/usr/bin/curl", ["-sS", "-i", "--max-time", "10", "--cacert", ca] + version +
                             ["--resolve", "\(host):\(https):127.0.0.1", "https://\(host):\(https)\(path)"] + extra)
    }

    func admin(_ path: String) throws -> (status: Int, body: String) {
        let r = try RawHTTP.exchange(port: admin, "GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        return (RawHTTP.status(r) ?? 0, RawHTTP.body(r))
    }

    func status() throws -> [String: Any] {
        let body = try admin("/status").body
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as! [String: Any]
    }

    func site(_ host: String) throws -> [String: Any]? {
        (try status()["sites"] as? [[String: Any]])?.first { $0["host"] as? String == host }
    }

    /// Sends a signal and waits for the process to exit; returns its status, or nil on timeout.
    func stop(signal: Int32 = SIGTERM, timeout: Double = 15) -> Int32? {
        kill(process.processIdentifier, signal)
        return process.exitStatus(within: timeout)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
}

/// Collects a pipe's output on a background queue.
final class OutputBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()

    /// A buffer that reads nothing: its pipe is left full.
    init() {}

    init(_ handle: FileHandle) {
        handle.readabilityHandler = { [weak self] h in
            let chunk = h.availableData
            if chunk.isEmpty { h.readabilityHandler = nil; return }
            self?.lock.lock()
            self?.data.append(chunk)
            self?.lock.unlock()
        }
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: data, as: UTF8.self)
    }

    func wait(for needle: String, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if text.contains(needle) { return true }
            usleep(20_000)
        }
        return text.contains(needle)
    }
}

/// A port that was free a moment ago, below the kernel's ephemeral range (32768 and up), so
/// the client sockets other tests open in parallel cannot take it before it is used. Ports are
/// handed out in turn from a random start, never the same one twice in a run: two tests in
/// parallel once drew the same port, and the second server could not bind it.
func freePort() throws -> Int {
    for _ in 0..<100 {
        let port = PortSequence.next()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let ok = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if ok { return port }
    }
    throw HarnessError(description: "no free port between 20000 and 30000")
}

private enum PortSequence {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var last = Int.random(in: 0..<10_000)

    static func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        last = (last + 1) % 10_000
        return 20_000 + last
    }
}

enum Shell {
    static func run(_ executable: String, _ arguments: [String], input: String? = nil, timeout: Double = 300) throws -> CommandResult {
        try runCommand(URL(fileURLWithPath: executable), arguments, input: input.map { Data($0.utf8) }, timeout: timeout)
    }
}

/// HTTP over a plain TCP socket, byte for byte: for what curl will not send.
enum RawHTTP {
    /// Connects to 127.0.0.1:`port`.
    static func connect(port: Int, timeout: Double = 10) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HarnessError(description: "socket: \(errno)") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else { close(fd); throw HarnessError(description: "connect: \(errno)") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func send(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads until the server closes the connection (or the receive timeout passes).
    static func readToEnd(_ fd: Int32) -> (bytes: [UInt8], closed: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { out.append(contentsOf: buffer[0..<n]); continue }
            return (out, n == 0 || errno == ECONNRESET)
        }
    }

    /// Sends `request` and returns everything until the server closes.
    static func exchange(port: Int, _ request: String, timeout: Double = 10) throws -> String {
        try exchange(port: port, Array(request.utf8), timeout: timeout).text
    }

    static func exchange(port: Int, _ request: [UInt8], timeout: Double = 10) throws -> (text: String, closed: Bool) {
        let fd = try connect(port: port, timeout: timeout)
        defer { close(fd) }
        send(fd, request)
        let (bytes, closed) = readToEnd(fd)
        return (String(decoding: bytes, as: UTF8.self), closed)
    }

    /// The status of an HTTP/1.1 response, or of curl's rendering of an HTTP/2 one (`HTTP/2 200`).
    static func status(_ response: String) -> Int? {
        if response.hasPrefix("HTTP/2 ") { return Int(response.dropFirst(7).prefix(3)) }
        guard response.hasPrefix("HTTP/1.1 ") else { return nil }
        return Int(response.dropFirst(9).prefix(3))
    }

    static func statuses(_ responses: String) -> [Int] {
        responses.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }

    static func header(_ name: String, in response: String) -> String? {
        let head = response.components(separatedBy: "\r\n\r\n").first ?? ""
        for line in head.components(separatedBy: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    static func body(_ response: String) -> String {
        guard let range = response.range(of: "\r\n\r\n") else { return "" }
        return String(response[range.upperBound...])
    }
}
