/// An `apple-app-site-association` document as a device would read it: every service it
/// declares, with `applinks` patterns compiled once so matching never re-parses them.
///
/// A document is built by ``AASAFile`` from bytes; fields that had the wrong type are left out,
/// as the device leaves them out, and the problem is a ``Diagnostic`` of the file.
public struct AASADocument: Sendable {
    public var appLinks: AppLinks?
    /// `webcredentials`, `appclips`, `activitycontinuation` and `authsrv`: each a list of app IDs.
    public var appLists: [AppListService: [String]]

    public init(appLinks: AppLinks? = nil, appLists: [AppListService: [String]] = [:]) {
        self.appLinks = appLinks
        self.appLists = appLists
    }

    /// Every app the document names for `applinks`, in order of first appearance.
    public var appLinksAppIDs: [String] {
        var seen: Set<String> = []
        var out: [String] = []
        for detail in appLinks?.details ?? [] {
            for app in detail.appIDs where seen.insert(app).inserted { out.append(app) }
        }
        return out
    }
}

/// The services that hold a plain `{"apps": [...]}` list.
public enum AppListService: String, Sendable, CaseIterable {
    case webCredentials = "webcredentials"
    case appClips = "appclips"
    case activityContinuation = "activitycontinuation"
    /// Listed as an entitlement service by Apple; its AASA shape is unverified (docs/aasa-reference.md §1.1).
    case authServices = "authsrv"
}

public struct AppLinks: Sendable {
    public var details: [AppLinksDetail]
    /// `applinks.defaults`: component keys applied under every detail's own defaults.
    public var defaults: ComponentFields
    public var substitutionVariables: [String: [String]]

    public init(details: [AppLinksDetail] = [], defaults: ComponentFields = ComponentFields(),
                substitutionVariables: [String: [String]] = [:]) {
        self.details = details
        self.defaults = defaults
        self.substitutionVariables = substitutionVariables
    }
}

/// One entry of `applinks.details`.
public struct AppLinksDetail: Sendable {
    /// The apps this entry applies to: `appIDs` when the key is present (even empty), else
    /// `[appID]`. swcutil ignores `appID` whenever `appIDs` is present (docs/aasa-reference.md §1.3, oracle).
    public var appIDs: [String]
    public var rules: Rules
    /// `details[].defaults`, laid over `applinks.defaults`.
    public var defaults: ComponentFields
    /// Where the entry is in the file, for diagnostics.
    public var path: JSONPath
    /// Byte offset of each app ID string, parallel to `appIDs` (for diagnostics).
    public var appIDOffsets: [Int]

    public enum Rules: Sendable {
        /// `components`, each already merged over the defaults and compiled.
        case components([CompiledComponent])
        /// Legacy `paths`: read only when `components` is not an array.
        case paths([LegacyPath])
        /// Neither: the entry yields no pattern list and matches nothing.
        case none
    }

    public init(appIDs: [String], appIDOffsets: [Int] = [], rules: Rules, defaults: ComponentFields, path: JSONPath) {
        self.appIDs = appIDs
        self.appIDOffsets = appIDOffsets.count == appIDs.count ? appIDOffsets : Array(repeating: 0, count: appIDs.count)
        self.rules = rules
        self.defaults = defaults
        self.path = path
    }
}

/// The keys of a component (or of a `defaults` dictionary) as written, before merging.
/// A key is nil when absent, or when its value had a type the device cannot use.
public struct ComponentFields: Sendable, Equatable {
    public var path: String?
    public var query: QueryField?
    public var fragment: String?
    public var exclude: Bool?
    public var caseSensitive: Bool?
    public var percentEncoded: Bool?

    public init(path: String? = nil, query: QueryField? = nil, fragment: String? = nil,
                exclude: Bool? = nil, caseSensitive: Bool? = nil, percentEncoded: Bool? = nil) {
        self.path = path
        self.query = query
        self.fragment = fragment
        self.exclude = exclude
        self.caseSensitive = caseSensitive
        self.percentEncoded = percentEncoded
    }

    /// `self`'s keys laid over `base`: a key set here wins, an absent one falls through.
    public func merged(over base: ComponentFields) -> ComponentFields {
        ComponentFields(
            path: path ?? base.path,
            query: query ?? base.query,
            fragment: fragment ?? base.fragment,
            exclude: exclude ?? base.exclude,
            caseSensitive: caseSensitive ?? base.caseSensitive,
            percentEncoded: percentEncoded ?? base.percentEncoded
        )
    }
}

/// The `?` key: a pattern for the whole query string, or patterns for named query items.
public enum QueryField: Sendable, Equatable {
    case string(String)
    case items([QueryItemPattern])
}

public struct QueryItemPattern: Sendable, Equatable {
    public var name: String
    public var pattern: String

    public init(name: String, pattern: String) {
        self.name = name
        self.pattern = pattern
    }
}

/// A component after merging with the defaults, with its patterns compiled.
public struct CompiledComponent: Sendable {
    /// The effective keys: component over detail defaults over domain defaults.
    public var fields: ComponentFields
    public var path: PathPattern?
    public var query: QueryMatcher?
    public var fragment: Pattern?
    public var exclude: Bool { fields.exclude ?? false }
    public var caseSensitive: Bool { fields.caseSensitive ?? true }
    public var percentEncoded: Bool { fields.percentEncoded ?? true }
    /// Where the component is in the file, for diagnostics.
    public var jsonPath: JSONPath
    public var offset: Int
    /// Set when a misspelt `exclude` (`"exlude": true`), which iOS ignores, leaves the component
    /// doing the opposite of what it says: `aasa match` repeats it when the component decides.
    public var note: String?
    /// The variables the patterns were compiled with, to compile them again with other flags
    /// when `aasa match` explains a miss.
    var variables = SubstitutionVariables()
}

/// One entry of a legacy `paths` array: a path pattern, or an exclusion written `NOT pattern`.
public struct LegacyPath: Sendable {
    /// The entry as written, `NOT ` included.
    public var text: String
    public var isExclusion: Bool
    public var pattern: PathPattern
    /// Where the entry is in the file, for diagnostics.
    public var jsonPath: JSONPath
    public var offset: Int
}
