/// The token `aasa site` sends, read from a file in the format of the server's
/// `--admin-token-file` (one token a line, `NAME:TOKEN` or `TOKEN` alone, `#` comments), so the
/// same file, or a copy holding one line of it, serves both.
public enum AdminToken {
    public struct FormatError: Error, CustomStringConvertible, Sendable {
        public var description: String
    }

    /// The token of the file's first line that names one (``TokenFile``): the same file the
    /// server reads, or a copy holding one line of it, serves both. Messages never quote the token.
    public static func token(fromFileText text: String) throws(FormatError) -> String {
        let (entries, problems) = TokenFile.parse(text)
        if let first = entries.first {
            if let problem = problems.first, problem.line < first.line { throw FormatError(description: problem.description) }
            return first.token
        }
        if let problem = problems.first { throw FormatError(description: problem.description) }
        throw FormatError(description: "no token in the file (every line is blank or a # comment)")
    }
}
