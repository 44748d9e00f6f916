/// The variables a pattern may reference as `$(name)`: the document's
/// `applinks.substitutionVariables` and the built-ins of docs/aasa-reference.md §1.6.
public struct SubstitutionVariables: Sendable {
    public enum Definition: Sendable {
        /// One character from a set (the ASCII built-ins such as `$(digit)`).
        case characterClass(ASCIISet)
        /// One of several strings; each may hold `?` and `*`.
        case alternatives([String])
    }

    /// The document's own variables. A name that is also a built-in shadows it (the validator
    /// warns); Apple does not document which wins, and the document's own is the least surprising.
    public var custom: [String: [String]]

    public init(_ custom: [String: [String]] = [:]) {
        self.custom = custom
    }

    public func isDefined(_ name: String) -> Bool {
        custom[name] != nil || SubstitutionVariables.builtins[name] != nil
    }

    public func lookup(_ name: String) -> Definition? {
        if let values = custom[name] { return .alternatives(values) }
        return SubstitutionVariables.builtins[name]
    }

    public static let builtinNames: [String] = ["alpha", "upper", "lower", "alnum", "digit", "xdigit", "region", "lang"]

    static let builtins: [String: Definition] = {
        let upper = Array(UInt8(ascii: "A")...UInt8(ascii: "Z"))
        let lower = Array(UInt8(ascii: "a")...UInt8(ascii: "z"))
        let digit = Array(UInt8(ascii: "0")...UInt8(ascii: "9"))
        let hexLetters = Array(UInt8(ascii: "A")...UInt8(ascii: "F")) + Array(UInt8(ascii: "a")...UInt8(ascii: "f"))
        return [
            "alpha": .characterClass(ASCIISet(upper + lower)),
            "upper": .characterClass(ASCIISet(upper)),
            "lower": .characterClass(ASCIISet(lower)),
            "alnum": .characterClass(ASCIISet(upper + lower + digit)),
            "digit": .characterClass(ASCIISet(digit)),
            "xdigit": .characterClass(ASCIISet(digit + hexLetters)),
            "region": .alternatives(ISOCodes.regions),
            "lang": .alternatives(ISOCodes.languages),
        ]
    }()
}

extension ASCIISet {
    /// The set as seen through case folding: an upper-case letter is replaced by its lower case,
    /// so `$(upper)` accepts `q` when the component is case-insensitive (oracle, docs/aasa-reference.md §1.6).
    var folded: ASCIISet {
        var out = ASCIISet([])
        for b in UInt8(0)..<128 where contains(UInt32(b)) {
            out.insert(b >= 0x41 && b <= 0x5A ? b + 0x20 : b)
        }
        return out
    }
}
