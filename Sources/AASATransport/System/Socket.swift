import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and port, as given on the command line (`0.0.0.0:8443`,
/// `[::1]:0`) or as returned by the kernel.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Family: Sendable, Equatable { case v4, v6 }
    public var host: String
    public var port: Int
    public var family: Family

    public struct ParseError: Error, CustomStringConvertible {
        public var description: String
    }

    /// 127.0.0.0/8 or ::1: reachable from this machine only.
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    /// Parses `ADDR:PORT`, where ADDR is an IPv4 literal, an IPv6 literal in brackets, or
    /// `localhost`/`*` shorthands.
    public init(parsing text: String) throws(ParseError) {
        var hostPart: Substring
        var portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw ParseError(description: "expected [IPv6]:PORT, got \(text)")
            }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
            family = .v6
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw ParseError(description: "expected ADDR:PORT, got \(text)") }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            family = .v4
            if hostPart == "localhost" { hostPart = "127.0.0.1" }
            if hostPart == "*" || hostPart.isEmpty { hostPart = "0.0.0.0" }
        }
        guard let port = Int(portPart), (0...65535).contains(port) else {
            throw ParseError(description: "invalid port in \(text)")
        }
        self.host = String(hostPart)
        self.port = port
        var probe = SocketAddress.Storage()
        guard probe.fill(host: host, port: port, family: family) else {
            throw ParseError(description: "invalid \(family == .v6 ? "IPv6" : "IPv4") address in \(text)")
        }
    }

    package init(host: String, port: Int, family: Family) {
        self.host = host
        self.port = port
        self.family = family
    }

    public var description: String { family == .v6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// A sockaddr for bind(2).
    package struct Storage {
        package var storage = sockaddr_storage()
        package var length: socklen_t = 0

        package init() {}

        mutating package func fill(host: String, port: Int, family: Family) -> Bool {
            switch family {
            case .v4:
                var addr = sockaddr_in()
                addr.sin_family = sa_family_t(AF_INET)
                addr.sin_port = in_port_t(UInt16(port).bigEndian)
                guard inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { return false }
                withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: addr) { dst.copyMemory(from: $0) } }
                length = socklen_t(MemoryLayout<sockaddr_in>.size)
            case .v6:
                var addr = sockaddr_in6()
                addr.sin6_family = sa_family_t(AF_INET6)
                addr.sin6_port = in_port_t(UInt16(port).bigEndian)
                guard inet_pton(AF_INET6, host, &addr.sin6_addr) == 1 else { return false }
                withUnsafeMutableBytes(of: &storage) { dst in withUnsafeBytes(of: addr) { dst.copyMemory(from: $0) } }
                length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            }
            return true
        }
    }

    /// Reads an address the kernel filled in (accept, getsockname).
    static package func from(_ storage: sockaddr_storage) -> SocketAddress {
        var storage = storage
        return withUnsafeBytes(of: &storage) { raw -> SocketAddress in
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            if raw.load(as: sa_family_t.self) == sa_family_t(AF_INET6) {
                var addr = raw.load(as: sockaddr_in6.self)
                inet_ntop(AF_INET6, &addr.sin6_addr, &buffer, socklen_t(buffer.count))
                let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map(UInt8.init), as: UTF8.self)
                // An IPv4 client on a dual-stack socket reads best as plain IPv4.
                if text.hasPrefix("::ffff:"), text.contains(".") {
                    return SocketAddress(host: String(text.dropFirst(7)), port: Int(UInt16(bigEndian: addr.sin6_port)), family: .v4)
                }
                return SocketAddress(host: text, port: Int(UInt16(bigEndian: addr.sin6_port)), family: .v6)
            }
            var addr = raw.load(as: sockaddr_in.self)
            inet_ntop(AF_INET, &addr.sin_addr, &buffer, socklen_t(buffer.count))
            let text = String(decoding: buffer.prefix(while: { $0 != 0 }).map(UInt8.init), as: UTF8.self)
            return SocketAddress(host: text, port: Int(UInt16(bigEndian: addr.sin_port)), family: .v4)
        }
    }
}

