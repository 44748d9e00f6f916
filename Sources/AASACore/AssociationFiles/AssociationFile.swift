/// Any association file a site hosts (docs/serving.md, "Config directory"): its kind, its bytes and everything wrong with
/// them. The question the server and `aasa validate` ask of every file, whatever its kind:
/// may it be served (``isValid``), what is wrong (``diagnostics``), and what exactly to send
/// (``bytes``, with ``contentType`` at ``urlPath``).
///
/// For an `apple-app-site-association` file this wraps ``AASAFile`` (whose ``AASAFile/document``
/// the matcher needs, through ``aasa``); the other kinds are checked by their own rules, with the
/// same kind of diagnostics: line and column, JSON path (`$` for the merchant ID file, which is
/// not JSON) and a stable ``DiagnosticCode``.
public struct AssociationFile: Sendable {
    public let kind: AssociationFileKind
    /// The bytes exactly as read: what the server serves when the file is valid.
    public let bytes: [UInt8]
    /// The findings in order of position: the first ``Diagnostic/listLimit`` of them.
    public let diagnostics: [Diagnostic]
    /// Every finding, listed or not.
    public let count: DiagnosticCount
    /// The AASA reading of the file when ``kind`` is ``AssociationFileKind/aasa``, else nil.
    public let aasa: AASAFile?

    /// True when there is no error (warnings allowed): the file may be served.
    public var isValid: Bool { count.errors == 0 }
    public var errorCount: Int { count.errors }
    public var warningCount: Int { count.warnings }
    /// Findings past ``Diagnostic/listLimit``, counted but not in ``diagnostics``.
    public var unlistedCount: Int { count.total - diagnostics.count }

    /// The `Content-Type` to serve the file with (``AssociationFileKind/contentType``).
    public var contentType: String { kind.contentType }
    /// The path the file is served at (``AssociationFileKind/urlPath``).
    public var urlPath: String { kind.urlPath }

    private init(kind: AssociationFileKind, bytes: [UInt8], diagnostics: [Diagnostic], count: DiagnosticCount) {
        self.kind = kind
        self.bytes = bytes
        self.diagnostics = diagnostics
        self.count = count
        self.aasa = nil
    }

    /// The same file without its parsed reading (``aasa`` is nil): what a server that only
    /// serves the bytes keeps, a fraction of the memory. `AASAFile(bytes:)` reads it again.
    public func compacted() -> AssociationFile {
        AssociationFile(kind: kind, bytes: bytes, diagnostics: diagnostics, count: count)
    }

    /// Validates `bytes` by the rules of `kind`.
    public init(kind: AssociationFileKind, bytes: [UInt8]) {
        self.kind = kind
        self.bytes = bytes
        if kind == .aasa {
            let file = AASAFile(bytes: bytes)
            self.aasa = file
            self.diagnostics = file.diagnostics
            self.count = file.count
            return
        }
        self.aasa = nil
        let map = SourceMap(bytes)
        var diagnostics = DiagnosticTally()
        switch kind {
        case .aasa:
            preconditionFailure("handled above")
        case .merchantID:
            diagnostics.add(MerchantIDFile.diagnostics(bytes, map: map))
        case .assetLinks, .webAuthn:
            if bytes.count > kind.maximumSize {
                diagnostics.add([Diagnostic(.fileTooLarge,
                    "the file is \(bytes.count) bytes; at most \(kind.maximumSize) bytes (128 KB) are accepted",
                    at: SourcePosition(line: 1, column: 1), path: .root)])
            }
            let expecting = kind == .assetLinks ? "a JSON array of statements" : "a JSON object {\"origins\": [...]}"
            let parsed = JSONParser.parse(bytes, map: map, expecting: expecting)
            diagnostics.add(parsed.diagnostics, unlisted: parsed.unlisted)
            if let value = parsed.value {
                if kind == .assetLinks {
                    var reader = AssetLinksReader(map: map)
                    reader.read(value)
                    diagnostics.add(reader.sink)
                } else {
                    var reader = WebAuthnReader(map: map)
                    reader.read(value)
                    diagnostics.add(reader.sink)
                }
            }
        }
        (self.diagnostics, self.count) = diagnostics.finish()
    }

    public init(kind: AssociationFileKind, _ text: String) {
        self.init(kind: kind, bytes: Array(text.utf8))
    }
}
