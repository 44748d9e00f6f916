/// base64url without padding (RFC 4648 §5), the encoding of every JWS part and of the ACME
/// fields that carry binary (RFC 8555 §6.1: "padding characters stripped").
package enum Base64URL {
    static package func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = Base64.encode(Array(bytes))
        while text.hasSuffix("=") { text.removeLast() }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }

    static package func encode(_ text: String) -> String { encode(Array(text.utf8)) }

    /// Decodes base64url, padded or not; standard base64's `+` and `/` are accepted too, since
    /// CAs hand out EAB keys in either alphabet. Nil on any other character.
    static package func decode(_ text: String) -> [UInt8]? {
        var out: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"), UInt8(ascii: "+"): v = 62
            case UInt8(ascii: "_"), UInt8(ascii: "/"): v = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            buffer = buffer << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
            }
        }
        return out
    }
}
