import AASACore

/// What the admin listener's JSON answers say, read leniently: a field that is missing or of
/// another type is nil, never a failure, so an answer from an older or newer server still
/// gives what it can. Nothing here is trusted: strings are printed by the caller only after
/// ``Swift/String/escapingControlCharacters``, and every list is bounded.
public enum AdminAnswer {
    /// The most findings read from one 422: the server lists at most 100 per file.
    public static let maxDiagnostics = 1_000

    /// A finding as the server listed it (`aasa validate --format json`'s shape), kept as text:
    /// a code this client does not know is still printed as sent.
    public struct Finding: Sendable, Equatable {
        public var severity: String
        public var code: String
        public var message: String
        public var line: Int
        public var column: Int
        public var jsonPath: String?

        public init(severity: String, code: String, message: String, line: Int, column: Int, jsonPath: String? = nil) {
            self.severity = severity
            self.code = code
            self.message = message
            self.line = line
            self.column = column
            self.jsonPath = jsonPath
        }
    }

    /// A site of one `/status` page, with its association files.
    public struct SiteEntry: Sendable, Equatable {
        public var host: String
        public var state: String
        public var version: String?
        public var files: [(name: String, state: String)]

        public static func == (a: SiteEntry, b: SiteEntry) -> Bool {
            a.host == b.host && a.state == b.state && a.version == b.version
                && a.files.map(\.name) == b.files.map(\.name) && a.files.map(\.state) == b.files.map(\.state)
        }
    }

    /// One `/status` page: the total from the summary, the sites, and the host to continue after.
    public struct StatusPage: Sendable {
        public var total: Int?
        public var sites: [SiteEntry]
        public var next: String?
    }

    /// The body as a JSON value, nil when it is not JSON.
    static func json(_ body: [UInt8]) -> JSONValue? {
        let result = JSONParser.parse(body)
        guard result.diagnostics.allSatisfy({ !$0.code.isJSONSyntaxError }) else { return nil }
        return result.value
    }

    /// `{"error": MESSAGE}`'s message, nil when the body says none.
    public static func errorMessage(_ body: [UInt8]) -> String? {
        json(body)?["error"]?.stringValue
    }

    /// A 422's `diagnostics`, nil when the answer has no such list (a certificate's 422, or a
    /// body that is not JSON).
    public static func findings(_ body: [UInt8]) -> [Finding]? {
        guard let list = json(body)?["diagnostics"]?.arrayValue else { return nil }
        return list.prefix(maxDiagnostics).map { d in
            Finding(severity: d["severity"]?.stringValue ?? "error",
                    code: d["code"]?.stringValue ?? "unknown",
                    message: d["message"]?.stringValue ?? "",
                    line: integer(d["line"]) ?? 1,
                    column: integer(d["column"]) ?? 1,
                    jsonPath: d["jsonPath"]?.stringValue)
        }
    }

    /// A write's `{"host","file","version"}`: the version, nil when absent.
    public static func version(_ body: [UInt8]) -> String? {
        json(body)?["version"]?.stringValue
    }

    /// One `/status` answer, nil when it is not a JSON object with a `sites` array.
    public static func statusPage(_ body: [UInt8]) -> StatusPage? {
        guard let root = json(body), let sites = root["sites"]?.arrayValue else { return nil }
        let entries = sites.compactMap { site -> SiteEntry? in
            guard let host = site["host"]?.stringValue else { return nil }
            let files = (site["files"]?.arrayValue ?? []).prefix(AssociationFileKind.allCases.count * 4).compactMap { file -> (name: String, state: String)? in
                guard let name = file["name"]?.stringValue else { return nil }
                return (name, file["state"]?.stringValue ?? "unknown")
            }
            return SiteEntry(host: host, state: site["state"]?.stringValue ?? "unknown", version: site["version"]?.stringValue, files: files)
        }
        return StatusPage(total: integer(root["summary"]?["sites"]), sites: entries, next: root["next"]?.stringValue)
    }

    /// A certificate as `/status` and `GET /certificates/NAME` describe it.
    public struct CertificateEntry: Sendable {
        public var name: String
        public var dnsNames: [String]
        public var notAfter: String
        public var source: String?
    }

    /// One page of `/status`'s certificates and the name to continue after; nil when the body
    /// is not that JSON.
    public static func certificatePage(_ body: [UInt8]) -> (certificates: [CertificateEntry], next: String?)? {
        guard let root = json(body), let list = root["certificates"]?.arrayValue else { return nil }
        let entries = list.compactMap(certificate)
        return (entries, root["certificatesNext"]?.stringValue)
    }

    public static func certificate(_ value: JSONValue) -> CertificateEntry? {
        guard let name = value["name"]?.stringValue else { return nil }
        let names = (value["dnsNames"]?.arrayValue ?? []).prefix(1000).compactMap(\.stringValue)
        return CertificateEntry(name: name, dnsNames: names, notAfter: value["notAfter"]?.stringValue ?? "unknown",
                                source: value["source"]?.stringValue)
    }

    public static func certificate(_ body: [UInt8]) -> CertificateEntry? { json(body).flatMap(certificate) }

    /// A JSON number that is a whole number of at most 9 digits (a line, a column, a count), else nil.
    static func integer(_ value: JSONValue?) -> Int? {
        guard case .number(let text)? = value?.kind, text.utf8.count <= 9 else { return nil }
        return Int(text)
    }
}
