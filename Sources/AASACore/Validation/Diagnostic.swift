public enum Severity: String, Sendable, Comparable {
    case warning
    case error

    public static func < (a: Severity, b: Severity) -> Bool { a == .warning && b == .error }
}

/// One finding about a file: what is wrong, how bad it is, and exactly where.
public struct Diagnostic: Sendable, Hashable, CustomStringConvertible {
    public var code: DiagnosticCode
    public var message: String
    public var position: SourcePosition
    public var path: JSONPath

    public init(_ code: DiagnosticCode, _ message: String, at position: SourcePosition, path: JSONPath) {
        self.code = code
        self.message = message
        self.position = position
        self.path = path
    }

    public var severity: Severity { code.severity }
    public var line: Int { position.line }
    public var column: Int { position.column }

    public var description: String {
        "\(position): \(severity.rawValue): \(message) [\(code.rawValue)]"
    }
}

/// Collects diagnostics while a document is read, turning byte offsets into positions.
struct DiagnosticSink {
    let map: SourceMap
    private(set) var diagnostics: [Diagnostic] = []

    init(map: SourceMap) { self.map = map }

    mutating func report(_ code: DiagnosticCode, _ message: String, at offset: Int, path: JSONPath) {
        diagnostics.append(Diagnostic(code, message, at: map.position(of: offset), path: path))
    }

    /// An unknown key, with the closest known one as a suggestion (every kind of file says it
    /// the same way).
    mutating func reportUnknownKey(_ member: JSONMember, known: [String], in place: String, path: JSONPath) {
        var message = "unknown key \(JSONWriter.message(member.key)) in \(place) is ignored"
        if let suggestion = KeySuggestion.closest(to: member.key, among: known) {
            message += "; did you mean \(JSONWriter.message(suggestion))?"
        }
        report(.unknownKey, message, at: member.keyOffset, path: path)
    }

    /// A value of the wrong JSON type.
    mutating func reportType(_ value: JSONValue, expected: String, path: JSONPath) {
        report(.wrongType, "expected \(expected), found \(value.typeName)", at: value.offset, path: path)
    }
}
