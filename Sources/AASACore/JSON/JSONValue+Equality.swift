extension JSONValue {
    /// Whether two values mean the same to a reader: objects compared as sets of members (key
    /// order and, for duplicate keys, the shadowed occurrences do not matter), arrays in order,
    /// numbers by value. Source positions are ignored. Used to compare the CDN's copy of a file
    /// with the origin's (docs/check.md, `aasa check`, its `cdn` step).
    public func isSameValue(as other: JSONValue) -> Bool {
        switch (kind, other.kind) {
        case (.object, .object):
            let a = effectiveMembers ?? [], b = other.effectiveMembers ?? []
            guard a.count == b.count else { return false }
            var byKey: [String: JSONValue] = [:]
            for m in b { byKey[m.key] = m.value }
            return a.allSatisfy { m in byKey[m.key].map { m.value.isSameValue(as: $0) } ?? false }
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isSameValue(as: $1) }
        case (.string(let a), .string(let b)):
            return a == b
        case (.number(let a), .number(let b)):
            if a == b { return true }
            guard let x = Double(a), let y = Double(b) else { return false }
            return x == y
        case (.bool(let a), .bool(let b)):
            return a == b
        case (.null, .null):
            return true
        default:
            return false
        }
    }
}
