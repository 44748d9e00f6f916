import Foundation
import TestCertificates
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport
@testable import AASASessions

let exampleDocument = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#

/// One event loop in this process on an ephemeral port, over a config directory of its own,
/// with whatever timeouts a test needs. Stopped by draining, as the server stops.
final class InProcessServer {
    let state: ServerState
    /// Wakes the loop, which its thread alone touches.
    let waker: EventFD
    let port: Int
    private let listener: Listener
    private var thread: pthread_t?
    let configDirectory: String

    init(kind: ListenerKind = .http, sites: [String: String] = ["example.com": exampleDocument],
         transport: TransportConfiguration = TransportConfiguration(), http1: HTTP1Configuration = HTTP1Configuration(),
         maxConnections: Int = 1000) throws {
        configDirectory = NSTemporaryDirectory() + "aasa-inprocess-\(getpid())-\(UUID().uuidString)"
        for (host, body) in sites {
            try FileManager.default.createDirectory(atPath: configDirectory + "/" + host, withIntermediateDirectories: true)
            try body.write(toFile: configDirectory + "/" + host + "/apple-app-site-association", atomically: true, encoding: .utf8)
        }
        let builder = SnapshotBuilder(configDirectory: configDirectory, certsDirectory: kind == .https ? TestPKI.certsDirectory : nil,
                                      defaultCertificate: nil, cacheControl: "no-cache", usesTLS: kind == .https,
                                      log: Log(minimum: .error))
        state = ServerState(snapshot: builder.build(previous: nil), loops: 1, maxConnections: maxConnections,
                            shutdownGraceMilliseconds: 2_000)
        let (fd, address) = try Socket.listen(on: SocketAddress(parsing: "127.0.0.1:0"))
        listener = Listener(fd: fd, kind: kind, address: address)
        port = address.port
        let loop = try EventLoop(id: 0, state: state, listeners: [listener], transport: transport, http1: http1,
                                 log: Log(minimum: .error), accessLogFormat: .text)
        waker = loop.waker
        thread = startThread { loop.run() }
        state.ready.store(true, ordering: .releasing)
    }

    func stop() {
        guard let thread else { return }
        // As the server stops: a drain without delay, run to its end on this thread.
        DrainConductor(state: state, wakers: [waker], log: Log(minimum: .error))
            .run(delay: 0, grace: state.shutdownGraceMilliseconds) { timeout in usleep(UInt32(timeout) * 1000); return false }
        pthread_join(thread, nil)
        self.thread = nil
        close(listener.fd)
        try? FileManager.default.removeItem(atPath: configDirectory)
    }

    deinit { stop() }
}

/// A blocking loopback client socket with a receive time-out.
struct TestClient {
    let fd: Int32

    init(port: Int, timeoutMilliseconds: Int = 3_000) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
        let r = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard r == 0 else { Glibc.close(fd); throw SystemError("connect", errno: errno) }
        var tv = timeval(tv_sec: timeoutMilliseconds / 1000, tv_usec: (timeoutMilliseconds % 1000) * 1000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.send(fd, &bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// Reads until the peer closes, the time-out passes, or `until` holds for what was read.
    func receive(until: (String) -> Bool = { _ in false }) -> (text: String, closed: Bool) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n == 0 { return (String(decoding: out, as: UTF8.self), true) }
            if n < 0 { return (String(decoding: out, as: UTF8.self), false) }
            out.append(contentsOf: buffer[0..<n])
            if until(String(decoding: out, as: UTF8.self)) { return (String(decoding: out, as: UTF8.self), false) }
        }
    }

    func close() { Glibc.close(fd) }
}
