/// A compiled AASA pattern: `*` (any run, crossing `/`), `?` (one character), literal
/// characters, and `$(name)` substitution variables. There is no escape syntax.
///
/// The pattern is compiled to a small NFA and run as a set of states, so matching costs at most
/// (pattern states × input length) steps whatever the pattern: `*a*a*a*…b` cannot blow up the
/// way a backtracking regex does. "Character" here is a Unicode scalar.
public struct Pattern: Sendable {
    /// The pattern as written.
    public let text: String
    public let caseSensitive: Bool
    /// The pattern's tokens, with literals folded to lower case when it is case-insensitive.
    public let tokens: [PatternToken]
    /// Problems found while compiling: unterminated `$(`, undefined variables.
    public let problems: [PatternProblem]

    private let nodes: [Node]
    private let start: Int

    /// True when the pattern matches every input (it is empty of everything but `*`).
    public var isMatchAll: Bool {
        !tokens.isEmpty && tokens.allSatisfy { $0 == .star } && optionalSuffix.isEmpty
    }

    /// Tokens that may be present or absent at the end (the path rule `/x/*` also matching `/x`).
    let optionalSuffix: [PatternToken]

    enum Node: Sendable {
        case accept
        case scalar(UInt32, next: Int)
        case any(next: Int)
        /// Consumes any scalar and stays; also moves on to `next` without consuming.
        case star(next: Int)
        case set(ASCIISet, next: Int)
        case split([Int])
        /// Matches nothing: an undefined variable.
        case never
    }

    /// Compiles `text`. `optionalSuffix` is matched zero or one time at the end.
    init(text: String, tokens: [PatternToken], problems: [PatternProblem], optionalSuffix: [PatternToken] = [],
         caseSensitive: Bool, variables: SubstitutionVariables) {
        self.text = text
        self.caseSensitive = caseSensitive
        self.tokens = caseSensitive ? tokens : tokens.map { $0.folded }
        self.optionalSuffix = caseSensitive ? optionalSuffix : optionalSuffix.map { $0.folded }
        self.problems = problems
        var builder = NFABuilder(caseSensitive: caseSensitive, variables: variables)
        var next = 0 // the accept node
        if !self.optionalSuffix.isEmpty {
            let suffixStart = builder.chain(self.optionalSuffix, next: 0)
            next = builder.add(.split([0, suffixStart]))
        }
        self.start = builder.chain(self.tokens, next: next)
        self.nodes = builder.nodes
    }

    /// Compiles a pattern for the query, the fragment or a query item.
    public init(_ text: String, caseSensitive: Bool = true, variables: SubstitutionVariables = SubstitutionVariables()) {
        let (tokens, problems) = PatternToken.tokenize(text, variables: variables)
        self.init(text: text, tokens: tokens, problems: problems, caseSensitive: caseSensitive, variables: variables)
    }

    /// Whether the whole of `input` matches. `input` must already be folded when the
    /// pattern is case-insensitive (see ``fold(_:)``).
    public func matches(_ input: [Unicode.Scalar]) -> Bool {
        if isMatchAll { return true }
        var current: [Int] = []
        var next: [Int] = []
        var stack: [Int] = []
        var mark = [Int](repeating: -1, count: nodes.count)
        var generation = 0

        func add(_ state: Int, to set: inout [Int]) {
            stack.append(state)
            while let s = stack.popLast() {
                if mark[s] == generation { continue }
                mark[s] = generation
                switch nodes[s] {
                case .split(let targets):
                    stack.append(contentsOf: targets)
                case .star(let n):
                    set.append(s)
                    stack.append(n)
                case .never:
                    break
                default:
                    set.append(s)
                }
            }
        }

        add(start, to: &current)
        for scalar in input {
            generation += 1
            next.removeAll(keepingCapacity: true)
            let c = scalar.value
            for s in current {
                switch nodes[s] {
                case .scalar(let v, let n): if v == c { add(n, to: &next) }
                case .any(let n): add(n, to: &next)
                case .star: add(s, to: &next)
                case .set(let set, let n): if set.contains(c) { add(n, to: &next) }
                case .accept, .split, .never: break
                }
            }
            swap(&current, &next)
            if current.isEmpty { return false }
        }
        return current.contains { if case .accept = nodes[$0] { return true } else { return false } }
    }

    /// Case folding used on both sides when `caseSensitive` is false: ASCII letters, and other
    /// scalars whose lower-case form is a single scalar (Apple documents only ASCII; docs/aasa-reference.md §2.6).
    public static func fold(_ scalar: Unicode.Scalar) -> Unicode.Scalar {
        let v = scalar.value
        if v < 0x80 {
            if v >= 0x41 && v <= 0x5A { return Unicode.Scalar(UInt8(v + 0x20)) }
            return scalar
        }
        let lower = scalar.properties.lowercaseMapping.unicodeScalars
        if lower.count == 1, let first = lower.first { return first }
        return scalar
    }