/// Socket operations, each through the one syscall helper.
package enum Socket {
    /// A non-blocking listening socket bound to `address`. Returns the fd and the bound address
    /// (with the real port when `address.port` was 0).
    static package func listen(on address: SocketAddress, backlog: Int32 = 4096) throws(SystemError) -> (Int32, SocketAddress) {
        let domain = address.family == .v6 ? AF_INET6 : AF_INET
        let fd = try check("socket") { socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if address.family == .v6 { try setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1) }
            var storage = SocketAddress.Storage()
            _ = storage.fill(host: address.host, port: address.port, family: address.family)
            let length = storage.length
            _ = try withUnsafePointer(to: &storage.storage) { (p: UnsafePointer<sockaddr_storage>) throws(SystemError) in
                try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa: UnsafePointer<sockaddr>) throws(SystemError) in
                    try check("bind \(address)") { bind(fd, sa, length) }
                }
            }
            try check("listen") { Glibc.listen(fd, backlog) }
            return (fd, try localAddress(fd))
        } catch {
            close(fd)
            throw error
        }
    }

    /// A listening socket another process made and passed down (systemd's socket activation,
    /// sd_listen_fds(3)): checked to be a listening TCP socket, made non-blocking (the accept
    /// loop relies on EAGAIN) and close-on-exec. Returns the address it is bound to.
    static package func adopt(_ fd: Int32) throws(SystemError) -> SocketAddress {
        // A descriptor that is not open (EBADF) or not a socket is the passer's mistake, not
        // a bug here: an error, not ``check``'s trap.
        func option(_ name: Int32) throws(SystemError) -> Int32 {
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, name, &value, &length) == 0 else {
                throw SystemError("descriptor \(fd) passed as a listening socket: getsockopt", errno: errno)
            }
            return value
        }
        let domain = try option(SO_DOMAIN)
        guard domain == AF_INET || domain == AF_INET6, try option(SO_TYPE) == Int32(SOCK_STREAM.rawValue) else {
            throw SystemError("descriptor \(fd) is not a TCP socket", errno: EINVAL)
        }
        guard try option(SO_ACCEPTCONN) == 1 else { throw SystemError("descriptor \(fd) is not a listening socket", errno: EINVAL) }
        let flags = try check("fcntl F_GETFL") { fcntl(fd, F_GETFL) }
        _ = try check("fcntl F_SETFL") { fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let descriptorFlags = try check("fcntl F_GETFD") { fcntl(fd, F_GETFD) }
        _ = try check("fcntl F_SETFD") { fcntl(fd, F_SETFD, descriptorFlags | FD_CLOEXEC) }
        return try localAddress(fd)
    }

    static func localAddress(_ fd: Int32) throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { (p: UnsafeMutablePointer<sockaddr_storage>) throws(SystemError) in
            try p.withMemoryRebound(to: sockaddr.self, capacity: 1) { (sa: UnsafeMutablePointer<sockaddr>) throws(SystemError) in
                try check("getsockname") { getsockname(fd, sa, &length) }
            }
        }
        return SocketAddress.from(storage)
    }

    package enum Accepted {
        case accepted(Int32, SocketAddress)
        /// Nothing waiting, or a connection that failed before we took it (reset, aborted):
        /// the listener keeps going.
        case none
        /// EMFILE/ENFILE (or no memory for the socket): the connection stays in the backlog
        /// and the listener stays readable until a descriptor frees.
        case outOfDescriptors(SystemError)
    }

    /// Accepts one connection, non-blocking and close-on-exec.
    static package func accept(_ fd: Int32) -> Accepted {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let client = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                aasa_accept4(fd, sa, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
            }
        }
        guard client >= 0 else {
            let e = errno
            switch e {
            case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .outOfDescriptors(SystemError("accept4", errno: e))
            default: return .none
            }
        }
        try? setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        return .accepted(client, SocketAddress.from(storage))
    }

    static package func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) throws(SystemError) {
        var v = value
        try check("setsockopt") { setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) }
    }
}
