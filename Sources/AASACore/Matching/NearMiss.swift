/// Why a URL got `no_match` for an app: the component it came closest to (of those without
/// `exclude`, one whose path matches before one whose path does not, then the one it misses by
/// the fewest parts, the first of equals) and, for each part it misses, why. A part that would
/// match with the other `caseSensitive` or `percentEncoded` value says so: those are the misses
/// that look like matches to a person reading the file.
public struct NearMiss: Sendable, Equatable {
    /// 0-based index into `applinks.details`.
    public var detail: Int
    /// 0-based index into that entry's `components`.
    public var component: Int
    public var reasons: [String]
}

extension AASADocument {
    /// The closest component of `app`'s entries for a URL that none of them matched; nil when no
    /// entry lists the app with components (legacy `paths` compare the path alone: the text
    /// output quotes none of them), or when a component does match.
    public func nearMiss(_ url: URLParts, app: String) -> NearMiss? {
        guard let details = appLinks?.details else { return nil }
        var input = MatchInput(url)
        var best: (miss: NearMiss, rank: (Int, Int))?
        for (d, detail) in details.enumerated() where detail.appIDs.contains(app) {
            guard case .components(let components) = detail.rules else { continue }
            // An exclusion would only have blocked the link: it is not what the URL missed.
            for (c, component) in components.enumerated() where !component.exclude {
                let (reasons, pathMissed) = component.misses(&input)
                if reasons.isEmpty { return nil }
                // A component whose path matches is closer than any whose path does not.
                let rank = (pathMissed ? 1 : 0, reasons.count)
                if best == nil || rank < best!.rank {
                    best = (NearMiss(detail: d, component: c, reasons: reasons), rank)
                }
            }
        }
        return best?.miss
    }
}

extension CompiledComponent {
    /// One reason per part (path, fragment, query) that does not match, empty when the component
    /// matches; and whether the path is one of them.
    func misses(_ input: inout MatchInput) -> (reasons: [String], pathMissed: Bool) {
        let v = input.variant(percentEncoded: percentEncoded, caseSensitive: caseSensitive)
        let url = input.url
        var reasons: [String] = []
        let pathMissed = path.map { !$0.matches(normalizedPath: v.path) } ?? false
        if let path, pathMissed {
            reasons.append(explain("the path \(JSONWriter.message(url.path))", pattern: path.text, input: &input) { c, v in
                c.path?.matches(normalizedPath: v.path) ?? true
            })
        }
        if let fragment, !fragment.matches(v.fragment) {
            let what = url.fragment.map { "the fragment \(JSONWriter.message($0))" } ?? "the empty fragment (the URL has none)"
            reasons.append(explain(what, pattern: fragment.text, input: &input) { c, v in c.fragment?.matches(v.fragment) ?? true })
        }
        switch query {
        case nil:
            break
        case .string(let pattern)?:
            if !pattern.matches(v.query) {
                let what = url.query.map { "the query \(JSONWriter.message($0))" } ?? "the empty query (the URL has none)"
                reasons.append(explain(what, pattern: pattern.text, input: &input) { c, v in
                    if case .string(let p)? = c.query { return p.matches(v.query) }
                    return true
                })
            }
        case .items(let items)?:
            for (i, (name, pattern)) in items.enumerated() {
                let folded = caseSensitive ? Array(name.unicodeScalars) : Pattern.fold(Array(name.unicodeScalars))
                let values = v.queryItems.filter { $0.name == folded }.map(\.value)
                if values.isEmpty {
                    if !pattern.matches([]) {
                        reasons.append("the URL has no query item \(JSONWriter.message(name)), which the component requires (\(JSONWriter.message(pattern.text)))")
                    }
                    continue
                }
                guard let bad = values.first(where: { !pattern.matches($0) }) else { continue }
                let what = "query item \(JSONWriter.message(name)) = \(JSONWriter.message(String(String.UnicodeScalarView(bad))))"
                reasons.append(explain(what, pattern: pattern.text, input: &input) { c, v in
                    guard case .items(let others)? = c.query, others.indices.contains(i) else { return true }
                    let (n, p) = others[i]
                    let key = c.caseSensitive ? Array(n.unicodeScalars) : Pattern.fold(Array(n.unicodeScalars))
                    let found = v.queryItems.filter { $0.name == key }
                    return !found.isEmpty && found.allSatisfy { p.matches($0.value) }
                })
            }
        }
        return (reasons, pathMissed)
    }

    /// `WHAT does not match PATTERN`, or, when the part matches with the other `caseSensitive`
    /// (then `percentEncoded`) value, that it matches only so.
    private func explain(_ what: String, pattern: String, input: inout MatchInput,
                         matches: (CompiledComponent, MatchInput.Variant) -> Bool) -> String {
        let quoted = JSONWriter.message(pattern)
        if caseSensitive {
            let other = recompiled(caseSensitive: false, percentEncoded: percentEncoded)
            if matches(other, input.variant(percentEncoded: percentEncoded, caseSensitive: false)) {
                return "\(what) matches \(quoted) only ignoring case, and caseSensitive is true"
            }
        }
        let other = recompiled(caseSensitive: caseSensitive, percentEncoded: !percentEncoded)
        if matches(other, input.variant(percentEncoded: !percentEncoded, caseSensitive: caseSensitive)) {
            return percentEncoded
                ? "\(what) matches \(quoted) only once percent-decoded, and percentEncoded is true (the URL is compared as written)"
                : "\(what) matches \(quoted) only as written, percent-encoded, and percentEncoded is false (the URL is decoded first)"
        }
        return "\(what) does not match \(quoted)"
    }

    private func recompiled(caseSensitive: Bool, percentEncoded: Bool) -> CompiledComponent {
        var f = fields
        f.caseSensitive = caseSensitive
        f.percentEncoded = percentEncoded
        return CompiledComponent(fields: f, variables: variables, jsonPath: jsonPath, offset: offset)
    }
}
