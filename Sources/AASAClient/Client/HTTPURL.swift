/// An `http://` or `https://` URL as the client needs it: where to connect, what to send as
/// `Host` and SNI, and the request target.
public struct HTTPURL: Sendable, Equatable, CustomStringConvertible {
    public var isSecure: Bool
    /// Lower case; an IPv6 literal without brackets.
    public var host: String
    public var port: Int
    /// Path and query, `/` when empty.
    public var target: String

    public struct ParseError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    public init(isSecure: Bool, host: String, port: Int? = nil, target: String = "/") {
        self.isSecure = isSecure
        self.host = host
        self.port = port ?? (isSecure ? 443 : 80)
        self.target = target
    }

    public init(_ text: String) throws(ParseError) {
        let rest: Substring
        if text.lowercased().hasPrefix("https://") {
            isSecure = true
            rest = text.dropFirst(8)
        } else if text.lowercased().hasPrefix("http://") {
            isSecure = false
            rest = text.dropFirst(7)
        } else {
            throw ParseError(description: "not an http:// or https:// URL: \(text)")
        }
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        var path = rest[authorityEnd...]
        if let hash = path.firstIndex(of: "#") { path = path[..<hash] }
        target = path.isEmpty ? "/" : (path.hasPrefix("/") ? String(path) : "/" + path)
        guard !authority.contains("@") else { throw ParseError(description: "user information is not supported: \(text)") }
        var hostPart: Substring
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw ParseError(description: "unclosed [ in \(text)") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portPart = after.dropFirst() } else if !after.isEmpty { throw ParseError(description: "bad authority in \(text)") }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        } else {
            hostPart = authority
        }
        while hostPart.hasSuffix(".") { hostPart = hostPart.dropLast() }
        guard !hostPart.isEmpty else { throw ParseError(description: "no host in \(text)") }
        host = hostPart.lowercased()
        if let portPart {
            guard let p = Int(portPart), (1...65535).contains(p) else { throw ParseError(description: "bad port in \(text)") }
            port = p
        } else {
            port = isSecure ? 443 : 80
        }
    }

    /// The `Host` field: the port only when it is not the scheme's default (RFC 9110 §7.2).
    public var hostField: String {
        let h = host.contains(":") ? "[\(host)]" : host
        return port == (isSecure ? 443 : 80) ? h : "\(h):\(port)"
    }

    public var description: String { "\(isSecure ? "https" : "http")://\(hostField)\(target)" }
}
