/// Reads a parsed JSON value into an ``AASADocument``, reporting every structural problem
/// (types, unknown keys, app IDs, variables, patterns) with its position and JSON path.
///
/// What the reader keeps is what a device would use: a value of the wrong type is dropped, so
/// the matcher sees the file as the system does, while the diagnostic tells the author.
struct DocumentReader {
    private(set) var sink: DiagnosticSink

    init(map: SourceMap) {
        sink = DiagnosticSink(map: map)
    }

    static let serviceKeys: [String] = ["applinks"] + AppListService.allCases.map(\.rawValue)
    static let appLinksKeys = ["details", "defaults", "substitutionVariables", "apps"]
    static let detailKeys = ["appIDs", "appID", "components", "paths", "defaults"]
    static let componentKeys = ["/", "?", "#", "exclude", "caseSensitive", "percentEncoded", "comment"]

    // MARK: - Document

    mutating func read(_ root: JSONValue) -> AASADocument? {
        guard let members = root.effectiveMembers else {
            report(.rootNotObject, "the file must be a JSON object, found \(root.typeName)", at: root.offset, .root)
            return nil
        }
        var document = AASADocument()
        for member in members {
            let path = JSONPath.root.appending(member.key)
            if member.key == "applinks" {
                document.appLinks = readAppLinks(member.value, path: path)
            } else if let service = AppListService(rawValue: member.key) {
                document.appLists[service] = readAppList(member.value, service: service, path: path)
            } else {
                reportUnknownKey(member, known: DocumentReader.serviceKeys, in: "the top level", path: path)
            }
        }
        if !members.contains(where: { DocumentReader.serviceKeys.contains($0.key) }) {
            report(.noService, "the file declares no service (applinks, webcredentials, appclips, activitycontinuation)",
                   at: root.offset, .root)
        }
        return document
    }

    private mutating func readAppList(_ value: JSONValue, service: AppListService, path: JSONPath) -> [String] {
        guard let members = value.objectMembers else {
            reportType(value, expected: "an object like {\"apps\": [\"TEAMID.bundle.id\"]}", path: path)
            return []
        }
        for member in members where member.key != "apps" {
            reportUnknownKey(member, known: ["apps"], in: service.rawValue, path: path.appending(member.key))
        }
        guard let apps = value["apps"] else {
            report(.missingKey, "\(service.rawValue) needs an \"apps\" array of app IDs", at: value.offset, path)
            return []
        }
        let ids = readAppIDArray(apps, path: path.appending("apps")).map(\.id)
        if apps.arrayValue?.isEmpty == true {
            report(.emptyList, "\(service.rawValue).apps is empty: the service is declared for no app", at: apps.offset, path.appending("apps"))
        }
        return ids
    }

    // MARK: - applinks

    private mutating func readAppLinks(_ value: JSONValue, path: JSONPath) -> AppLinks? {
        guard let members = value.objectMembers else {
            reportType(value, expected: "an object", path: path)
            return nil
        }
        for member in members where !DocumentReader.appLinksKeys.contains(member.key) {
            reportUnknownKey(member, known: DocumentReader.appLinksKeys, in: "applinks", path: path.appending(member.key))
        }
        var appLinks = AppLinks()
        if let vars = value["substitutionVariables"] {
            appLinks.substitutionVariables = readSubstitutionVariables(vars, path: path.appending("substitutionVariables"))
        }
        let variables = SubstitutionVariables(appLinks.substitutionVariables)
        if let defaults = value["defaults"] {
            appLinks.defaults = readFields(defaults, path: path.appending("defaults"), base: ComponentFields(),
                                           variables: variables, isDefaults: true)
        }
        if let apps = value["apps"] {
            let appsPath = path.appending("apps")
            if let list = apps.arrayValue {
                if !list.isEmpty {
                    report(.legacyAppsNotEmpty, "applinks.apps is a legacy key that must be an empty array [] when present",
                           at: apps.offset, appsPath)
                }
            } else {
                reportType(apps, expected: "an empty array []", path: appsPath)
            }
        }
        guard let details = value["details"] else {
            report(.noPatterns, "applinks has no \"details\": no URL will open an app", at: value.offset, path)
            return appLinks
        }
        let detailsPath = path.appending("details")
        if let entries = details.arrayValue {
            for (i, entry) in entries.enumerated() {
                if let detail = readDetail(entry, legacyAppID: nil, path: detailsPath.appending(i), appLinks: appLinks, variables: variables) {
                    appLinks.details.append(detail)
                } else {
                    // Keep indexes aligned with the file so a decision names the entry a user sees.
                    appLinks.details.append(AppLinksDetail(appIDs: [], rules: .none, defaults: ComponentFields(), path: detailsPath.appending(i)))
                }
            }
        } else if let members = details.objectMembers {
            report(.legacyDetailsDictionary,
                   "details is the legacy dictionary keyed by app ID; use an array of {\"appIDs\", \"components\"} (a dictionary has no defined order between apps)",
                   at: details.offset, detailsPath)
            for member in members {
                let appPath = detailsPath.appending(member.key)
                validateAppID(member.key, at: member.keyOffset, path: appPath)
                let detail = readDetail(member.value, legacyAppID: member.key, legacyAppIDOffset: member.keyOffset,
                                        path: appPath, appLinks: appLinks, variables: variables)
                appLinks.details.append(detail ?? AppLinksDetail(appIDs: [], rules: .none, defaults: ComponentFields(), path: appPath))
            }
        } else {
            reportType(details, expected: "an array", path: detailsPath)
        }
        return appLinks
    }

