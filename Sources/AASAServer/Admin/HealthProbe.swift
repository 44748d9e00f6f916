import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// `aasa health`: asks an admin listener for `/healthz`, with no shell tools (the container's
/// HEALTHCHECK). Blocking, with a timeout on every step.
public enum HealthProbe {
    /// The status `/healthz` answered with, or an error describing why there was none.
    public static func check(_ address: SocketAddress, timeoutSeconds: Int = 3) -> Result<Int, SystemError> {
        let fd = socket(address.family == .v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(SystemError("socket", errno: errno)) }
        defer { close(fd) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var storage = SocketAddress.Storage()
        _ = storage.fill(host: address.host, port: address.port, family: address.family)
        let length = storage.length
        let connected = withUnsafePointer(to: &storage.storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else { return .failure(SystemError("connect \(address)", errno: errno)) }
        let request = Array("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nUser-Agent: aasa-health\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            return .failure(SystemError("send", errno: errno))
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        var received = 0
        while received < 12 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress! + received, $0.count - received, 0) }
            if n <= 0 { return .failure(SystemError("recv", errno: n == 0 ? ECONNRESET : errno)) }
            received += n
        }
        let line = String(decoding: buffer[0..<received], as: UTF8.self)
        guard line.hasPrefix("HTTP/1."), let status = Int(line.dropFirst(9).prefix(3)) else {
            return .failure(SystemError("not an HTTP response", errno: EPROTO))
        }
        return .success(status)
    }
}
