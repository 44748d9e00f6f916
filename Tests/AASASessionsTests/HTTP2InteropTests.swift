import AASAHTTP
import ChildProcess
import Foundation
import Synchronization
import Testing
@testable import AASASessions

/// `HTTP2Session` over real TCP, answered by a small poll(2) loop standing in for the event
/// loop, and spoken to by nghttp2's own command-line clients (`nghttp`, `h2load`, package
/// nghttp2-client) with prior knowledge (h2c).
private final class H2cTestServer: @unchecked Sendable {
    let port: UInt16
    private let listener: Int32
    private let stopping = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw POSIXError(.EADDRINUSE) }
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in run() }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        while !stopped.load(ordering: .relaxed) { usleep(1000) }
        close(listener)
    }

    private final class Client {
        let fd: Int32
        let clock: LoopClock
        /// Prepared once, as a site's bytes are.
        static let body = siteResponse(size: 20_000, for: HTTPRequest(method: .get, target: "/", path: "/", host: nil, version: .http2, keepAlive: true))
        let dispatch = FakeDispatch { Response(head: Client.body.head, body: Client.body.body, sendsBody: $0.method != .head) }
        let session: HTTP2Session
        var output = Output()

        init(fd: Int32, now: Int64) {
            self.fd = fd
            clock = LoopClock(now: now, wallSecond: Int(time(nil)))
            session = HTTP2Session(clock: clock, dispatch: dispatch)
            session.resume(output: &output)
        }
    }

    private func run() {
        var clients: [Int32: Client] = [:]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while !stopping.load(ordering: .relaxed) {
            var polls = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            for client in clients.values {
                var events: Int16 = 0
                if client.session.wantsInput(client.output) { events |= Int16(POLLIN) }
                if !client.output.isEmpty { events |= Int16(POLLOUT) }
                polls.append(pollfd(fd: client.fd, events: events, revents: 0))
            }
            _ = poll(&polls, nfds_t(polls.count), 20)
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            if polls[0].revents & Int16(POLLIN) != 0 {
                let fd = accept(listener, nil, nil)
                if fd >= 0 {
                    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                    clients[fd] = Client(fd: fd, now: now)
                }
            }
            for p in polls.dropFirst() {
                guard let client = clients[p.fd] else { continue }
                client.clock.now = now
                if p.revents & Int16(POLLIN | POLLHUP) != 0 {
                    let n = read(client.fd, &buffer, buffer.count)
                    if n > 0 {
                        buffer.withUnsafeBytes { client.session.receive(UnsafeRawBufferPointer(rebasing: $0[0..<n]), output: &client.output) }
                    } else if n == 0 {
                        client.session.peerClosed(output: &client.output)
                    }
                }
                while !client.output.isEmpty {
                    let n = client.output.buffer.withUnsafeBytes { write(client.fd, $0.baseAddress! + client.output.sent, $0.count - client.output.sent) }
                    guard n > 0 else { break }
                    client.output.sent += n
                    if client.output.isEmpty {
                        client.output.reset()
                        client.session.resume(output: &client.output)
                    }
                }
                if let deadline = client.session.deadline, now >= deadline { client.session.deadlineReached(output: &client.output) }
                if client.session.isClosing && client.output.isEmpty {
                    close(client.fd)
                    clients[client.fd] = nil
                }
            }
        }
        for fd in clients.keys { close(fd) }
        stopped.store(true, ordering: .relaxed)
    }
}

private func run(_ tool: String, _ arguments: [String]) throws -> String {
    let r = try runCommand(URL(fileURLWithPath: tool), arguments, timeout: 120)
    return r.stdout + r.stderr
}

@Suite(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/nghttp")
                && FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load")))
struct HTTP2InteropTests {
    @Test func nghttpGetsTheResponseOverH2c() throws {
        let server = try H2cTestServer()
        defer { server.stop() }
        let out = try run("/usr/bin/nghttp", ["-v", "-n", "--no-dep", "-H", "user-agent: nghttp",
                                              "http://127.0.0.1:\(server.port)/.well-known/apple-app-site-association"])
        #expect(out.contains(":status: 200"), "\(out)")
        #expect(out.contains("content-length: 20000"), "\(out)")
        #expect(out.contains("recv DATA frame <length=3616, flags=0x01"), "the last DATA frame ends the stream: \(out)")
    }

    @Test func h2loadGetsEveryAnswerOnConcurrentStreamsAndConnections() throws {
        let server = try H2cTestServer()
        defer { server.stop() }
        let out = try run("/usr/bin/h2load", ["-n", "20000", "-c", "4", "-m", "50",
                                              "http://127.0.0.1:\(server.port)/.well-known/apple-app-site-association"])
        #expect(out.contains("20000 succeeded, 0 failed, 0 errored"), "\(out)")
        #expect(out.contains("status codes: 20000 2xx"), "\(out)")
    }
}
