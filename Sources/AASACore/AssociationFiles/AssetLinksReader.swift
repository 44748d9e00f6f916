/// Checks a Digital Asset Links statement list, `assetlinks.json`, reporting every problem with
/// its position and JSON path.
///
/// The format is Google's "Statement List Syntax" (developers.google.com/digital-asset-links/v1/statements):
/// a JSON array of statements, each `{"relation": [...], "target": {...}}` (optionally with
/// `relation_extensions`), or an include statement `{"include": "https://…/other.json"}`.
/// Android's App Links verifier reads the same file (developer.android.com/training/app-links/verify-android-applinks).
struct AssetLinksReader {
    private(set) var sink: DiagnosticSink

    init(map: SourceMap) {
        sink = DiagnosticSink(map: map)
    }

    static let statementKeys = ["relation", "target", "relation_extensions", "include"]
    /// The relation strings Google predefines ("Relation strings", digital-asset-links/v1/relation-strings).
    /// Others are allowed by the format ("you can define your own unique string") but no
    /// Google or Android feature acts on them, so they are most often a typo.
    static let knownRelations = ["delegate_permission/common.handle_all_urls", "delegate_permission/common.get_login_creds"]
    static let namespaces = ["android_app", "web"]
    static let androidAppKeys = ["namespace", "package_name", "sha256_cert_fingerprints"]
    static let webKeys = ["namespace", "site"]

    mutating func read(_ root: JSONValue) {
        guard let statements = root.arrayValue else {
            report(.rootNotArray, "the file must be a JSON array of statements [{\"relation\": [...], \"target\": {...}}], found \(root.typeName)",
                   at: root.offset, .root)
            return
        }
        if statements.isEmpty {
            report(.emptyList, "the file lists no statement: it links this site to nothing", at: root.offset, .root)
        }
        var firstIndex: [String: Int] = [:]
        for (i, statement) in statements.enumerated() {
            let path = JSONPath.root.appending(i)
            guard statement.objectMembers != nil else {
                reportType(statement, expected: "a statement object {\"relation\": [...], \"target\": {...}}", path: path)
                continue
            }
            readStatement(statement, path: path)
            // Statements are compared as parsed values, so key order and spacing do not hide a repeat.
            let key = AssetLinksReader.canonical(statement)
            if let first = firstIndex[key] {
                report(.assetLinksDuplicateStatement, "this statement repeats statement [\(first)]; remove one of them", at: statement.offset, path)
            } else {
                firstIndex[key] = i
            }
        }
    }

    private mutating func readStatement(_ statement: JSONValue, path: JSONPath) {
        for member in statement.effectiveMembers ?? [] where !AssetLinksReader.statementKeys.contains(member.key) {
            reportUnknownKey(member, known: AssetLinksReader.statementKeys, in: "a statement", path: path.appending(member.key))
        }
        if let include = statement["include"] {
            readInclude(include, path: path.appending("include"))
            // An include statement stands for the statements of another file and has no relation or target of its own.
            if statement["relation"] == nil && statement["target"] == nil { return }
        }
        if let extensions = statement["relation_extensions"], extensions.objectMembers == nil {
            reportType(extensions, expected: "an object", path: path.appending("relation_extensions"))
        }
        if let relation = statement["relation"] {
            readRelation(relation, path: path.appending("relation"))
        } else {
            report(.missingKey, "a statement needs \"relation\", an array such as [\"delegate_permission/common.handle_all_urls\"]", at: statement.offset, path)
        }
        if let target = statement["target"] {
            readTarget(target, path: path.appending("target"))
        } else {
            report(.missingKey, "a statement needs \"target\", the app or site it is about", at: statement.offset, path)
        }
    }

    private mutating func readInclude(_ value: JSONValue, path: JSONPath) {
        guard let url = value.stringValue else {
            reportType(value, expected: "the URL of another statement list", path: path)
            return
        }
        // The included file may be anywhere on a site: check the scheme and host part only.
        let slash = url.firstRange(of: "://").flatMap { sep in url[sep.upperBound...].firstIndex(of: "/") } ?? url.endIndex
        if case .invalid(let why) = WebOrigin.check(String(url[..<slash]), schemes: ["https", "http"]) {
            report(.assetLinksInvalidInclude, "include \(JSONWriter.message(url)) is not an http(s) URL: \(why)", at: value.offset, path)
        }
    }

    private mutating func readRelation(_ value: JSONValue, path: JSONPath) {
        guard let list = value.arrayValue else {
            reportType(value, expected: "an array of relation strings", path: path)
            return
        }
        if list.isEmpty {
            report(.emptyRequiredList, "relation is empty; the statement grants nothing (use [\"delegate_permission/common.handle_all_urls\"] for App Links)",
                   at: value.offset, path)
        }
        for (i, item) in list.enumerated() {
            let itemPath = path.appending(i)
            guard let relation = item.stringValue else {
                reportType(item, expected: "a relation string", path: itemPath)
                continue
            }
            if relation.isEmpty || relation.unicodeScalars.contains(where: { $0 == " " || $0.value < 0x20 }) {
                report(.assetLinksInvalidRelation, "relation \(JSONWriter.message(relation)) is empty or contains white space", at: item.offset, itemPath)
            } else if !AssetLinksReader.knownRelations.contains(relation) {
                var message = "relation \(JSONWriter.message(relation)) is not one Google defines (delegate_permission/common.handle_all_urls, delegate_permission/common.get_login_creds); nothing acts on it"
                if let near = KeySuggestion.closest(to: relation, among: AssetLinksReader.knownRelations) {
                    message += "; did you mean \(JSONWriter.message(near))?"
                }
                report(.assetLinksUnknownRelation, message, at: item.offset, itemPath)
            }
        }
    }

