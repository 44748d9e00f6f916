/// Checks on the literal text of a pattern: what a URL part can and cannot contain raw.
enum PatternLint {
    /// The pattern with `$(...)` references removed, so only text matched literally remains.
    static func literalText(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        var i = 0
        while i < scalars.count {
            if scalars[i] == "$", i + 1 < scalars.count, scalars[i + 1] == "(",
               let close = scalars[(i + 2)...].firstIndex(of: ")") {
                out.append("*")
                i = close + 1
                continue
            }
            out.append(scalars[i])
            i += 1
        }
        return String(out)
    }

    /// The first character that a percent-encoded URL part never holds raw (RFC 3986 §2–3),
    /// described for a message, or nil.
    static func firstCharacterNeverRawInURL(_ literal: String, kind: DocumentReader.PatternKind) -> String? {
        let scalars = Array(literal.unicodeScalars)
        for (i, s) in scalars.enumerated() {
            switch s {
            case " ": return "a space"
            case "#": return "'#'"
            case "\"", "<", ">", "\\", "^", "`", "{", "|", "}": return "'\(s)'"
            case "%":
                let ok = i + 2 < scalars.count && scalars[i + 1].isASCIIHexDigit && scalars[i + 2].isASCIIHexDigit
                if !ok && !(i + 1 < scalars.count && (scalars[i + 1] == "*" || scalars[i + 1] == "?")) {
                    return "'%' without two hex digits after it"
                }
            default:
                if s.value < 0x20 || s.value == 0x7F { return "a control character" }
                if s.value >= 0x80 { return "'\(s)' (a non-ASCII character)" }
            }
        }
        if kind == .queryItem, literal.contains("&") { return "'&' in a query item value" }
        return nil
    }

    static func hasLowercaseEscape(_ literal: String) -> Bool {
        escapes(in: literal).contains { $0.0.isLowercaseHexLetter || $0.1.isLowercaseHexLetter }
    }

    static func hasEscape(_ literal: String) -> Bool {
        !escapes(in: literal).isEmpty
    }

    private static func escapes(in literal: String) -> [(Unicode.Scalar, Unicode.Scalar)] {
        let s = Array(literal.unicodeScalars)
        var out: [(Unicode.Scalar, Unicode.Scalar)] = []
        var i = 0
        while i + 2 < s.count {
            if s[i] == "%", s[i + 1].isASCIIHexDigit, s[i + 2].isASCIIHexDigit {
                out.append((s[i + 1], s[i + 2]))
                i += 3
            } else {
                i += 1
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    var isASCIIHexDigit: Bool { value < 0x80 && isASCIIHexByte(UInt8(value)) }
    var isLowercaseHexLetter: Bool { value >= 0x61 && value <= 0x66 }
}

/// App ID checks (docs/aasa-reference.md §1.8): a 10-character prefix of letters and digits (the Team ID,
/// upper case in practice), a dot, and a bundle ID of letters, digits, hyphens and dots.
enum AppID {
    enum Result: Equatable {
        case valid
        case lowercasePrefix
        case invalid(String)
    }

    static func check(_ id: String) -> Result {
        // The usual app ID, ASCII and well formed, decided byte by byte: the walk over Unicode
        // scalars below cost 14 000 instructions an ID, a sixth of validating a small file at
        // start (docs/performance.md). Anything else takes that walk, which words the finding.
        var bytes = id
        if let verdict = bytes.withUTF8(wellFormedASCII) { return verdict }
        return checkScalars(id)
    }

    /// `.valid` or `.lowercasePrefix` for an ASCII ID that ``checkScalars(_:)`` would pass;
    /// nil for any other, which that walk then explains.
    private static func wellFormedASCII(_ id: UnsafeBufferPointer<UInt8>) -> Result? {
        guard let dot = id.firstIndex(of: UInt8(ascii: ".")), dot == 10 else { return nil }
        var lowercase = false
        for c in id[..<dot] {
            guard isASCIILetter(c) || isASCIIDigit(c) else { return nil }
            if c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z") { lowercase = true }
        }
        let bundle = id[(dot + 1)...]
        guard let first = bundle.first, let last = bundle.last, first != UInt8(ascii: "."), last != UInt8(ascii: ".") else { return nil }
        var previous: UInt8 = 0
        for c in bundle {
            guard isASCIILetter(c) || isASCIIDigit(c) || c == UInt8(ascii: "-") || c == UInt8(ascii: ".") else { return nil }
            if c == UInt8(ascii: "."), previous == UInt8(ascii: ".") { return nil }
            previous = c
        }
        return lowercase ? .lowercasePrefix : .valid
    }

    static func checkScalars(_ id: String) -> Result {
        guard let dot = id.firstIndex(of: ".") else {
            return .invalid("expected TEAMID.bundle.id (a 10-character prefix, a dot, then the bundle ID)")
        }
        let prefix = id[..<dot]
        let bundle = id[id.index(after: dot)...]
        guard prefix.unicodeScalars.allSatisfy({ $0.isASCIIAlphanumeric }) else {
            return .invalid("the prefix \(JSONWriter.message(String(prefix))) must be letters and digits only")
        }
        guard prefix.unicodeScalars.count == 10 else {
            return .invalid("the prefix \(JSONWriter.message(String(prefix))) has \(prefix.unicodeScalars.count) characters; a Team ID has 10")
        }
        guard !bundle.isEmpty else { return .invalid("the bundle ID after the prefix is missing") }
        if let bad = bundle.unicodeScalars.first(where: { !($0.isASCIIAlphanumeric || $0 == "-" || $0 == ".") }) {
            return .invalid("the bundle ID may hold only letters, digits, '-' and '.', found '\(bad)'")
        }
        // `..` found byte by byte (a generic substring search costs 10 000 instructions a call).
        if bundle.hasPrefix(".") || bundle.hasSuffix(".") || zip(bundle.utf8, bundle.utf8.dropFirst()).contains(where: { $0 == 0x2E && $1 == 0x2E }) {
            return .invalid("the bundle ID has an empty part between dots")
        }
        if prefix.unicodeScalars.contains(where: { $0.value >= 0x61 && $0.value <= 0x7A }) {
            return .lowercasePrefix
        }
        return .valid
    }
}

extension Unicode.Scalar {
    var isASCIIAlphanumeric: Bool {
        value < 0x80 && (isASCIILetter(UInt8(value)) || isASCIIDigit(UInt8(value)))
    }
}

/// "Did you mean" for unknown keys: a known key that differs only in case, or by at most two
/// edits (`casesensitive`, `appIds`, `component`).
enum KeySuggestion {
    static func closest(to key: String, among known: [String]) -> String? {
        if let same = known.first(where: { $0.lowercased() == key.lowercased() }) { return same }
        let k = Array(key.lowercased())
        var best: (String, Int)?
        for candidate in known where candidate.count > 1 {
            let d = distance(k, Array(candidate.lowercased()))
            if d <= 2, d < (best?.1 ?? .max) { best = (candidate, d) }
        }
        return best?.0
    }

    private static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var prev = Array(0...b.count)
        var cur = prev
        for i in 1...a.count {
            cur[0] = i
            for j in 1...b.count {
                cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&prev, &cur)
        }
        return prev[b.count]
    }
}