    private mutating func readSubstitutionVariables(_ value: JSONValue, path: JSONPath) -> [String: [String]] {
        guard let members = value.objectMembers else {
            reportType(value, expected: "an object mapping names to arrays of strings", path: path)
            return [:]
        }
        var result: [String: [String]] = [:]
        for member in members {
            let varPath = path.appending(member.key)
            if member.key.isEmpty || member.key.contains(where: { "$()".contains($0) }) {
                report(.invalidVariableName, "variable name \(JSONWriter.message(member.key)) is empty or contains '$', '(' or ')'",
                       at: member.keyOffset, varPath)
            } else if SubstitutionVariables.builtinNames.contains(member.key) {
                report(.variableShadowsBuiltin, "variable \"\(member.key)\" has the name of a built-in variable; this file's values are used",
                       at: member.keyOffset, varPath)
            }
            guard let list = member.value.arrayValue else {
                reportType(member.value, expected: "an array of strings", path: varPath)
                continue
            }
            if list.isEmpty {
                report(.emptyList, "variable \"\(member.key)\" has no values: a pattern that uses it never matches", at: member.value.offset, varPath)
            }
            var values: [String] = []
            for (i, item) in list.enumerated() {
                guard let s = item.stringValue else {
                    reportType(item, expected: "a string", path: varPath.appending(i))
                    continue
                }
                if s.contains("$(") {
                    report(.variableInVariable, "a variable's value cannot reference another variable; \"$(\" is matched literally here",
                           at: item.offset, varPath.appending(i))
                }
                values.append(s)
            }
            result[member.key] = values
        }
        return result
    }

    // MARK: - details

    private mutating func readDetail(_ value: JSONValue, legacyAppID: String?, legacyAppIDOffset: Int = 0, path: JSONPath,
                                     appLinks: AppLinks, variables: SubstitutionVariables) -> AppLinksDetail? {
        guard let members = value.objectMembers else {
            reportType(value, expected: "an object", path: path)
            return nil
        }
        for member in members where !DocumentReader.detailKeys.contains(member.key) {
            reportUnknownKey(member, known: DocumentReader.detailKeys, in: "a details entry", path: path.appending(member.key))
        }

        var appIDs: [(id: String, offset: Int)] = []
        if let legacyAppID {
            appIDs = [(legacyAppID, legacyAppIDOffset)]
        }
        if let ids = value["appIDs"] {
            appIDs = readAppIDArray(ids, path: path.appending("appIDs"))
            if ids.arrayValue?.isEmpty == true {
                report(.emptyList, "appIDs is empty: this entry applies to no app", at: ids.offset, path.appending("appIDs"))
            }
            if let appID = members.last(where: { $0.key == "appID" }) {
                report(.appIDIgnored, "appID is ignored when appIDs is present (swcutil uses appIDs only); move the app into appIDs",
                       at: appID.keyOffset, path.appending("appID"))
                if let s = appID.value.stringValue { validateAppID(s, at: appID.value.offset, path: path.appending("appID")) }
            }
        } else if let appID = value["appID"] {
            if let s = appID.stringValue {
                validateAppID(s, at: appID.offset, path: path.appending("appID"))
                appIDs = [(s, appID.offset)]
            } else {
                reportType(appID, expected: "a string", path: path.appending("appID"))
            }
        } else if legacyAppID == nil {
            report(.missingKey, "a details entry needs \"appIDs\" (or the legacy \"appID\"); without one it applies to no app",
                   at: value.offset, path)
        }

        var detailDefaults = ComponentFields()
        if let defaults = value["defaults"] {
            detailDefaults = readFields(defaults, path: path.appending("defaults"), base: appLinks.defaults,
                                        variables: variables, isDefaults: true)
        }
        let effectiveDefaults = detailDefaults.merged(over: appLinks.defaults)

        var rules = AppLinksDetail.Rules.none
        let components = value["components"]
        let paths = value["paths"]
        // `paths` is read only when `components` is not an array (docs/aasa-reference.md §1.3, WWDC19 717, decomp).
        if let components, let list = components.arrayValue {
            let listPath = path.appending("components")
            if list.isEmpty {
                report(.emptyList, "components is empty: this entry matches no URL", at: components.offset, listPath)
            }
            var compiled: [CompiledComponent] = []
            for (i, item) in list.enumerated() {
                let itemPath = listPath.appending(i)
                var note: String?
                let own = readFields(item, path: itemPath, base: effectiveDefaults, variables: variables, isDefaults: false, note: &note)
                var component = CompiledComponent(fields: own.merged(over: effectiveDefaults), variables: variables,
                                                  jsonPath: itemPath, offset: item.offset)
                component.note = note
                compiled.append(component)
            }
            rules = .components(compiled)
            if let paths {
                report(.pathsIgnored, "paths is ignored when components is present (iOS 13 and later); keep one of them",
                       at: paths.offset, path.appending("paths"))
            }
        } else {
            if let components {
                reportType(components, expected: "an array", path: path.appending("components"))
            }
            if let paths {
                rules = .paths(readLegacyPaths(paths, path: path.appending("paths")))
            }
        }
        if components == nil && paths == nil {
            report(.noPatterns, "this entry has neither components nor paths; it matches no URL", at: value.offset, path)
        }
        return AppLinksDetail(appIDs: appIDs.map(\.id), appIDOffsets: appIDs.map(\.offset), rules: rules,
                              defaults: detailDefaults, path: path)
    }