    private mutating func readTarget(_ target: JSONValue, path: JSONPath) {
        guard target.objectMembers != nil else {
            reportType(target, expected: "an object {\"namespace\": \"android_app\" or \"web\", ...}", path: path)
            return
        }
        guard let namespaceValue = target["namespace"] else {
            report(.missingKey, "a target needs \"namespace\": \"android_app\" or \"web\"", at: target.offset, path)
            return
        }
        guard let namespace = namespaceValue.stringValue else {
            reportType(namespaceValue, expected: "\"android_app\" or \"web\"", path: path.appending("namespace"))
            return
        }
        switch namespace {
        case "android_app":
            readAndroidApp(target, path: path)
        case "web":
            readWeb(target, path: path)
        default:
            var message = "unknown namespace \(JSONWriter.message(namespace)); a target is \"android_app\" or \"web\""
            if let near = KeySuggestion.closest(to: namespace, among: AssetLinksReader.namespaces) {
                message += "; did you mean \(JSONWriter.message(near))?"
            }
            report(.assetLinksUnknownNamespace, message, at: namespaceValue.offset, path.appending("namespace"))
        }
    }

    private mutating func readAndroidApp(_ target: JSONValue, path: JSONPath) {
        for member in target.effectiveMembers ?? [] where !AssetLinksReader.androidAppKeys.contains(member.key) {
            reportUnknownKey(member, known: AssetLinksReader.androidAppKeys, in: "an android_app target", path: path.appending(member.key))
        }
        if let value = target["package_name"] {
            let namePath = path.appending("package_name")
            if let name = value.stringValue {
                if let problem = AndroidPackageName.problem(name) {
                    report(.assetLinksInvalidPackageName, "package name \(JSONWriter.message(name)) \(problem)", at: value.offset, namePath)
                }
            } else {
                reportType(value, expected: "a package name string such as \"com.example.app\"", path: namePath)
            }
        } else {
            report(.missingKey, "an android_app target needs \"package_name\"", at: target.offset, path)
        }
        guard let value = target["sha256_cert_fingerprints"] else {
            report(.missingKey, "an android_app target needs \"sha256_cert_fingerprints\", the SHA-256 fingerprints of the app's signing certificates",
                   at: target.offset, path)
            return
        }
        let listPath = path.appending("sha256_cert_fingerprints")
        guard let list = value.arrayValue else {
            reportType(value, expected: "an array of fingerprint strings", path: listPath)
            return
        }
        if list.isEmpty {
            report(.emptyRequiredList, "sha256_cert_fingerprints is empty: no signed build of the app matches", at: value.offset, listPath)
        }
        for (i, item) in list.enumerated() {
            let itemPath = listPath.appending(i)
            guard let fingerprint = item.stringValue else {
                reportType(item, expected: "a fingerprint string", path: itemPath)
                continue
            }
            switch CertificateFingerprint.check(fingerprint) {
            case .valid: break
            case .lowercase:
                report(.assetLinksLowercaseFingerprint,
                       "fingerprint has lower-case hex; Google documents it upper case, as keytool prints it (Android computes its own fingerprints in upper case)",
                       at: item.offset, itemPath)
            case .invalid(let why):
                report(.assetLinksInvalidFingerprint, "invalid fingerprint \(JSONWriter.message(fingerprint)): \(why)", at: item.offset, itemPath)
            }
        }
    }

    private mutating func readWeb(_ target: JSONValue, path: JSONPath) {
        for member in target.effectiveMembers ?? [] where !AssetLinksReader.webKeys.contains(member.key) {
            reportUnknownKey(member, known: AssetLinksReader.webKeys, in: "a web target", path: path.appending(member.key))
        }
        guard let value = target["site"] else {
            report(.missingKey, "a web target needs \"site\", an origin such as \"https://example.com\"", at: target.offset, path)
            return
        }
        let sitePath = path.appending("site")
        guard let site = value.stringValue else {
            reportType(value, expected: "a site string such as \"https://example.com\"", path: sitePath)
            return
        }
        // Google: `http[s]://<hostname>[:<port>]`; "a website target can only be a root domain".
        switch WebOrigin.check(site, schemes: ["https", "http"]) {
        case .valid: break
        case .trailingSlash:
            report(.originTrailingSlash, "site \(JSONWriter.message(site)) ends with '/'; Google's format is scheme://host[:port] without it",
                   at: value.offset, sitePath)
        case .invalid(let why):
            report(.assetLinksInvalidSite, "site \(JSONWriter.message(site)) is not scheme://host[:port]: \(why)", at: value.offset, sitePath)
        }
    }

    // MARK: - Helpers

    /// The value as compact JSON with object keys sorted (last duplicate wins), for comparing statements.
    static func canonical(_ value: JSONValue) -> String {
        switch value.kind {
        case .object:
            let members = (value.effectiveMembers ?? []).sorted { $0.key < $1.key }
            return "{" + members.map { JSONWriter.quoted($0.key) + ":" + canonical($0.value) }.joined(separator: ",") + "}"
        case .array(let items):
            return "[" + items.map(canonical).joined(separator: ",") + "]"
        case .string(let s): return JSONWriter.quoted(s)
        case .number(let n): return n
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
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
