import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// Host names to addresses with getaddrinfo(3): IPv4 and IPv6, in the order the system
/// prefers (RFC 6724 through gai.conf), so the client tries them in that order.
public enum Resolver {
    public struct Failure: Error, CustomStringConvertible, Sendable {
        public let host: String
        /// gai_strerror's words ("Name or service not known").
        public let reason: String
        public var description: String { "\(host): \(reason)" }
    }

    public static func addresses(of host: String, port: Int) throws(Failure) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        // No AI_ADDRCONFIG: glibc does not count loopback as configured, so on a host with only
        // loopback `localhost` would not resolve. An address of a family the host cannot reach
        // fails its connect at once and the client tries the next.
        var list: UnsafeMutablePointer<addrinfo>?
        let literal = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let r = getaddrinfo(literal, String(port), &hints, &list)
        guard r == 0, let list else {
            let reason = r == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(r))
            throw Failure(host: host, reason: reason)
        }
        defer { freeaddrinfo(list) }
        var out: [SocketAddress] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let e = entry {
            if let sa = e.pointee.ai_addr, e.pointee.ai_family == AF_INET || e.pointee.ai_family == AF_INET6 {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { dst in
                    dst.copyMemory(from: UnsafeRawBufferPointer(start: sa, count: Int(e.pointee.ai_addrlen)))
                }
                let address = SocketAddress.from(storage)
                if !out.contains(address) { out.append(address) }
            }
            entry = e.pointee.ai_next
        }
        guard !out.isEmpty else { throw Failure(host: host, reason: "no IPv4 or IPv6 address") }
        return out
    }
}