    private mutating func readLegacyPaths(_ value: JSONValue, path: JSONPath) -> [LegacyPath] {
        guard let list = value.arrayValue else {
            reportType(value, expected: "an array of strings", path: path)
            return []
        }
        var out: [LegacyPath] = []
        for (i, item) in list.enumerated() {
            guard let text = item.stringValue else {
                reportType(item, expected: "a string", path: path.appending(i))
                continue
            }
            let isExclusion = text.hasPrefix("NOT ")
            let patternText = isExclusion ? String(text.dropFirst(4)) : text
            // Legacy paths know no variables: `$(` is literal text there.
            out.append(LegacyPath(text: text, isExclusion: isExclusion, pattern: PathPattern(patternText),
                                  jsonPath: path.appending(i), offset: item.offset))
            lintPattern(patternText, kind: .path, percentEncoded: true, legacy: true, at: item.offset, path: path.appending(i))
        }
        return out
    }

    private mutating func readAppIDArray(_ value: JSONValue, path: JSONPath) -> [(id: String, offset: Int)] {
        guard let list = value.arrayValue else {
            reportType(value, expected: "an array of app ID strings", path: path)
            return []
        }
        var ids: [(id: String, offset: Int)] = []
        for (i, item) in list.enumerated() {
            guard let s = item.stringValue else {
                reportType(item, expected: "an app ID string", path: path.appending(i))
                continue
            }
            if ids.contains(where: { $0.id == s }) {
                report(.duplicateApp, "\(JSONWriter.message(s)) is listed twice in this array", at: item.offset, path.appending(i))
            }
            validateAppID(s, at: item.offset, path: path.appending(i))
            ids.append((s, item.offset))
        }
        return ids
    }

    // MARK: - Components and defaults

    /// Reads the keys of a component or a `defaults` dictionary. Patterns the dictionary itself
    /// sets are checked with the flags in effect for it (its own over `base`).
    private mutating func readFields(_ value: JSONValue, path: JSONPath, base: ComponentFields,
                                     variables: SubstitutionVariables, isDefaults: Bool) -> ComponentFields {
        var note: String?
        return readFields(value, path: path, base: base, variables: variables, isDefaults: isDefaults, note: &note)
    }

