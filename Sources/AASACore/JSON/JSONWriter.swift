/// Writes JSON text. Small on purpose: the commands and the server's admin endpoints need
/// compact, deterministic output (keys in the order given), and the core uses no Foundation.
public struct JSONWriter: Sendable {
    public private(set) var output = ""
    private var needsComma: [Bool] = [false]

    public init() {}

    /// `s` as a JSON string literal, escaping what RFC 8259 §7 requires plus, when `htmlSafe`,
    /// `<`, `>` and `&` (so the text is also safe inside an HTML `<script>` block), and
    /// U+2028/U+2029. Messages for people use `htmlSafe: false`: they read `"<a>"`, not `"\u003Ca\u003E"`.
    public static func quoted(_ s: String, htmlSafe: Bool = true) -> String {
        var out = "\""
        out.reserveCapacity(s.utf8.count + 2)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<", ">", "&":
                if htmlSafe { out += "\\u" + hex(scalar.value, width: 4) } else { out.unicodeScalars.append(scalar) }
            case "\u{2028}", "\u{2029}":
                out += "\\u" + hex(scalar.value, width: 4)
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u" + hex(scalar.value, width: 4)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
        return out
    }

    /// `s` quoted for a message a person reads (see ``quoted(_:htmlSafe:)``).
    public static func message(_ s: String) -> String { quoted(s, htmlSafe: false) }

    private var pendingKey = false

    /// Puts the separator a new value needs: none right after a key, a comma after a sibling.
    private mutating func prepareValue() {
        if pendingKey {
            pendingKey = false
        } else if needsComma[needsComma.count - 1] {
            output += ","
        }
        needsComma[needsComma.count - 1] = true
    }

    public mutating func beginObject() { prepareValue(); output += "{"; needsComma.append(false) }
    public mutating func endObject() { needsComma.removeLast(); output += "}" }
    public mutating func beginArray() { prepareValue(); output += "["; needsComma.append(false) }
    public mutating func endArray() { needsComma.removeLast(); output += "]" }

    /// Writes `"name":` inside an object; the value written next belongs to it.
    public mutating func key(_ name: String) {
        prepareValue()
        output += JSONWriter.quoted(name) + ":"
        pendingKey = true
    }

    public mutating func value(_ s: String?) { raw(s.map { JSONWriter.quoted($0) } ?? "null") }
    public mutating func value(_ n: Int?) { raw(n.map(String.init) ?? "null") }
    public mutating func value(_ b: Bool) { raw(b ? "true" : "false") }
    public mutating func null() { raw("null") }

    /// Writes text that is already JSON.
    public mutating func raw(_ json: String) {
        prepareValue()
        output += json
    }
}
