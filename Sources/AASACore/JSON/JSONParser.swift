/// A strict RFC 8259 parser that keeps the source offset of every value and key.
///
/// It reports every problem it can find in one pass rather than stopping at the first:
/// a missing `,` between values, a trailing comma, a comment, a bad escape, invalid UTF-8 and
/// a control character in a string are recorded and parsing goes on as if the text were right.
/// Anything else ends the parse with one error. Every byte is looked at a bounded number of
/// times, so time is linear in the input, and nesting is capped so the recursion is bounded.
public struct JSONParser {
    /// Deeper nesting than this is refused; real AASA files nest about six levels.
    public static let maximumDepth = 128

    public struct Result: Sendable {
        /// The parsed value, or nil when the text could not be read as JSON at all.
        public var value: JSONValue?
        /// The first ``Diagnostic/listLimit`` findings.
        public var diagnostics: [Diagnostic]
        /// The findings past the limit, counted only.
        public var unlisted = DiagnosticCount()
    }

    private let bytes: [UInt8]
    private var index = 0
    private var sink: DiagnosticSink
    private var path = JSONPath()
    private var depth = 0
    /// What the document should be, for the message about an empty file.
    private let expecting: String

    private struct Stop: Error {}

    /// Parses `bytes`. A leading UTF-8 byte-order mark is reported as a warning and skipped.
    /// `expecting` names the value the file should hold, for the message about an empty file.
    public static func parse(_ bytes: [UInt8], map: SourceMap? = nil, expecting: String = "a JSON object") -> Result {
        var parser = JSONParser(bytes: bytes, map: map ?? SourceMap(bytes), expecting: expecting)
        let value = parser.parseDocument()
        return Result(value: value, diagnostics: parser.sink.diagnostics, unlisted: parser.sink.unlisted)
    }

    private init(bytes: [UInt8], map: SourceMap, expecting: String) {
        self.bytes = bytes
        self.expecting = expecting
        self.sink = DiagnosticSink(map: map)
    }

    // MARK: - Document