    /// - Parameter note: set when a misspelt flag changes what the dictionary does (``nearMissNote``).
    private mutating func readFields(_ value: JSONValue, path: JSONPath, base: ComponentFields,
                                     variables: SubstitutionVariables, isDefaults: Bool, note: inout String?) -> ComponentFields {
        guard let members = value.effectiveMembers else {
            reportType(value, expected: "an object", path: path)
            return ComponentFields()
        }
        var fields = ComponentFields()
        var patterns: [(text: String, kind: PatternKind, offset: Int, path: JSONPath)] = []
        // Reported once every key is read: whether a misspelt flag changes the meaning depends on
        // the flag itself, which may come later.
        var unknown: [JSONMember] = []
        for member in members {
            let keyPath = path.appending(member.key)
            let v = member.value
            switch member.key {
            case "/":
                if let s = v.stringValue { fields.path = s; patterns.append((s, .path, v.offset, keyPath)) } else {
                    reportType(v, expected: "a string pattern", path: keyPath); fields.path = nil
                }
            case "#":
                if let s = v.stringValue { fields.fragment = s; patterns.append((s, .fragment, v.offset, keyPath)) } else {
                    reportType(v, expected: "a string pattern", path: keyPath); fields.fragment = nil
                }
            case "?":
                if let s = v.stringValue {
                    fields.query = .string(s)
                    patterns.append((s, .query, v.offset, keyPath))
                } else if let items = v.objectMembers {
                    var parsed: [QueryItemPattern] = []
                    var ignored = false
                    for item in items {
                        if let s = item.value.stringValue {
                            parsed.append(QueryItemPattern(name: item.key, pattern: s))
                            patterns.append((s, .queryItem, item.value.offset, keyPath.appending(item.key)))
                        } else {
                            ignored = true
                            report(.queryValueNotString,
                                   "query item \(JSONWriter.message(item.key)) must be a string pattern, found \(item.value.typeName); iOS then ignores the whole \"?\" dictionary",
                                   at: item.value.offset, keyPath.appending(item.key))
                        }
                    }
                    fields.query = ignored ? nil : .items(parsed)
                } else {
                    reportType(v, expected: "a string pattern or an object of query item patterns", path: keyPath)
                }
            case "exclude", "caseSensitive", "percentEncoded":
                guard let b = v.boolValue else {
                    reportType(v, expected: "true or false", path: keyPath)
                    continue
                }
                switch member.key {
                case "exclude":
                    fields.exclude = b
                    if isDefaults && b {
                        report(.excludeInDefaults, "exclude: true in defaults blocks every URL a component matches, unless the component sets exclude: false",
                               at: v.offset, keyPath)
                    }
                case "caseSensitive": fields.caseSensitive = b
                default: fields.percentEncoded = b
                }
            case "comment":
                if v.stringValue == nil { reportType(v, expected: "a string", path: keyPath) }
            default:
                unknown.append(member)
            }
        }
        let effective = fields.merged(over: base)
        for member in unknown {
            let consequence = DocumentReader.nearMissNote(member, effective: effective, isDefaults: isDefaults)
            if let consequence, !isDefaults {
                note = "unknown key \(JSONWriter.message(member.key)) is ignored; did you mean \"exclude\"? \(consequence)"
            }
            sink.reportUnknownKey(member, known: DocumentReader.componentKeys, in: isDefaults ? "defaults" : "a component",
                                  path: path.appending(member.key), consequence: consequence)
        }
        for p in patterns {
            lintPattern(p.text, kind: p.kind, percentEncoded: effective.percentEncoded ?? true, at: p.offset, path: p.path)
            let (_, problems) = PatternToken.tokenize(p.text, variables: variables)
            for problem in Set(problems) {
                switch problem {
                case .unterminatedVariable:
                    report(.unterminatedVariable, "\"$(\" is not closed by \")\"; it is matched as literal text", at: p.offset, p.path)
                case .undefinedVariable(let name):
                    report(.undefinedVariable, "variable $(\(name)) is not defined in applinks.substitutionVariables and is not a built-in; this pattern never matches",
                           at: p.offset, p.path)
                }
            }
        }
        return fields
    }

    /// What an ignored key near `exclude` (`"exlude": true`, `"Exclude": false`) does to the
    /// dictionary: iOS ignores unknown keys (docs/aasa-reference.md §1.4), so the component keeps
    /// the `exclude` its defaults give it, which may be the opposite of what was written. nil when
    /// the key is not such a near miss, its value is not a bool, or the meaning is the same.
    static func nearMissNote(_ member: JSONMember, effective: ComponentFields, isDefaults: Bool) -> String? {
        guard KeySuggestion.closest(to: member.key, among: componentKeys) == "exclude",
              let intended = member.value.boolValue, intended != (effective.exclude ?? false) else { return nil }
        if isDefaults {
            return intended
                ? "the components under these defaults MATCH: without \"exclude\" they open the app"
                : "the components under these defaults still BLOCK: without \"exclude\" they keep exclude: true from the defaults above"
        }
        return intended
            ? "this component MATCHES: without \"exclude\" it opens the app"
            : "this component still BLOCKS: without \"exclude\" it keeps exclude: true from its defaults"
    }

