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

extension Diagnostic {
    /// A file lists at most this many findings, the first by position; the others are only
    /// counted. A hostile file (a string of 100 000 control characters) then costs a bounded
    /// amount of memory and output, however many findings it holds.
    public static let listLimit = 100
}

/// How many findings, by severity.
public struct DiagnosticCount: Sendable, Equatable {
    public var errors = 0
    public var warnings = 0

    public init(errors: Int = 0, warnings: Int = 0) {
        self.errors = errors
        self.warnings = warnings
    }

    public var total: Int { errors + warnings }

    mutating func add(_ severity: Severity) {
        if severity == .error { errors += 1 } else { warnings += 1 }
    }

    mutating func add(_ other: DiagnosticCount) {
        errors += other.errors
        warnings += other.warnings
    }
}

/// Collects diagnostics while a document is read, turning byte offsets into positions. It
/// keeps the first ``Diagnostic/listLimit`` and counts the rest, whose messages and positions
/// are never made.
struct DiagnosticSink {
    let map: SourceMap
    private(set) var diagnostics: [Diagnostic] = []
    /// The findings past the limit: counted, not kept.
    private(set) var unlisted = DiagnosticCount()

    init(map: SourceMap) { self.map = map }

    /// False once the list is full: a caller may skip the work of a message.
    var hasRoom: Bool { diagnostics.count < Diagnostic.listLimit }

    mutating func report(_ code: DiagnosticCode, _ message: @autoclosure () -> String, at offset: Int, path: JSONPath) {
        guard hasRoom else {
            unlisted.add(code.severity)
            return
        }
        diagnostics.append(Diagnostic(code, message(), at: map.position(of: offset), path: path))
    }

    /// An unknown key, with the closest known one as a suggestion (every kind of file says it
    /// the same way).
    /// - Parameter consequence: what ignoring the key does, when it changes the meaning.
    mutating func reportUnknownKey(_ member: JSONMember, known: [String], in place: String, path: JSONPath,
                                   consequence: String? = nil) {
        guard hasRoom else { return report(.unknownKey, "", at: member.keyOffset, path: path) }
        var message = "unknown key \(JSONWriter.message(member.key)) in \(place) is ignored"
        if let suggestion = KeySuggestion.closest(to: member.key, among: known) {
            message += "; did you mean \(JSONWriter.message(suggestion))?"
        }
        if let consequence { message += " " + consequence }
        report(.unknownKey, message, at: member.keyOffset, path: path)
    }

    /// A value of the wrong JSON type.
    mutating func reportType(_ value: JSONValue, expected: String, path: JSONPath) {
        report(.wrongType, "expected \(expected), found \(value.typeName)", at: value.offset, path: path)
    }
}

/// The findings of one file, gathered from its passes (parser, reader, cross-checks): the
/// first ``Diagnostic/listLimit`` by position, and how many there were in all.
struct DiagnosticTally {
    private var gathered: [Diagnostic] = []
    private var unlisted = DiagnosticCount()

    mutating func add(_ diagnostics: [Diagnostic], unlisted: DiagnosticCount = DiagnosticCount()) {
        gathered += diagnostics
        self.unlisted.add(unlisted)
    }

    mutating func add(_ sink: DiagnosticSink) {
        add(sink.diagnostics, unlisted: sink.unlisted)
    }

    /// Stable sort by position (findings read top to bottom, like a compiler's), then the
    /// first ``Diagnostic/listLimit``; the count covers every finding.
    func finish() -> (listed: [Diagnostic], count: DiagnosticCount) {
        var count = unlisted
        for d in gathered { count.add(d.severity) }
        let sorted = gathered.enumerated()
            .sorted { ($0.element.position, $0.offset) < ($1.element.position, $1.offset) }
            .map(\.element)
        return (Array(sorted.prefix(Diagnostic.listLimit)), count)
    }
}
