/// What the system does with a URL for one app.
public enum Decision: String, Sendable {
    /// A component (or legacy path) matched: the app opens the link.
    case match
    /// A component with `exclude: true` (or a `NOT ` path) matched first: the link is blocked.
    case exclude
    /// Nothing decided: the link opens in the browser.
    case noMatch = "no_match"
}

/// The decision for one app, and which `details` entry and component decided it.
public struct AppDecision: Sendable, Equatable {
    public var app: String
    public var decision: Decision
    /// 0-based index into `applinks.details` (for the legacy dictionary form, in document order).
    public var detail: Int?
    /// 0-based index into that entry's `components`, or into its legacy `paths`.
    public var component: Int?

    public init(app: String, decision: Decision, detail: Int? = nil, component: Int? = nil) {
        self.app = app
        self.decision = decision
        self.detail = detail
        self.component = component
    }
}

extension AASADocument {
    /// Decides `url` for every `applinks` app in the document (or only `apps`, in the order
    /// given), as iOS does (docs/aasa-reference.md §2.8).
    ///
    /// - Parameter domain: the host the document is served from; defaults to the URL's host.
    ///   A URL on any other host decides `no_match` for every app, as on a device.
    public func decide(_ url: URLParts, domain: String? = nil, apps: [String]? = nil) -> [AppDecision] {
        let apps = apps ?? appLinksAppIDs
        if let domain, URLParts.normalizeHost(domain) != url.host {
            return apps.map { AppDecision(app: $0, decision: .noMatch) }
        }
        var input = MatchInput(url)
        return apps.map { decide(app: $0, input: &input) }
    }

    private func decide(app: String, input: inout MatchInput) -> AppDecision {
        guard let details = appLinks?.details else { return AppDecision(app: app, decision: .noMatch) }
        // Details in array order; the first entry that decides for the app wins. An entry that
        // lists the app but matches nothing lets later entries decide (docs/aasa-reference.md §2.1.3: UNCERTAIN;
        // both simulators do this).
        for (d, detail) in details.enumerated() where detail.appIDs.contains(app) {
            switch detail.rules {
            case .components(let components):
                for (c, component) in components.enumerated() where component.matches(&input) {
                    return AppDecision(app: app, decision: component.exclude ? .exclude : .match, detail: d, component: c)
                }
            case .paths(let paths):
                let path = input.variant(percentEncoded: true, caseSensitive: true).path
                for (p, entry) in paths.enumerated() where entry.pattern.matches(normalizedPath: path) {
                    return AppDecision(app: app, decision: entry.isExclusion ? .exclude : .match, detail: d, component: p)
                }
            case .none:
                break
            }
        }
        return AppDecision(app: app, decision: .noMatch)
    }
}

/// What decided an ``AppDecision``: a component, or a legacy `paths` entry (whose index is the
/// decision's `component`, docs/validation.md, `aasa match`), named so that text output can say
/// which.
public enum DecidingRule: Sendable, Equatable {
    case component(Int)
    /// The entry's index in `paths` and its text as written (`NOT ` included).
    case path(Int, text: String)
}

extension AASADocument {
    /// The component or legacy path that decided `decision`, or nil when nothing matched.
    public func rule(deciding decision: AppDecision) -> DecidingRule? {
        guard let d = decision.detail, let c = decision.component,
              let details = appLinks?.details, details.indices.contains(d) else { return nil }
        switch details[d].rules {
        case .components: return .component(c)
        case .paths(let paths): return paths.indices.contains(c) ? .path(c, text: paths[c].text) : nil
        case .none: return nil
        }
    }
}

extension DecidingRule {
    /// `component 2`, or `path 1 "NOT /private/*"`: how text output names the rule.
    public var description: String {
        switch self {
        case .component(let c): return "component \(c)"
        case .path(let p, let text): return "path \(p) \(JSONWriter.message(text))"
        }
    }
}

extension CompiledComponent {
    /// A component matches when every part it (or its defaults) specifies matches; a part left
    /// out is `*` (docs/aasa-reference.md §1.4).
    func matches(_ input: inout MatchInput) -> Bool {
        let v = input.variant(percentEncoded: percentEncoded, caseSensitive: caseSensitive)
        if let path, !path.matches(normalizedPath: v.path) { return false }
        if let fragment, !fragment.matches(v.fragment) { return false }
        switch query {
        case nil:
            return true
        case .string(let pattern)?:
            return pattern.matches(v.query)
        case .items(let items)?:
            for (name, pattern) in items {
                let folded = caseSensitive ? Array(name.unicodeScalars) : Pattern.fold(Array(name.unicodeScalars))
                var found = false
                for item in v.queryItems where item.name == folded {
                    found = true
                    if !pattern.matches(item.value) { return false }
                }
                if !found, !pattern.matches([]) { return false }
            }
            return true
        }
    }
}