    // MARK: - Checks

    enum PatternKind {
        case path, query, queryItem, fragment
    }

    /// Flags literal text that can never match the URL part it is compared with.
    /// - Parameter legacy: a legacy `paths` entry, which is always compared percent-encoded and
    ///   has no `percentEncoded` key to change that.
    private mutating func lintPattern(_ text: String, kind: PatternKind, percentEncoded: Bool, legacy: Bool = false,
                                      at offset: Int, path: JSONPath) {
        let literal = PatternLint.literalText(text)
        if percentEncoded {
            if let bad = PatternLint.firstCharacterNeverRawInURL(literal, kind: kind) {
                let advice = legacy
                    ? "legacy paths are always compared percent-encoded, so this entry cannot match (write it percent-encoded, or move to components, where percentEncoded: false compares decoded text)"
                    : "with percentEncoded true (the default) this pattern cannot match (write it percent-encoded, or set percentEncoded: false)"
                report(.unmatchablePattern, "\(bad) never appears unencoded in a URL's \(kind.name); \(advice)", at: offset, path)
            } else if PatternLint.hasLowercaseEscape(literal) {
                report(.lowercasePercentEscape, "percent escapes compare exactly and URLs use upper-case hex (%C3%A9, not %c3%a9)", at: offset, path)
            }
        } else if PatternLint.hasEscape(literal) {
            report(.encodedPatternNotDecoded, "with percentEncoded false the URL is decoded before matching, so the escape in this pattern is compared as literal text",
                   at: offset, path)
        }
        if kind == .path, let q = literal.firstIndex(of: "?"), literal[q...].contains("=") {
            report(.queryInPath, "'?' in a path pattern matches any one character, not the query; put query patterns under the \"?\" key",
                   at: offset, path)
        }
    }

    private mutating func validateAppID(_ id: String, at offset: Int, path: JSONPath) {
        switch AppID.check(id) {
        case .valid: break
        case .lowercasePrefix:
            // What a device does with it is not documented (docs/aasa-reference.md §1.8): say so,
            // and what this tool does, which is to compare app IDs exactly.
            let prefix = id.prefix { $0 != "." }
            let upper = prefix.uppercased() + id.dropFirst(prefix.count)
            report(.lowercaseAppIDPrefix,
                   "app ID prefix in \(JSONWriter.message(id)) has lower-case letters; Team IDs are upper case, and an app's own ID carries its Team ID that way. Whether iOS ignores case when it compares app IDs is not documented; aasa match and check compare them exactly, so this entry applies only to an app ID written the same way. Write \(JSONWriter.message(upper))",
                   at: offset, path)
        case .invalid(let why):
            report(.invalidAppID, "invalid app ID \(JSONWriter.message(id)): \(why)", at: offset, path)
        }
    }

    private mutating func reportUnknownKey(_ member: JSONMember, known: [String], in place: String, path: JSONPath) {
        sink.reportUnknownKey(member, known: known, in: place, path: path)
    }

    private mutating func reportType(_ value: JSONValue, expected: String, path: JSONPath) {
        sink.reportType(value, expected: expected, path: path)
    }

    private mutating func report(_ code: DiagnosticCode, _ message: String, at offset: Int, _ path: JSONPath) {
        sink.report(code, message, at: offset, path: path)
    }
}

extension DocumentReader.PatternKind {
    var name: String {
        switch self {
        case .path: return "path"
        case .query, .queryItem: return "query"
        case .fragment: return "fragment"
        }
    }
}

extension CompiledComponent {
    init(fields: ComponentFields, variables: SubstitutionVariables, jsonPath: JSONPath, offset: Int) {
        let caseSensitive = fields.caseSensitive ?? true
        self.fields = fields
        self.path = fields.path.map { PathPattern($0, caseSensitive: caseSensitive, variables: variables) }
        self.fragment = fields.fragment.map { Pattern($0, caseSensitive: caseSensitive, variables: variables) }
        switch fields.query {
        case nil:
            self.query = nil
        case .string(let s)?:
            self.query = .string(Pattern(s, caseSensitive: caseSensitive, variables: variables))
        case .items(let items)?:
            self.query = .items(items.map { ($0.name, Pattern($0.pattern, caseSensitive: caseSensitive, variables: variables)) })
        }
        self.jsonPath = jsonPath
        self.offset = offset
        self.variables = variables
    }
}
