/// The parts of a URL that matching looks at, kept exactly as encoded.
///
/// Characters that may not appear raw in a URL (spaces, non-ASCII, `"<>\^`{|}`) are
/// percent-encoded with upper-case hex first, as a browser or `URLComponents` does before a
/// URL reaches the system, so `https://example.com/café` is matched as `/caf%C3%A9`.
public struct URLParts: Sendable, Equatable {
    public var scheme: String
    /// Lower-cased, without a trailing dot; an IPv6 literal keeps its brackets.
    public var host: String
    public var port: Int?
    public var path: String
    /// The text after `?`, or nil when the URL has no `?`.
    public var query: String?
    /// The text after `#`, or nil when the URL has no `#`.
    public var fragment: String?

    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    public init(_ string: String) throws(ParseError) {
        let text = URLParts.encodingDisallowed(URLParts.asciiHost(in: string.trimmingASCIIWhitespace()))
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex,
              text[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { throw ParseError(description: "not an absolute URL (expected scheme://host/path): \(string)") }
        scheme = text[..<colon].lowercased()
        var rest = text[text.index(after: colon)...]
        guard rest.hasPrefix("//") else {
            throw ParseError(description: "the URL has no host (expected \(scheme)://host/path): \(string)")
        }
        rest = rest.dropFirst(2)
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        var authority = rest[..<authorityEnd]
        rest = rest[authorityEnd...]
        if let at = authority.lastIndex(of: "@") { authority = authority[authority.index(after: at)...] }
        var hostPart = authority
        port = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else {
                throw ParseError(description: "unterminated IPv6 address in \(string)")
            }
            hostPart = authority[...close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { port = try URLParts.port(after.dropFirst(), in: string) }
        } else if let c = authority.lastIndex(of: ":") {
            hostPart = authority[..<c]
            port = try URLParts.port(authority[authority.index(after: c)...], in: string)
        }
        host = URLParts.normalizeHost(String(hostPart))
        guard !host.isEmpty else { throw ParseError(description: "the URL has an empty host: \(string)") }

        if let hash = rest.firstIndex(of: "#") {
            fragment = String(rest[rest.index(after: hash)...])
            rest = rest[..<hash]
        } else {
            fragment = nil
        }
        if let q = rest.firstIndex(of: "?") {
            query = String(rest[rest.index(after: q)...])
            rest = rest[..<q]
        } else {
            query = nil
        }
        path = String(rest)
    }

    /// The URL with an internationalised host written in punycode, before anything is
    /// percent-encoded (a host is never percent-encoded).
    static func asciiHost(in url: String) -> String {
        guard url.unicodeScalars.contains(where: { !$0.isASCII }) else { return url }
        let scalars = Array(url.unicodeScalars)
        guard let colon = scalars.firstIndex(of: ":"), colon + 2 < scalars.count,
              scalars[colon + 1] == "/", scalars[colon + 2] == "/" else { return url }
        let authorityStart = colon + 3
        var authorityEnd = authorityStart
        while authorityEnd < scalars.count, !"/?#".unicodeScalars.contains(scalars[authorityEnd]) { authorityEnd += 1 }
        var hostStart = authorityStart
        if let at = scalars[authorityStart..<authorityEnd].lastIndex(of: "@") { hostStart = at + 1 }
        var hostEnd = authorityEnd
        if hostStart < authorityEnd, scalars[hostStart] != "[",
           let portColon = scalars[hostStart..<authorityEnd].lastIndex(of: ":") {
            hostEnd = portColon
        }
        func text(_ range: Range<Int>) -> String {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[range])
            return String(view)
        }
        guard let ascii = Punycode.host(text(hostStart..<hostEnd)) else { return url }
        let before = text(0..<hostStart)
        let after = text(hostEnd..<scalars.count)
        return before + ascii + after
    }

    private static func port(_ text: Substring, in url: String) throws(ParseError) -> Int? {
        if text.isEmpty { return nil }
        guard text.count <= 5, let p = Int(text), p <= 65535 else {
            throw ParseError(description: "invalid port '\(text)' in \(url)")
        }
        return p
    }

    /// Host names compare case-insensitively, and `example.com.` names `example.com`.
    public static func normalizeHost(_ host: String) -> String {
        var h = host.lowercased()
        while h.hasSuffix(".") { h.removeLast() }
        return h
    }

    static func encodingDisallowed(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for b in s.utf8 {
            if b <= 0x20 || b >= 0x7F || "\"<>\\^`{|}".utf8.contains(b) {
                out += "%" + hex(UInt32(b), width: 2)
            } else {
                out.unicodeScalars.append(Unicode.Scalar(b))
            }
        }
        return out
    }

    /// Decodes `%XX` escapes; an invalid escape is kept as written, and bytes that are not
    /// UTF-8 after decoding become U+FFFD.
    public static func percentDecoded(_ s: String) -> String {
        guard s.utf8.contains(UInt8(ascii: "%")) else { return s }
        let bytes = Array(s.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if bytes[i] == UInt8(ascii: "%"), i + 2 < bytes.count, isASCIIHexDigit(bytes[i + 1]), isASCIIHexDigit(bytes[i + 2]) {
                out.append(hexValue(bytes[i + 1]) << 4 | hexValue(bytes[i + 2]))
                i += 3
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8 {
        isASCIIDigit(b) ? b - UInt8(ascii: "0") : (b | 0x20) - UInt8(ascii: "a") + 10
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let scalars = unicodeScalars
        var lo = scalars.startIndex
        var hi = scalars.endIndex
        while lo < hi, scalars[lo].value <= 0x20 { lo = scalars.index(after: lo) }
        while hi > lo, scalars[scalars.index(before: hi)].value <= 0x20 { hi = scalars.index(before: hi) }
        return String(scalars[lo..<hi])
    }
}

/// A URL prepared for matching: each part as scalars, in each of the four ways a component
/// may ask for it (percent-encoded or decoded, case-sensitive or folded), made once.
struct MatchInput {
    struct Variant {
        var path: [Unicode.Scalar]
        var query: [Unicode.Scalar]
        var fragment: [Unicode.Scalar]
        var queryItems: [(name: [Unicode.Scalar], value: [Unicode.Scalar])]
    }

    let url: URLParts
    private var variants: [Variant?] = [nil, nil, nil, nil]

    init(_ url: URLParts) { self.url = url }

    mutating func variant(percentEncoded: Bool, caseSensitive: Bool) -> Variant {
        let key = (percentEncoded ? 2 : 0) + (caseSensitive ? 1 : 0)
        if let v = variants[key] { return v }
        func prepare(_ s: String) -> [Unicode.Scalar] {
            let text = percentEncoded ? s : URLParts.percentDecoded(s)
            let scalars = Array(text.unicodeScalars)
            return caseSensitive ? scalars : Pattern.fold(scalars)
        }
        let rawQuery = url.query ?? ""
        // Split on the raw `&` and `=` before decoding, so an encoded `%26` stays inside a value.
        let items = rawQuery.split(separator: "&", omittingEmptySubsequences: true).map { item in
            if let eq = item.firstIndex(of: "=") {
                return (name: prepare(String(item[..<eq])), value: prepare(String(item[item.index(after: eq)...])))
            }
            return (name: prepare(String(item)), value: [Unicode.Scalar]())
        }
        let v = Variant(path: PathPattern.normalize(prepare(url.path)), query: prepare(rawQuery),
                        fragment: prepare(url.fragment ?? ""), queryItems: items)
        variants[key] = v
        return v
    }
}
