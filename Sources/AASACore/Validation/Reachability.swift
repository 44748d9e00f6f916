/// Decides, conservatively, whether one component matches every URL another one matches.
/// Used to find components that can never be reached because an earlier one always decides
/// first. "Conservatively" means a `true` is always right; some real overlaps are not found.
enum Reachability {
    /// For each item, the index of the first earlier item that covers it (nil when none does),
    /// without comparing every pair: a file may have thousands of components, and the pairwise
    /// check ran for tens of seconds on one near the size limit. An earlier item can cover a
    /// later one only when it has no path constraint, or when the literal text its path starts
    /// with begins the later one's (every rule of ``coversPath(_:_:)`` implies that), so only
    /// those are compared.
    static func firstCovering<T>(_ items: [T], path: (T) -> PathPattern?, covers: (T, T) -> Bool) -> [Int?] {
        var unconstrained: [Int] = []
        var byLeadingLiterals: [String: [Int]] = [:]
        var result: [Int?] = []
        result.reserveCapacity(items.count)
        for (j, item) in items.enumerated() {
            let run = path(item).flatMap { $0.isMatchAll ? nil : leadingLiterals($0.base) }
            // Candidates: the unconstrained ones, and those whose leading literals are a prefix
            // of this item's (an item without a path can only be covered by the former).
            var candidates = unconstrained
            if let run {
                var prefix = String.UnicodeScalarView()
                candidates += byLeadingLiterals[""] ?? []
                for scalar in run.unicodeScalars {
                    prefix.append(scalar)
                    candidates += byLeadingLiterals[String(prefix)] ?? []
                }
            }
            candidates.sort()
            result.append(candidates.first { covers(items[$0], item) })
            if let run { byLeadingLiterals[run, default: []].append(j) } else if path(item)?.isMatchAll ?? true { unconstrained.append(j) }
        }
        return result
    }

    /// The literal characters a path pattern starts with, up to its first `*`, `?` or variable.
    private static func leadingLiterals(_ tokens: [PatternToken]) -> String {
        var scalars = String.UnicodeScalarView()
        for token in tokens {
            guard case .literal(let c) = token else { break }
            scalars.append(c)
        }
        return String(scalars)
    }

    static func covers(_ a: CompiledComponent, _ b: CompiledComponent) -> Bool {
        let aAll = (a.path?.isMatchAll ?? true) && (a.query?.isMatchAll ?? true) && (a.fragment?.isMatchAll ?? true)
        if aAll { return true }
        // Patterns compare text with text only when both see the URL the same way.
        guard a.percentEncoded == b.percentEncoded, a.caseSensitive == b.caseSensitive else { return false }
        return coversPath(a.path, b.path) && coversQuery(a.query, b.query) && coversPattern(a.fragment, b.fragment)
    }

    static func coversPath(_ a: PathPattern?, _ b: PathPattern?) -> Bool {
        guard let a, !a.isMatchAll else { return true }
        guard let b else { return false }
        if a.base == b.base && (a.matchesParent || !b.matchesParent) { return true }
        let slash: PatternToken = .literal("/")
        // `/x/*` covers `/x`, `/x/…` and therefore anything that starts with the literal `x/`.
        if a.matchesParent, a.base.allSatisfy(\.isLiteral) {
            if b.base == a.base { return true }
            // `a.base + [slash]` without making the array: this runs for every pair of
            // components, and a file may have thousands.
            if b.base.count > a.base.count, b.base[a.base.count] == slash, b.base.starts(with: a.base) { return true }
        }
        // `prefix*` covers everything that starts with `prefix` literally.
        if !a.matchesParent, let prefix = literalPrefixBeforeFinalStar(a.base) {
            return b.base.starts(with: prefix)
        }
        return false
    }

    static func coversPattern(_ a: Pattern?, _ b: Pattern?) -> Bool {
        guard let a, !a.isMatchAll else { return true }
        guard let b else { return false }
        if a.tokens == b.tokens { return true }
        if let prefix = literalPrefixBeforeFinalStar(a.tokens) { return b.tokens.starts(with: prefix) }
        return false
    }

    static func coversQuery(_ a: QueryMatcher?, _ b: QueryMatcher?) -> Bool {
        guard let a, !a.isMatchAll else { return true }
        guard let b else { return false }
        switch (a, b) {
        case (.string(let pa), .string(let pb)):
            return coversPattern(pa, pb)
        case (.items(let ia), .items(let ib)):
            // Each item `a` constrains must be constrained at least as tightly by `b`.
            return ia.allSatisfy { itemA in
                itemA.pattern.isMatchAll || ib.contains { $0.name == itemA.name && coversPattern(itemA.pattern, $0.pattern) }
            }
        default:
            return false
        }
    }

    /// For tokens that are literals followed by one final `*`, the literals.
    private static func literalPrefixBeforeFinalStar(_ tokens: [PatternToken]) -> ArraySlice<PatternToken>? {
        guard tokens.last == .star else { return nil }
        let prefix = tokens.dropLast()
        return prefix.allSatisfy(\.isLiteral) ? prefix : nil
    }
}
