/// The format of `aasa serve --admin-token-file` (docs/platforms.md, "Tokens"), read the same
/// way by the server and by the commands that send a token (`aasa site`, `aasa cert`,
/// `aasa import`): one token a line, `NAME:TOKEN` or `TOKEN` alone (named `token-N`, N its
/// line), `#` comments, blank lines ignored, lines ending in LF or CRLF, white space around a
/// name or token dropped.
///
/// A token goes into a header field, so it is visible ASCII only: a space or a control
/// character would end the field or split it. A name is what logs and audit lines show, so it is
/// visible ASCII too. A line that breaks either rule is a problem, reported with its number and
/// never its text (it may hold a secret), and it names no token.
public enum TokenFile {
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var token: String
        public var line: Int
    }

    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    public static func parse(_ text: String) -> (entries: [Entry], problems: [Problem]) {
        var entries: [Entry] = []
        var problems: [Problem] = []
        var names: Set<String> = []
        // A Swift `Character` holds CRLF whole: both line ends are named.
        for (index, raw) in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }).enumerated() {
            let number = index + 1
            let line = trimmed(raw)
            if line.isEmpty || line.hasPrefix("#") { continue }
            var name = "token-\(number)"
            var token = line
            if let colon = line.firstIndex(of: ":") {
                let given = trimmed(line[..<colon])
                token = trimmed(line[line.index(after: colon)...])
                guard !given.isEmpty else {
                    problems.append(Problem(line: number, message: "a ':' with no name before it (NAME:TOKEN, or the token alone)"))
                    continue
                }
                guard isVisibleASCII(given) else {
                    problems.append(Problem(line: number, message: "the name has a character other than visible ASCII (a space, a control character or a non-ASCII letter)"))
                    continue
                }
                name = String(given)
            }
            guard !token.isEmpty else {
                problems.append(Problem(line: number, message: "names a token but holds none after its ':'"))
                continue
            }
            guard isVisibleASCII(token) else {
                problems.append(Problem(line: number, message: "the token has a character other than visible ASCII (a space, a control character or a non-ASCII letter)"))
                continue
            }
            if !names.insert(name).inserted {
                problems.append(Problem(line: number, message: "the name \(name) is used by an earlier line too; audit lines cannot tell them apart"))
            }
            entries.append(Entry(name: name, token: String(token), line: number))
        }
        return (entries, problems)
    }

    private static func isVisibleASCII(_ s: Substring) -> Bool { s.utf8.allSatisfy { (0x21...0x7E).contains($0) } }

    private static func trimmed(_ s: Substring) -> Substring {
        var s = s
        while let c = s.first, c == " " || c == "\t" || c == "\r" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s = s.dropLast() }
        return s
    }
}
