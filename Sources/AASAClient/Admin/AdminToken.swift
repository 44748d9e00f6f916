/// The token `aasa site` sends, read from a file in the format of the server's
/// `--admin-token-file` (one token a line, `NAME:TOKEN` or `TOKEN` alone, `#` comments), so the
/// same file, or a copy holding one line of it, serves both.
public enum AdminToken {
    public struct FormatError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The first line that is neither blank nor a `#` comment, without surrounding white space,
    /// and after its first `:` when it has one. Lines end with LF or CRLF (a Swift `Character`
    /// holds CRLF whole, so both are named). The token goes into a header field, so anything but
    /// visible ASCII is refused: a stray control character would end the field and start
    /// another. Messages never quote the token.
    public static func token(fromFileText text: String) throws(FormatError) -> String {
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let line = trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let token = line.firstIndex(of: ":").map { line[line.index(after: $0)...] } ?? line
            let value = trimmed(token)
            guard !value.isEmpty else { throw FormatError(description: "line \(index + 1) names a token but holds none after its ':'") }
            guard value.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
                throw FormatError(description: "the token on line \(index + 1) has a character other than visible ASCII (a space, a control character or a non-ASCII letter)")
            }
            return String(value)
        }
        throw FormatError(description: "no token in the file (every line is blank or a # comment)")
    }

    private static func trimmed(_ s: Substring) -> Substring {
        var s = s
        while let c = s.first, c == " " || c == "\t" || c == "\r" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s = s.dropLast() }
        return s
    }
}