    private mutating func parseDocument() -> JSONValue? {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            report(.byteOrderMark, "the file starts with a UTF-8 byte-order mark; JSON must not have one (RFC 8259 §8.1)", at: 0)
            index = 3
        }
        do {
            try skipWhitespace()
            guard index < bytes.count else {
                let message = "the file is empty; expected \(expecting)"
                report(.emptyFile, message, at: index)
                return nil
            }
            let value = try parseValue()
            try skipWhitespace()
            if index < bytes.count {
                let message = "unexpected \(describe(at: index)) after the end of the JSON value"
                report(.trailingContent, message, at: index)
                return value
            }
            return value
        } catch {
            return nil
        }
    }

    // MARK: - Values

    private mutating func parseValue() throws -> JSONValue {
        guard index < bytes.count else {
            return try fail(.syntax, "unexpected end of file; expected a value", at: index)
        }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""):
            let start = index
            let s = try parseString()
            return JSONValue(.string(s), offset: start, endOffset: index)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            return try parseLiteral()
        case UInt8(ascii: "'"):
            return try fail(.syntax, "strings must be in double quotes, not single quotes", at: index)
        case UInt8(ascii: "}"), UInt8(ascii: "]"):
            return try fail(.syntax, "unexpected \(describe(at: index)); expected a value", at: index)
        default:
            if isASCIILetter(bytes[index]) {
                return try parseLiteral()
            }
            return try fail(.syntax, "unexpected \(describe(at: index)); expected a value", at: index)
        }
    }

    private mutating func enter(at offset: Int) throws {
        depth += 1
        if depth > JSONParser.maximumDepth {
            _ = try fail(.nestingTooDeep, "nesting is deeper than \(JSONParser.maximumDepth) levels", at: offset) as JSONValue
        }
    }

    private mutating func parseObject() throws -> JSONValue {
        let start = index
        try enter(at: start)
        defer { depth -= 1 }
        index += 1
        var members: [JSONMember] = []
        var seen: Set<String> = []
        try skipWhitespace()
        if peek(UInt8(ascii: "}")) {
            index += 1
            return JSONValue(.object(members), offset: start, endOffset: index)
        }
        while true {
            guard index < bytes.count else {
                return try fail(.syntax, "unexpected end of file; the object that starts at \(position(start)) is not closed", at: index)
            }
            guard bytes[index] == UInt8(ascii: "\"") else {
                if bytes[index] == UInt8(ascii: "'") {
                    return try fail(.syntax, "object keys must be in double quotes, not single quotes", at: index)
                }
                return try fail(.syntax, "unexpected \(describe(at: index)); expected a key in double quotes", at: index)
            }
            let keyOffset = index
            let key = try parseString()
            if !seen.insert(key).inserted {
                report(.duplicateKey, "duplicate key \(JSONWriter.message(key)); the last one is used", at: keyOffset)
            }
            try skipWhitespace()
            guard peek(UInt8(ascii: ":")) else {
                if index < bytes.count, bytes[index] == UInt8(ascii: "=") {
                    return try fail(.syntax, "expected ':' after the key, found '='", at: index)
                }
                return try fail(.syntax, "expected ':' after the key \(JSONWriter.message(key))", at: index)
            }
            index += 1
            try skipWhitespace()
            path.push(.key(key))
            let value = try parseValue()
            path.pop()
            members.append(JSONMember(key: key, keyOffset: keyOffset, value: value))
            let afterValue = index
            try skipWhitespace()
            guard index < bytes.count else {
                return try fail(.syntax, "unexpected end of file; the object that starts at \(position(start)) is not closed", at: index)
            }
            switch bytes[index] {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                try skipWhitespace()
                if peek(UInt8(ascii: "}")) {
                    report(.trailingComma, "trailing comma before '}'", at: comma)
                    index += 1
                    return JSONValue(.object(members), offset: start, endOffset: index)
                }
            case UInt8(ascii: "}"):
                index += 1
                return JSONValue(.object(members), offset: start, endOffset: index)
            case UInt8(ascii: "\""):
                // The next key follows without a separator: report it where the ',' belongs and go on.
                report(.missingComma, "missing ',' between object members", at: afterValue)
            default:
                return try fail(.syntax, "unexpected \(describe(at: index)); expected ',' or '}'", at: index)
            }
        }
    }

    private mutating func parseArray() throws -> JSONValue {
        let start = index
        try enter(at: start)
        defer { depth -= 1 }
        index += 1
        var elements: [JSONValue] = []
        try skipWhitespace()
        if peek(UInt8(ascii: "]")) {
            index += 1
            return JSONValue(.array(elements), offset: start, endOffset: index)
        }
        while true {
            path.push(.index(elements.count))
            let value = try parseValue()
            path.pop()
            elements.append(value)
            let afterValue = index
            try skipWhitespace()
            guard index < bytes.count else {
                return try fail(.syntax, "unexpected end of file; the array that starts at \(position(start)) is not closed", at: index)
            }
            switch bytes[index] {
            case UInt8(ascii: ","):
                let comma = index
                index += 1
                try skipWhitespace()
                if peek(UInt8(ascii: "]")) {
                    report(.trailingComma, "trailing comma before ']'", at: comma)
                    index += 1
                    return JSONValue(.array(elements), offset: start, endOffset: index)
                }
            case UInt8(ascii: "]"):
                index += 1
                return JSONValue(.array(elements), offset: start, endOffset: index)
            case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["), UInt8(ascii: "-"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
                report(.missingComma, "missing ',' between array elements", at: afterValue)
            default:
                return try fail(.syntax, "unexpected \(describe(at: index)); expected ',' or ']'", at: index)
            }
        }
    }

    private mutating func parseLiteral() throws -> JSONValue {
        let start = index
        var end = index
        while end < bytes.count, isASCIILetter(bytes[end]) || isASCIIDigit(bytes[end]) || bytes[end] == UInt8(ascii: "_") {
            end += 1
        }
        let word = String(decoding: bytes[start..<end], as: UTF8.self)
        let kind: JSONValue.Kind
        switch word {
        case "true": kind = .bool(true)
        case "false": kind = .bool(false)
        case "null": kind = .null
        case "True", "TRUE": return try fail(.invalidLiteral, "invalid literal '\(word)'; JSON writes it 'true'", at: start)
        case "False", "FALSE": return try fail(.invalidLiteral, "invalid literal '\(word)'; JSON writes it 'false'", at: start)
        case "None", "NULL", "Null", "nil", "undefined": return try fail(.invalidLiteral, "invalid literal '\(word)'; JSON writes it 'null'", at: start)
        case "NaN", "Infinity": return try fail(.invalidNumber, "'\(word)' is not a JSON number", at: start)
        default:
            if peek(UInt8(ascii: ":"), at: end) || peekPastWhitespace(UInt8(ascii: ":"), from: end) {
                return try fail(.syntax, "object keys must be in double quotes: \"\(word)\"", at: start)
            }
            return try fail(.invalidLiteral, "invalid literal '\(word)'; expected a value (strings need double quotes)", at: start)
        }
        index = end
        return JSONValue(kind, offset: start, endOffset: end)
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func parseNumber() throws -> JSONValue {
        let start = index
        if peek(UInt8(ascii: "-")) { index += 1 }
        guard index < bytes.count, isASCIIDigit(bytes[index]) else {
            return try fail(.invalidNumber, "invalid number: expected a digit after '-'", at: index)
        }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isASCIIDigit(bytes[index]) {
                return try fail(.invalidNumber, "invalid number: leading zeros are not allowed", at: start)
            }
        } else {
            while index < bytes.count, isASCIIDigit(bytes[index]) { index += 1 }
        }
        if peek(UInt8(ascii: ".")) {
            index += 1
            guard index < bytes.count, isASCIIDigit(bytes[index]) else {
                return try fail(.invalidNumber, "invalid number: expected a digit after '.'", at: index)
            }
            while index < bytes.count, isASCIIDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isASCIIDigit(bytes[index]) else {
                return try fail(.invalidNumber, "invalid number: expected a digit in the exponent", at: index)
            }
            while index < bytes.count, isASCIIDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        return JSONValue(.number(text), offset: start, endOffset: index)
    }

    // MARK: - Strings

    /// Parses a string starting at its opening quote; leaves `index` past the closing quote.
    private mutating func parseString() throws -> String {
        let start = index
        index += 1
        // Fast path: printable ASCII with no escapes, the common case in AASA files.
        var scan = index
        while scan < bytes.count {
            let b = bytes[scan]
            if b == UInt8(ascii: "\"") {
                let s = String(decoding: bytes[index..<scan], as: UTF8.self)
                index = scan + 1
                return s
            }
            if b == UInt8(ascii: "\\") || b < 0x20 || b >= 0x80 { break }
            scan += 1
        }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: String(decoding: bytes[index..<scan], as: UTF8.self).unicodeScalars)
        index = scan
        while true {
            guard index < bytes.count else {
                return try fail(.unterminatedString, "unterminated string; it starts here and has no closing '\"'", at: start)
            }
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                return String(scalars)
            case UInt8(ascii: "\\"):
                scalars.append(try parseEscape())
            case 0x0A, 0x0D:
                // A raw line break inside a string nearly always means a missing closing quote.
                return try fail(.unterminatedString, "unterminated string: a line break comes before the closing '\"'", at: start)
            case 0..<0x20:
                report(.controlCharacter, "control character U+\(hex(UInt32(b), width: 4)) in a string must be escaped", at: index)
                scalars.append(Unicode.Scalar(b))
                index += 1
            case 0x80...:
                scalars.append(decodeUTF8Scalar())
            default:
                scalars.append(Unicode.Scalar(b))
                index += 1
            }
        }
    }

    private mutating func parseEscape() throws -> Unicode.Scalar {
        let start = index
        index += 1
        guard index < bytes.count else {
            return try fail(.unterminatedString, "unterminated string at end of file", at: start)
        }
        let c = bytes[index]
        index += 1
        switch c {
        case UInt8(ascii: "\""): return "\""
        case UInt8(ascii: "\\"): return "\\"
        case UInt8(ascii: "/"): return "/"
        case UInt8(ascii: "b"): return "\u{08}"
        case UInt8(ascii: "f"): return "\u{0C}"
        case UInt8(ascii: "n"): return "\n"
        case UInt8(ascii: "r"): return "\r"
        case UInt8(ascii: "t"): return "\t"
        case UInt8(ascii: "u"):
            guard let high = readHex4() else {
                report(.invalidEscape, "invalid \\u escape: expected four hexadecimal digits", at: start)
                return "\u{FFFD}"
            }
            if (0xD800...0xDBFF).contains(high) {
                let save = index
                if peek(UInt8(ascii: "\\")), peek(UInt8(ascii: "u"), at: index + 1) {
                    index += 2
                    if let low = readHex4(), (0xDC00...0xDFFF).contains(low) {
                        return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))!
                    }
                }
                index = save
                report(.invalidEscape, "invalid \\u escape: high surrogate \\u\(hex(high, width: 4)) is not followed by a low surrogate", at: start)
                return "\u{FFFD}"
            }
            if (0xDC00...0xDFFF).contains(high) {
                report(.invalidEscape, "invalid \\u escape: lone low surrogate \\u\(hex(high, width: 4))", at: start)
                return "\u{FFFD}"
            }
            return Unicode.Scalar(high)!
        default:
            index -= 1
            let shown = describeByte(c)
            report(.invalidEscape, "invalid escape '\\\(shown)'; JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t and \\uXXXX", at: start)
            if c < 0x80 {
                index += 1
                return Unicode.Scalar(c)
            }
            return decodeUTF8Scalar()
        }
    }

    private mutating func readHex4() -> UInt32? {
        guard index + 4 <= bytes.count else { return nil }
        var value: UInt32 = 0
        for i in index..<index + 4 {
            let b = bytes[i]
            guard isASCIIHexDigit(b) else { return nil }
            value = value << 4 | UInt32(isASCIIDigit(b) ? b - UInt8(ascii: "0") : (b | 0x20) - UInt8(ascii: "a") + 10)
        }
        index += 4
        return value
    }

    /// Decodes one scalar at `index` (a byte >= 0x80), reporting invalid UTF-8 (RFC 3629:
    /// no overlong forms, no surrogates, nothing above U+10FFFF) and replacing it with U+FFFD.
    private mutating func decodeUTF8Scalar() -> Unicode.Scalar {
        let b0 = bytes[index]
        let length: Int
        var value: UInt32
        var lower: UInt8 = 0x80
        var upper: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: length = 2; value = UInt32(b0 & 0x1F)
        case 0xE0: length = 3; value = UInt32(b0 & 0x0F); lower = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3; value = UInt32(b0 & 0x0F)
        case 0xED: length = 3; value = UInt32(b0 & 0x0F); upper = 0x9F
        case 0xF0: length = 4; value = UInt32(b0 & 0x07); lower = 0x90
        case 0xF1...0xF3: length = 4; value = UInt32(b0 & 0x07)
        case 0xF4: length = 4; value = UInt32(b0 & 0x07); upper = 0x8F
        default:
            return invalidUTF8(at: index, "invalid UTF-8 byte 0x\(hex(UInt32(b0), width: 2))")
        }
        for i in 1..<length {
            let at = index + i
            let ok = at < bytes.count && bytes[at] >= (i == 1 ? lower : 0x80) && bytes[at] <= (i == 1 ? upper : 0xBF)
            guard ok else {
                return invalidUTF8(at: index, "invalid UTF-8 sequence starting with byte 0x\(hex(UInt32(b0), width: 2))")
            }
            value = value << 6 | UInt32(bytes[at] & 0x3F)
        }
        index += length
        return Unicode.Scalar(value) ?? "\u{FFFD}"
    }

    /// Reports one invalid sequence and skips it with the continuation bytes that follow, so a
    /// run of bad bytes is one finding and one U+FFFD.
    private mutating func invalidUTF8(at start: Int, _ message: String) -> Unicode.Scalar {
        report(.invalidUTF8, message, at: start)
        index = start + 1
        while index < bytes.count, bytes[index] & 0xC0 == 0x80 { index += 1 }
        return "\u{FFFD}"
    }

    // MARK: - Whitespace and comments

    /// Skips RFC 8259 whitespace. Comments are not JSON; they are reported and skipped so the
    /// rest of the file is still checked.
    private mutating func skipWhitespace() throws {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D:
                index += 1
            case UInt8(ascii: "/") where peek(UInt8(ascii: "/"), at: index + 1):
                report(.comment, "comments are not allowed in JSON", at: index)
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "/") where peek(UInt8(ascii: "*"), at: index + 1):
                let start = index
                report(.comment, "comments are not allowed in JSON", at: start)
                index += 2
                while true {
                    guard index + 1 < bytes.count else {
                        _ = try fail(.comment, "unterminated comment", at: start) as JSONValue
                        return
                    }
                    if bytes[index] == UInt8(ascii: "*"), bytes[index + 1] == UInt8(ascii: "/") {
                        index += 2
                        break
                    }
                    index += 1
                }
            case 0xC2 where peek(0xA0, at: index + 1):
                return // a no-break space: reported as unexpected by the caller
            default:
                return
            }
        }
    }

    // MARK: - Helpers

    private func peek(_ byte: UInt8) -> Bool { peek(byte, at: index) }

    private func peek(_ byte: UInt8, at offset: Int) -> Bool {
        offset < bytes.count && bytes[offset] == byte
    }

    private func peekPastWhitespace(_ byte: UInt8, from offset: Int) -> Bool {
        var i = offset
        while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x09 { i += 1 }
        return peek(byte, at: i)
    }

    private func position(_ offset: Int) -> String { sink.map.position(of: offset).description }

    private mutating func report(_ code: DiagnosticCode, _ message: @autoclosure () -> String, at offset: Int) {
        sink.report(code, message(), at: offset, path: path)
    }

    private mutating func fail<T>(_ code: DiagnosticCode, _ message: String, at offset: Int) throws -> T {
        report(code, message, at: offset)
        throw Stop()
    }

    private func describe(at offset: Int) -> String {
        guard offset < bytes.count else { return "end of file" }
        let b = bytes[offset]
        if b == 0xC2, peek(0xA0, at: offset + 1) { return "no-break space (U+00A0)" }
        if b >= 0xE2, offset + 2 < bytes.count, bytes[offset] == 0xE2, bytes[offset + 1] == 0x80,
           (0x9C...0x9D).contains(bytes[offset + 2]) {
            return "curly quote; JSON needs straight double quotes"
        }
        return "character '\(describeByte(b))'"
    }

    private func describeByte(_ b: UInt8) -> String {
        if b >= 0x20 && b < 0x7F { return String(UnicodeScalar(b)) }
        return "\\x" + hex(UInt32(b), width: 2)
    }
}

func hex(_ value: UInt32, width: Int) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: max(0, width - digits.count)) + digits
}
