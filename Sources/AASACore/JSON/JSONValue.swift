/// A parsed JSON value that remembers where it came from.
///
/// Offsets are byte offsets into the parsed bytes; a ``SourceMap`` turns them into line and column.
public struct JSONValue: Sendable {
    public enum Kind: Sendable {
        case object([JSONMember])
        case array([JSONValue])
        case string(String)
        /// The number exactly as written; AASA files never need its numeric value.
        case number(String)
        case bool(Bool)
        case null
    }

    public var kind: Kind
    /// Offset of the value's first byte.
    public var offset: Int
    /// Offset just past the value's last byte.
    public var endOffset: Int

    public init(_ kind: Kind, offset: Int, endOffset: Int) {
        self.kind = kind
        self.offset = offset
        self.endOffset = endOffset
    }

    /// The JSON type's name as a user would say it, for messages such as "expected a string, found a number".
    public var typeName: String {
        switch kind {
        case .object: return "an object"
        case .array: return "an array"
        case .string: return "a string"
        case .number: return "a number"
        case .bool: return "a boolean"
        case .null: return "null"
        }
    }

    public var stringValue: String? {
        if case .string(let s) = kind { return s }
        return nil
    }

    public var boolValue: Bool? {
        if case .bool(let b) = kind { return b }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = kind { return a }
        return nil
    }

    public var objectMembers: [JSONMember]? {
        if case .object(let m) = kind { return m }
        return nil
    }

    /// The members a reader of the object sees: for a duplicated key only its last occurrence,
    /// at the place of that last occurrence.
    public var effectiveMembers: [JSONMember]? {
        guard case .object(let members) = kind else { return nil }
        var last: [String: Int] = [:]
        for (i, m) in members.enumerated() { last[m.key] = i }
        if last.count == members.count { return members }
        return members.enumerated().filter { last[$0.element.key] == $0.offset }.map(\.element)
    }

    /// The value of `key` in an object. With duplicate keys the last one wins, as with
    /// Foundation's JSONSerialization, which fills a dictionary in document order.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = kind else { return nil }
        return members.last(where: { $0.key == key })?.value
    }
}

public struct JSONMember: Sendable {
    public var key: String
    /// Offset of the key's opening quote.
    public var keyOffset: Int
    public var value: JSONValue

    public init(key: String, keyOffset: Int, value: JSONValue) {
        self.key = key
        self.keyOffset = keyOffset
        self.value = value
    }
}
