/// Checks a WebAuthn related origins file, `/.well-known/webauthn` (W3C Web Authentication
/// Level 3, §5.11 "Using Web Authentication across related origins"): a JSON object whose
/// `origins` member is an array of one or more origin strings.
///
/// A client fetches it when a page asks for an RP ID that is not its own domain, and accepts
/// the page when its origin is same-origin with one entry (§5.11.1). Entries that do not parse
/// as URLs are skipped by clients; here they are errors, since they can only be mistakes.
struct WebAuthnReader {
    private(set) var sink: DiagnosticSink

    init(map: SourceMap) {
        sink = DiagnosticSink(map: map)
    }

    /// The bound of docs/validation.md, "Rules for `webauthn`". §5.11.1 only requires clients to
    /// honour five distinct registrable domain labels (Chrome and Firefox stop there), so real
    /// files are short; a file with thousands of entries is a generated mistake.
    static let maximumOrigins = 1_000

    mutating func read(_ root: JSONValue) {
        guard let members = root.effectiveMembers else {
            report(.rootNotObject, "the file must be a JSON object {\"origins\": [...]}, found \(root.typeName)", at: root.offset, .root)
            return
        }
        for member in members where member.key != "origins" {
            var message = "unknown key \(JSONWriter.message(member.key)) at the top level is ignored"
            if let suggestion = KeySuggestion.closest(to: member.key, among: ["origins"]) {
                message += "; did you mean \(JSONWriter.message(suggestion))?"
            }
            report(.unknownKey, message, at: member.keyOffset, JSONPath.root.appending(member.key))
        }
        guard let origins = root["origins"] else {
            report(.missingKey, "the file needs \"origins\", an array of origins such as [\"https://example.co.uk\"]", at: root.offset, .root)
            return
        }
        let path = JSONPath.root.appending("origins")
        guard let list = origins.arrayValue else {
            report(.wrongType, "expected an array of origin strings, found \(origins.typeName)", at: origins.offset, path)
            return
        }
        if list.isEmpty {
            report(.emptyRequiredList, "origins is empty; §5.11 requires one or more origins", at: origins.offset, path)
        }
        if list.count > WebAuthnReader.maximumOrigins {
            report(.webAuthnTooManyOrigins,
                   "origins has \(list.count) entries; at most \(WebAuthnReader.maximumOrigins) are allowed (clients honour only the first five registrable domains)",
                   at: origins.offset, path)
        }
        var first: [String: Int] = [:]
        for (i, item) in list.enumerated() {
            let itemPath = path.appending(i)
            guard let origin = item.stringValue else {
                report(.wrongType, "expected an origin string, found \(item.typeName)", at: item.offset, itemPath)
                continue
            }
            switch WebOrigin.check(origin, schemes: ["https"]) {
            case .valid: break
            case .trailingSlash:
                report(.originTrailingSlash, "origin \(JSONWriter.message(origin)) ends with '/'; clients compare its origin, but write it as https://host[:port]",
                       at: item.offset, itemPath)
            case .invalid(let why):
                report(.webAuthnInvalidOrigin, "origin \(JSONWriter.message(origin)) is not https://host[:port]: \(why)", at: item.offset, itemPath)
            }
            // Host names compare without regard to case, and a trailing '/' names the same origin.
            var key = origin.lowercased()
            if key.hasSuffix("/") { key.removeLast() }
            if let earlier = first[key] {
                report(.webAuthnDuplicateOrigin, "origin \(JSONWriter.message(origin)) is already listed at origins[\(earlier)]", at: item.offset, itemPath)
            } else {
                first[key] = i
            }
        }
    }

    private mutating func report(_ code: DiagnosticCode, _ message: String, at offset: Int, _ path: JSONPath) {
        sink.report(code, message, at: offset, path: path)
    }
}
