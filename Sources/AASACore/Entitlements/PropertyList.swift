/// A value of an XML property list (Apple's `PropertyList-1.0.dtd`), as much as an
/// `.entitlements` file or a provisioning profile holds. Pure Swift: the core uses no
/// Foundation, and `PropertyListSerialization` is not on Linux without it.
public indirect enum PropertyListValue: Sendable, Equatable {
    case string(String)
    case integer(String)
    case real(String)
    case bool(Bool)
    case date(String)
    /// Base64 text as written.
    case data(String)
    case array([PropertyListValue])
    /// Keys in document order.
    case dictionary([(String, PropertyListValue)])

    public subscript(key: String) -> PropertyListValue? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.last { $0.0 == key }?.1
    }

    public static func == (a: PropertyListValue, b: PropertyListValue) -> Bool {
        switch (a, b) {
        case (.string(let x), .string(let y)), (.integer(let x), .integer(let y)), (.real(let x), .real(let y)),
             (.date(let x), .date(let y)), (.data(let x), .data(let y)):
            return x == y
        case (.bool(let x), .bool(let y)): return x == y
        case (.array(let x), .array(let y)): return x == y
        case (.dictionary(let x), .dictionary(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }
}

/// Reads XML property lists. Binary property lists (`bplist00`) are refused with a message
/// that says how to convert them.
public enum PropertyList {
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var message: String
        /// 1-based line of the problem.
        public var line: Int
        public var description: String { "line \(line): \(message)" }
    }

    /// The entitlements key this tool reads.
    public static let associatedDomainsKey = "com.apple.developer.associated-domains"

    public static func parse(_ bytes: [UInt8]) throws(ParseError) -> PropertyListValue {
        if bytes.starts(with: Array("bplist".utf8)) {
            throw ParseError(message: "a binary property list; convert it first: plutil -convert xml1 FILE", line: 1)
        }
        var reader = Reader(bytes: bytes)
        try reader.skipMisc()
        let open = try reader.tag()
        guard open.name == "plist", !open.isClosing else { throw reader.error("expected <plist>, found <\(open.name)>") }
        if open.isEmpty { throw reader.error("an empty <plist/>") }
        try reader.skipMisc()
        let value = try reader.value(try reader.tag())
        try reader.skipMisc()
        let close = try reader.tag()
        guard close.name == "plist", close.isClosing else { throw reader.error("expected </plist>, found <\(close.name)>") }
        return value
    }

    /// The `com.apple.developer.associated-domains` strings of an entitlements dictionary, or
    /// of a provisioning profile (under its `Entitlements` key). nil when the key is absent.
    public static func associatedDomains(in plist: PropertyListValue) throws(ParseError) -> [String]? {
        let entitlements = plist[associatedDomainsKey] != nil ? plist : (plist["Entitlements"] ?? plist)
        guard let value = entitlements[associatedDomainsKey] else { return nil }
        switch value {
        case .array(let items):
            var out: [String] = []
            for item in items {
                guard case .string(let s) = item else {
                    throw ParseError(message: "\(associatedDomainsKey) holds something other than strings", line: 1)
                }
                out.append(s)
            }
            return out
        case .string(let s):
            // A provisioning profile often grants the capability as "*", not a list of domains.
            throw ParseError(message: "\(associatedDomainsKey) is the string \(JSONWriter.message(s)), not a list of domains (a profile grants the capability this way); give the app's .entitlements file or --entitlement", line: 1)
        default:
            throw ParseError(message: "\(associatedDomainsKey) is not an array of strings", line: 1)
        }
    }

    private struct Tag {
        var name: String
        var isClosing: Bool
        /// `<true/>`.
        var isEmpty: Bool
    }

    private struct Reader {
        let bytes: [UInt8]
        var i = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            // A UTF-8 byte-order mark.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        }

        func error(_ message: String) -> ParseError {
            ParseError(message: message, line: 1 + bytes[0..<min(i, bytes.count)].count { $0 == UInt8(ascii: "\n") })
        }

        mutating func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) { i += 1 }
        }

        func starts(_ s: String) -> Bool { bytes[i...].starts(with: Array(s.utf8)) }

        /// Skips white space, the XML declaration, a DOCTYPE and comments.
        mutating func skipMisc() throws(ParseError) {
            while true {
                skipSpace()
                if starts("<?") { try skip(past: "?>") } else if starts("<!--") { try skip(past: "-->") } else if starts("<!") { try skip(past: ">") } else { return }
            }
        }

        mutating func skip(past end: String) throws(ParseError) {
            let e = Array(end.utf8)
            while i < bytes.count {
                if bytes[i...].starts(with: e) { i += e.count; return }
                i += 1
            }
            throw error("unterminated markup (no \(end))")
        }

        mutating func tag() throws(ParseError) -> Tag {
            guard i < bytes.count, bytes[i] == UInt8(ascii: "<") else { throw error(i < bytes.count ? "expected a tag" : "unexpected end of file") }
            i += 1
            let closing = i < bytes.count && bytes[i] == UInt8(ascii: "/")
            if closing { i += 1 }
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: ">") { i += 1 }
            guard i < bytes.count else { throw error("unterminated tag") }
            var inner = bytes[start..<i]
            i += 1
            let empty = inner.last == UInt8(ascii: "/")
            if empty { inner = inner.dropLast() }
            // Attributes (`version="1.0"`) are not needed.
            let name = String(decoding: inner.prefix { ![0x20, 0x09, 0x0A, 0x0D].contains($0) }, as: UTF8.self)
            return Tag(name: name, isClosing: closing, isEmpty: empty)
        }

        /// Text up to the next `<`, entities decoded.
        mutating func text() throws(ParseError) -> String {
            let start = i
            while i < bytes.count, bytes[i] != UInt8(ascii: "<") { i += 1 }
            return try decode(bytes[start..<i])
        }

        func decode(_ raw: ArraySlice<UInt8>) throws(ParseError) -> String {
            guard raw.contains(UInt8(ascii: "&")) else { return String(decoding: raw, as: UTF8.self) }
            var out: [UInt8] = []
            var j = raw.startIndex
            while j < raw.endIndex {
                guard raw[j] == UInt8(ascii: "&") else { out.append(raw[j]); j += 1; continue }
                guard let semi = raw[j...].firstIndex(of: UInt8(ascii: ";")) else { throw error("an & without ;") }
                let entity = String(decoding: raw[(j + 1)..<semi], as: UTF8.self)
                switch entity {
                case "amp": out.append(UInt8(ascii: "&"))
                case "lt": out.append(UInt8(ascii: "<"))
                case "gt": out.append(UInt8(ascii: ">"))
                case "quot": out.append(UInt8(ascii: "\""))
                case "apos": out.append(UInt8(ascii: "'"))
                default:
                    let code: UInt32?
                    if entity.hasPrefix("#x") { code = UInt32(entity.dropFirst(2), radix: 16) } else if entity.hasPrefix("#") { code = UInt32(entity.dropFirst()) } else { code = nil }
                    guard let code, let scalar = Unicode.Scalar(code) else { throw error("unknown entity &\(entity);") }
                    out.append(contentsOf: Array(String(Character(scalar)).utf8))
                }
                j = semi + 1
            }
            return String(decoding: out, as: UTF8.self)
        }

        mutating func expectClose(_ name: String) throws(ParseError) {
            let t = try tag()
            guard t.isClosing, t.name == name else { throw error("expected </\(name)>, found <\(t.isClosing ? "/" : "")\(t.name)>") }
        }

        mutating func skipSpaceAndComments() throws(ParseError) {
            while true {
                skipSpace()
                if starts("<!--") { try skip(past: "-->") } else { return }
            }
        }

        mutating func value(_ open: Tag) throws(ParseError) -> PropertyListValue {
            guard !open.isClosing else { throw error("unexpected </\(open.name)>") }
            switch open.name {
            case "true", "false":
                if !open.isEmpty { try expectClose(open.name) }
                return .bool(open.name == "true")
            case "string", "integer", "real", "date", "data", "key":
                let content = open.isEmpty ? "" : try text()
                if !open.isEmpty { try expectClose(open.name) }
                switch open.name {
                case "string": return .string(content)
                case "integer": return .integer(content.filter { !$0.isWhitespace })
                case "real": return .real(content.filter { !$0.isWhitespace })
                case "date": return .date(content)
                case "data": return .data(content.filter { !$0.isWhitespace })
                default: throw error("a <key> outside a <dict>")
                }
            case "array":
                var items: [PropertyListValue] = []
                if open.isEmpty { return .array(items) }
                while true {
                    try skipSpaceAndComments()
                    let t = try tag()
                    if t.isClosing {
                        guard t.name == "array" else { throw error("expected </array>, found </\(t.name)>") }
                        return .array(items)
                    }
                    items.append(try value(t))
                }
            case "dict":
                var entries: [(String, PropertyListValue)] = []
                if open.isEmpty { return .dictionary(entries) }
                while true {
                    try skipSpaceAndComments()
                    let t = try tag()
                    if t.isClosing {
                        guard t.name == "dict" else { throw error("expected </dict>, found </\(t.name)>") }
                        return .dictionary(entries)
                    }
                    guard t.name == "key" else { throw error("expected <key> in a <dict>, found <\(t.name)>") }
                    let key = t.isEmpty ? "" : try text()
                    if !t.isEmpty { try expectClose("key") }
                    try skipSpaceAndComments()
                    entries.append((key, try value(try tag())))
                }
            default:
                throw error("unknown element <\(open.name)>")
            }
        }
    }
}