    public static func fold(_ scalars: [Unicode.Scalar]) -> [Unicode.Scalar] { scalars.map(fold) }
}

/// A piece of a pattern.
public enum PatternToken: Sendable, Hashable {
    case literal(Unicode.Scalar)
    /// `?`: exactly one character.
    case any
    /// `*`: zero or more characters.
    case star
    /// `$(name)`.
    case variable(String)

    var folded: PatternToken {
        if case .literal(let s) = self { return .literal(Pattern.fold(s)) }
        return self
    }

    var isLiteral: Bool {
        if case .literal = self { return true }
        return false
    }

    /// Splits pattern text into tokens. A `$(` with no closing `)` (or with `$` or `(` before
    /// it) is kept as literal text and reported; an unknown name compiles to "never matches".
    static func tokenize(_ text: String, variables: SubstitutionVariables?) -> ([PatternToken], [PatternProblem]) {
        let scalars = Array(text.unicodeScalars)
        var tokens: [PatternToken] = []
        // At most one token per scalar: one allocation, not a regrowth every few tokens.
        tokens.reserveCapacity(scalars.count)
        var problems: [PatternProblem] = []
        var i = 0
        while i < scalars.count {
            let s = scalars[i]
            if s == "$", i + 1 < scalars.count, scalars[i + 1] == "(" {
                var j = i + 2
                while j < scalars.count, scalars[j] != ")", scalars[j] != "$", scalars[j] != "(" { j += 1 }
                if j < scalars.count, scalars[j] == ")" {
                    var name = String.UnicodeScalarView()
                    name.append(contentsOf: scalars[(i + 2)..<j])
                    let nameString = String(name)
                    tokens.append(.variable(nameString))
                    if let variables, !variables.isDefined(nameString) {
                        problems.append(.undefinedVariable(nameString))
                    }
                    i = j + 1
                    continue
                }
                problems.append(.unterminatedVariable)
                tokens.append(.literal("$"))
                i += 1
                continue
            }
            switch s {
            case "*": tokens.append(.star)
            case "?": tokens.append(.any)
            default: tokens.append(.literal(s))
            }
            i += 1
        }
        return (tokens, problems)
    }
}

public enum PatternProblem: Sendable, Hashable {
    case unterminatedVariable
    case undefinedVariable(String)
}

/// A set of ASCII scalars, for the built-in one-character variables.
public struct ASCIISet: Sendable, Hashable {
    var low: UInt64 = 0
    var high: UInt64 = 0

    init(_ scalars: some Sequence<UInt8>) {
        for b in scalars { insert(b) }
    }

    mutating func insert(_ b: UInt8) {
        if b < 64 { low |= 1 << UInt64(b) } else if b < 128 { high |= 1 << UInt64(b - 64) }
    }

    func contains(_ v: UInt32) -> Bool {
        if v < 64 { return low & (1 << UInt64(v)) != 0 }
        if v < 128 { return high & (1 << UInt64(v - 64)) != 0 }
        return false
    }
}

/// Builds NFA nodes from the end of a pattern towards its start: each node knows its successor.
private struct NFABuilder {
    var nodes: [Pattern.Node] = [.accept]
    let caseSensitive: Bool
    let variables: SubstitutionVariables

    mutating func add(_ node: Pattern.Node) -> Int {
        nodes.append(node)
        return nodes.count - 1
    }

    mutating func chain(_ tokens: [PatternToken], next: Int) -> Int {
        var next = next
        for token in tokens.reversed() {
            next = node(for: token, next: next)
        }
        return next
    }

    mutating func node(for token: PatternToken, next: Int) -> Int {
        switch token {
        case .literal(let s): return add(.scalar(s.value, next: next))
        case .any: return add(.any(next: next))
        case .star: return add(.star(next: next))
        case .variable(let name):
            switch variables.lookup(name) {
            case nil:
                return add(.never)
            case .characterClass(let set)?:
                return add(.set(caseSensitive ? set : set.folded, next: next))
            case .alternatives(let values)?:
                // Values may hold `?` and `*` but no variables (docs/aasa-reference.md §1.6).
                var starts: [Int] = []
                var seen: Set<[PatternToken]> = []
                for value in values {
                    var tokens = PatternToken.tokenize(value, variables: nil).0.flatMap(\.literalIfVariable)
                    if !caseSensitive { tokens = tokens.map { $0.folded } }
                    if seen.insert(tokens).inserted { starts.append(chain(tokens, next: next)) }
                }
                return starts.isEmpty ? add(.never) : add(.split(starts))
            }
        }
    }
}

private extension PatternToken {
    /// A variable reference inside a variable's value is not expanded: it stands for its own text.
    var literalIfVariable: [PatternToken] {
        guard case .variable(let name) = self else { return [self] }
        return "$(\(name))".unicodeScalars.map { .literal($0) }
    }
}
