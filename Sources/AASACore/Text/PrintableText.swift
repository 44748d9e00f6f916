extension String {
    /// The text with every control character written as Swift writes it in a literal,
    /// `\u{1b}`: C0 (U+0000–U+001F, line breaks and tabs included), DEL and C1 (U+0080–U+009F,
    /// which some terminals read as CSI). Text from a peer (a `Location` header, a CA's problem
    /// detail, the CDN's `Apple-Failure-Reason`) goes through this before it reaches a terminal
    /// or a one-line log entry, so it can neither move the cursor, set the window title nor
    /// forge a line of its own.
    public var escapingControlCharacters: String {
        guard unicodeScalars.contains(where: \.isControlCharacter) else { return self }
        var out = ""
        out.reserveCapacity(utf8.count + 8)
        for scalar in unicodeScalars {
            if scalar.isControlCharacter {
                out += "\\u{" + String(scalar.value, radix: 16) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    fileprivate var isControlCharacter: Bool {
        value < 0x20 || (0x7F...0x9F).contains(value)
    }
}
