/// Checks strings that must be a web origin, `scheme://host[:port]` (the serialisation of
/// RFC 6454 §6.2): the entries of a WebAuthn related origins file and the `site` of a Digital
/// Asset Links `web` target.
enum WebOrigin {
    enum Result: Equatable {
        case valid
        /// `https://example.com/`: a URL whose origin is right, written with an empty path.
        case trailingSlash
        case invalid(String)
    }

    static func check(_ text: String, schemes: [String]) -> Result {
        let s = Array(text.unicodeScalars)
        if s.contains(where: { $0 == " " || $0.value < 0x20 || $0.value == 0x7F }) {
            return .invalid("it contains white space or a control character")
        }
        let expected = schemes.map { $0 + "://" }.joined(separator: " or ")
        guard let sep = text.firstRange(of: "://") else {
            return .invalid("expected \(expected) followed by a host, such as \(schemes[0])://example.com")
        }
        let scheme = String(text[..<sep.lowerBound])
        guard schemes.contains(scheme) else {
            if schemes.contains(scheme.lowercased()) { return .invalid("write the scheme in lower case (\(scheme.lowercased())://)") }
            return .invalid("the scheme must be \(schemes.joined(separator: " or ")), not \(JSONWriter.message(scheme))")
        }
        let rest = text[sep.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let tail = rest[authorityEnd...]
        if authority.contains("@") { return .invalid("it has user info before '@'; an origin is only scheme, host and port") }
        guard !authority.isEmpty else { return .invalid("it has no host") }

        var host = Substring(authority)
        var port: Substring?
        if authority.hasPrefix("[") {
            // An IPv6 literal (RFC 3986 §3.2.2).
            guard let close = authority.firstIndex(of: "]") else { return .invalid("the IPv6 address has no closing ']'") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            guard !host.isEmpty, host.unicodeScalars.allSatisfy({ $0.isASCIIHexDigit || $0 == ":" || $0 == "." }) else {
                return .invalid("\(JSONWriter.message(String(host))) is not an IPv6 address")
            }
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return .invalid("unexpected text after the IPv6 address") }
                port = after.dropFirst()
            }
        } else {
            if let colon = authority.firstIndex(of: ":") {
                host = authority[..<colon]
                port = authority[authority.index(after: colon)...]
            }
            if let problem = hostProblem(host) { return .invalid(problem) }
        }
        if let port {
            guard !port.isEmpty, port.utf8.count <= 5, port.utf8.allSatisfy(isASCIIDigit), let n = Int(port), (1...65535).contains(n) else {
                return .invalid("the port \(JSONWriter.message(String(port))) is not a number from 1 to 65535")
            }
        }
        if tail.isEmpty { return .valid }
        if tail == "/" { return .trailingSlash }
        let pathEnd = tail.firstIndex { $0 == "?" || $0 == "#" } ?? tail.endIndex
        if tail[..<pathEnd].count > 1 { return .invalid("it has a path (\(JSONWriter.message(String(tail[..<pathEnd])))); an origin ends after the host and port") }
        if tail[pathEnd...].hasPrefix("?") { return .invalid("it has a query ('?'); an origin ends after the host and port") }
        return .invalid("it has a fragment ('#'); an origin ends after the host and port")
    }

    /// A DNS name or an IPv4 address, in ASCII: letters, digits, `-` and `_` in labels of
    /// 1–63 bytes, 253 bytes in all, no label starting or ending with `-`.
    private static func hostProblem(_ host: Substring) -> String? {
        guard !host.isEmpty else { return "it has no host" }
        if host.unicodeScalars.contains(where: { $0.value >= 0x80 }) {
            return "the host \(JSONWriter.message(String(host))) is not ASCII; write an internationalised name in punycode (xn--…)"
        }
        if host.hasSuffix(".") { return "the host \(JSONWriter.message(String(host))) ends with a dot, which makes it another origin" }
        guard host.utf8.count <= 253 else { return "the host is longer than 253 characters" }
        for label in host.split(separator: ".", omittingEmptySubsequences: false) {
            guard !label.isEmpty, label.utf8.count <= 63,
                  label.utf8.first != UInt8(ascii: "-"), label.utf8.last != UInt8(ascii: "-"),
                  label.utf8.allSatisfy({ isASCIILetter($0) || isASCIIDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") })
            else { return "the host \(JSONWriter.message(String(host))) is not a valid host name" }
        }
        return nil
    }
}
