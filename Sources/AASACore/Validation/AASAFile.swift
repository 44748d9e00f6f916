/// An `apple-app-site-association` file: its bytes, what they mean, and everything wrong with
/// them. This is the one question the server, `aasa validate` and `aasa match` all ask.
public struct AASAFile: Sendable {
    /// swcd stops a download once more than 0x20000 bytes have arrived (docs/aasa-reference.md §1.9).
    public static let maximumSize = 131_072

    /// The bytes exactly as read: what the server serves when the file is valid.
    public let bytes: [UInt8]
    /// The document as a device reads it, or nil when the bytes are not a JSON object.
    public let document: AASADocument?
    /// The findings in order of position: the first ``Diagnostic/listLimit`` of them.
    public let diagnostics: [Diagnostic]
    /// Every finding, listed or not.
    public let count: DiagnosticCount

    /// True when there is no error (warnings allowed): the file may be served.
    public var isValid: Bool { count.errors == 0 }

    public var errorCount: Int { count.errors }
    public var warningCount: Int { count.warnings }
    /// Findings past ``Diagnostic/listLimit``, counted but not in ``diagnostics``.
    public var unlistedCount: Int { count.total - diagnostics.count }

    public init(bytes: [UInt8]) {
        self.bytes = bytes
        let map = SourceMap(bytes)
        var diagnostics = DiagnosticTally()
        if bytes.count > AASAFile.maximumSize {
            diagnostics.add([Diagnostic(.fileTooLarge,
                "the file is \(bytes.count) bytes; iOS stops reading after \(AASAFile.maximumSize) bytes (128 KB)",
                at: SourcePosition(line: 1, column: 1), path: .root)])
        }
        // A DER SEQUENCE: the CMS-signed files of iOS 8 (docs/aasa-reference.md §1.7).
        if bytes.count >= 2, bytes[0] == 0x30, (0x80...0x84).contains(bytes[1]) {
            diagnostics.add([Diagnostic(.signedFile,
                "this looks like a signed (CMS/PKCS#7) file; since iOS 9 serve the JSON itself, unsigned, as application/json",
                at: SourcePosition(line: 1, column: 1), path: .root)])
            self.document = nil
            (self.diagnostics, self.count) = diagnostics.finish()
            return
        }
        let parsed = JSONParser.parse(bytes, map: map)
        diagnostics.add(parsed.diagnostics, unlisted: parsed.unlisted)
        var document: AASADocument?
        if let value = parsed.value {
            var reader = DocumentReader(map: map)
            document = reader.read(value)
            diagnostics.add(reader.sink)
            if let document {
                diagnostics.add(AASAFile.crossChecks(document, map: map))
            }
        }
        self.document = document
        (self.diagnostics, self.count) = diagnostics.finish()
    }

    public init(_ text: String) {
        self.init(bytes: Array(text.utf8))
    }

    /// Rules that look across entries: unreachable components and paths, apps in several entries.
    static func crossChecks(_ document: AASADocument, map: SourceMap) -> DiagnosticSink {
        var sink = DiagnosticSink(map: map)
        guard let details = document.appLinks?.details else { return sink }
        var firstEntry: [String: Int] = [:]
        for (d, detail) in details.enumerated() {
            var seenHere: Set<String> = []
            for (k, app) in detail.appIDs.enumerated() where seenHere.insert(app).inserted {
                if let first = firstEntry[app] {
                    sink.report(.duplicateApp,
                                "\(JSONWriter.message(app)) is also in details[\(first)]; for this app that earlier entry decides first, and this one only when it matches nothing",
                                at: detail.appIDOffsets[k], path: detail.path)
                } else {
                    firstEntry[app] = d
                }
            }
            switch detail.rules {
            case .components(let components):
                let covering = Reachability.firstCovering(components, path: \.path, covers: Reachability.covers)
                for (j, later) in components.enumerated() {
                    if let i = covering[j] {
                        let earlier = components[i]
                        sink.report(.unreachableComponent,
                                    "component \(j) can never match: component \(i) matches every URL it matches and \(earlier.exclude ? "blocks" : "opens") it first",
                                    at: later.offset, path: later.jsonPath)
                    }
                }
            case .paths(let paths):
                // Legacy paths are tried in order like components (`"NOT *"` first blocks every
                // later entry; an exact duplicate never decides anything).
                let covering = Reachability.firstCovering(paths, path: \.pattern) { Reachability.coversPath($0.pattern, $1.pattern) }
                for (j, later) in paths.enumerated() {
                    if let i = covering[j] {
                        let earlier = paths[i]
                        sink.report(.unreachablePath,
                                    "paths[\(j)] can never match: paths[\(i)] \(JSONWriter.message(earlier.text)) matches every URL it matches and \(earlier.isExclusion ? "blocks" : "opens") it first",
                                    at: later.offset, path: later.jsonPath)
                    }
                }
            case .none:
                break
            }
        }
        return sink
    }
}
