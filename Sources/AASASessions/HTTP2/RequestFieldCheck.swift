import AASAHTTP

/// The rules a request's header block must follow (RFC 9113 §8.2, §8.3), checked field by field
/// as it is decoded. A block that breaks one is malformed: the stream is reset with
/// PROTOCOL_ERROR (§8.1.1) and nothing of it reaches the handlers.
struct RequestFieldCheck {
    private var sawRegularField = false
    /// Pseudo-header fields seen, one bit each (`Pseudo`).
    private var pseudo: UInt8 = 0
    private var isConnect = false
    private var sawHost = false

    enum Pseudo {
        static let method: UInt8 = 1, scheme: UInt8 = 2, path: UInt8 = 4, authority: UInt8 = 8
    }

    /// A pseudo-header field (bit `Pseudo.*`) whose name and value were found valid on an
    /// earlier stream (``FieldMemo``): only where it stands and whether it repeats are left to
    /// check. Not `:method CONNECT`.
    mutating func knownPseudo(_ bit: UInt8) -> StaticString? {
        if sawRegularField { return "a pseudo-header field after a regular field" }
        if pseudo & bit != 0 { return "a repeated pseudo-header field" }
        pseudo |= bit
        return nil
    }

    /// A regular field found valid, and not connection-specific, on an earlier stream.
    mutating func knownRegular(isHost: Bool = false) {
        sawRegularField = true
        if isHost { sawHost = true }
    }

    /// Why the field makes the request malformed, or nil. `known` is the session's reading of
    /// the name (a name it recognised is already known to be valid); `valueIsChecked` says the
    /// value is one the session checked on an earlier stream, or one known to be valid.
    mutating func check(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>,
                        known: KnownField?, valueIsChecked: Bool) -> StaticString? {
        if !valueIsChecked, let why = RequestFieldCheck.checkValue(value) { return why }
        if name.first == UInt8(ascii: ":") {
            if sawRegularField { return "a pseudo-header field after a regular field" }
            let bit: UInt8
            switch known {
            case .method: bit = Pseudo.method
            case .path: bit = Pseudo.path
            case .authority: bit = Pseudo.authority
            case .scheme: bit = Pseudo.scheme
            default: return "an unknown pseudo-header field"
            }
            if pseudo & bit != 0 { return "a repeated pseudo-header field" }
            pseudo |= bit
            if bit == Pseudo.method {
                // RFC 9110 §9.1: a method is a token.
                if value.isEmpty || !value.allSatisfy(RequestFieldCheck.isTokenByte) { return "a :method that is not a token" }
                if KnownField.equals(value, "CONNECT") { isConnect = true }
            }
            // This server is http and https only (RFC 9113 §8.3.1).
            if bit == Pseudo.scheme, !KnownField.equals(value, "https"), !KnownField.equals(value, "http") { return "an unknown :scheme" }
            if bit == Pseudo.path, value.isEmpty { return "an empty :path" }
            return nil
        }
        sawRegularField = true
        switch known {
        case .host:
            sawHost = true
            return nil
        case .contentLength:
            return !value.isEmpty && value.allSatisfy({ $0 &- 0x30 < 10 }) ? nil : "an invalid content-length"
        case .connection, .transferEncoding: return "a connection-specific field"
        case .some: return nil
        case nil: break
        }
        if !RequestFieldCheck.isValidName(name) { return "an invalid field name" }
        return RequestFieldCheck.checkConnectionSpecific(name, value)
    }

    /// Fields HTTP/2 does not carry (§8.2.2): the connection-specific ones, and TE other than
    /// `trailers`. `name` is valid and lower case.
    private static func checkConnectionSpecific(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> StaticString? {
        switch name.count {
        case 2:
            return KnownField.equals(name, "te") && !KnownField.equals(value, "trailers") ? "TE other than trailers" : nil
        case 7:
            return KnownField.equals(name, "upgrade") ? "a connection-specific field" : nil
        case 10:
            return KnownField.equals(name, "connection") || KnownField.equals(name, "keep-alive")
                ? "a connection-specific field" : nil
        case 16:
            return KnownField.equals(name, "proxy-connection") ? "a connection-specific field" : nil
        case 17:
            return KnownField.equals(name, "transfer-encoding") ? "a connection-specific field" : nil
        default: return nil
        }
    }

    /// tchar (RFC 9110 §5.6.2): letters, digits and !#$%&'*+-.^_`|~.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
        default: return false
        }
    }

    /// Why the whole block is malformed, or nil: what must be present (§8.3.1, §8.5).
    func finish() -> StaticString? {
        if pseudo & Pseudo.method == 0 { return "no :method" }
        if isConnect {
            if pseudo & (Pseudo.scheme | Pseudo.path) != 0 { return ":scheme or :path in a CONNECT request" }
            if pseudo & Pseudo.authority == 0 { return "a CONNECT request without :authority" }
            return nil
        }
        if pseudo & Pseudo.scheme == 0 { return "no :scheme" }
        if pseudo & Pseudo.path == 0 { return "no :path" }
        if pseudo & Pseudo.authority == 0, !sawHost { return "neither :authority nor Host" }
        return nil
    }

    /// A trailer field (a second header block): no pseudo-header fields (§8.1), nor what no
    /// field section may hold (§8.2).
    static func checkTrailer(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> StaticString? {
        if let why = checkValue(value) { return why }
        guard isValidName(name) else { return "an invalid trailer field" }
        return checkConnectionSpecific(name, value)
    }

    /// No NUL, CR or LF, and no whitespace at either end (§8.2.1).
    private static func checkValue(_ value: UnsafeBufferPointer<UInt8>) -> StaticString? {
        guard let first = value.first, let last = value.last else { return nil }
        if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 { return "whitespace around a field value" }
        return ByteScan.containsNULOrLineBreak(value) ? "NUL, CR or LF in a field value" : nil
    }

    /// Not empty; no control characters, space, upper case, DEL, non-ASCII or colon (§8.2.1,
    /// §8.3: a colon begins only a pseudo-header's name).
    private static func isValidName(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !name.isEmpty else { return false }
        for byte in name where byte <= 0x20 || byte >= 0x7F || byte &- 0x41 < 26 || byte == UInt8(ascii: ":") {
            return false
        }
        return true
    }
}
