/// Decides, conservatively, whether one component matches every URL another one matches.
/// Used to find components that can never be reached because an earlier one always decides
/// first. "Conservatively" means a `true` is always right; some real overlaps are not found.
enum Reachability {
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
