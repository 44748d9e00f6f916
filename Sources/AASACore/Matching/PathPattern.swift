/// A pattern for the URL path, with the path rules swcutil applies (docs/aasa-reference.md §2.3, oracle):
/// leading slashes are optional and collapse, trailing slashes do not count on either side,
/// and a pattern ending in `/*` also matches the path without that last segment.
public struct PathPattern: Sendable {
    public let pattern: Pattern
    /// The pattern with its leading and trailing slashes (and a final `/*`) removed.
    let base: [PatternToken]
    /// True when the pattern ended in `/*`: `/buy/*` matches `/buy`, `/buy/` and `/buy/42`.
    let matchesParent: Bool

    public init(_ text: String, caseSensitive: Bool = true, variables: SubstitutionVariables = SubstitutionVariables()) {
        let (tokens, problems) = PatternToken.tokenize(text, variables: variables)
        var base = PathPattern.trimmingSlashes(tokens)
        let slashStar: [PatternToken] = [.literal("/"), .star]
        let matchesParent = base.count >= 2 && Array(base.suffix(2)) == slashStar
        if matchesParent { base.removeLast(2) }
        self.base = caseSensitive ? base : base.map { $0.folded }
        self.matchesParent = matchesParent
        self.pattern = Pattern(text: text, tokens: base, problems: problems,
                               optionalSuffix: matchesParent ? slashStar : [],
                               caseSensitive: caseSensitive, variables: variables)
    }

    public var text: String { pattern.text }
    public var isMatchAll: Bool { pattern.isMatchAll }

    /// Whether `path` (as from ``URLParts/pathScalars(percentEncoded:caseSensitive:)``) matches.
    public func matches(normalizedPath path: [Unicode.Scalar]) -> Bool {
        pattern.matches(path)
    }

    static func trimmingSlashes(_ tokens: [PatternToken]) -> [PatternToken] {
        var lo = 0
        var hi = tokens.count
        while lo < hi, tokens[lo] == .literal("/") { lo += 1 }
        while hi > lo, tokens[hi - 1] == .literal("/") { hi -= 1 }
        return Array(tokens[lo..<hi])
    }

    /// A URL path with leading and trailing slashes removed: `/` and the empty path both become
    /// empty, and `/buy//` becomes `buy`.
    static func normalize(_ path: [Unicode.Scalar]) -> [Unicode.Scalar] {
        var lo = 0
        var hi = path.count
        while lo < hi, path[lo] == "/" { lo += 1 }
        while hi > lo, path[hi - 1] == "/" { hi -= 1 }
        return Array(path[lo..<hi])
    }
}

/// The `?` key of a component, compiled.
public enum QueryMatcher: Sendable {
    /// A pattern for the whole query string after `?`; an absent query reads as "".
    case string(Pattern)
    /// Named items. Every item named must match; a missing item, or one without a value, reads
    /// as ""; when a name repeats, every occurrence must match (docs/aasa-reference.md §2.4, oracle).
    case items([(name: String, pattern: Pattern)])

    public var isMatchAll: Bool {
        switch self {
        case .string(let p): return p.isMatchAll
        case .items(let items): return items.allSatisfy { $0.pattern.isMatchAll }
        }
    }
}
