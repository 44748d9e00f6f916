import AASACore
import AASAClient

/// How one file of one domain ended (docs/import.md).
package enum ImportResult: String, Sendable, CaseIterable {
    /// Found, valid (warnings allowed) and written (with `--dry-run`: would be).
    case imported
    /// The destination already holds the same bytes: nothing written.
    case unchanged
    /// The destination holds other bytes and `--replace` was not given: nothing written.
    case exists
    /// Found, with errors: nothing written.
    case invalid
    /// `404` or `410` (for AASA at both locations): nothing written, not a failure.
    case absent
    /// No answer, another status, a redirect not followed, an HTML page, too large, or the
    /// destination could not take it.
    case failed

    /// Whether the run's exit status is 1.
    var fails: Bool { self == .invalid || self == .failed }
}

/// One file's result, as the text and JSON reports print it.
package struct ImportedFile: Sendable {
    package var kind: AssociationFileKind
    package var result: ImportResult
    /// Where the file was found, or the last URL asked.
    package var url: String
    package var redirects: [String] = []
    /// The body's size, when one was read.
    package var bytes: Int?
    /// The version the destination now serves or holds (the server's entity tag, unquoted),
    /// nil when nothing is there or nothing was written.
    package var version: String?
    /// Short facts: `1 234 bytes: 2 statements`, `2 errors, 1 warning`.
    package var detail: String?
    /// A sentence: why it failed, what is there, what redirects were followed.
    package var note: String?
    /// The validator's findings (or the server's, for a `422`), in `validate`'s terms.
    package var diagnostics: [AdminAnswer.Finding] = []
    /// Findings counted but not listed.
    package var unlisted = 0

    /// `detail; note`, for JSON.
    var message: String { [detail, note].compactMap { $0 }.joined(separator: "; ") }
}

package struct ImportedDomain: Sendable {
    package var host: String
    package var files: [ImportedFile]
}

/// The text and JSON reports of `aasa import`.
package enum ImportReport {
    package static func counts(_ domains: [ImportedDomain]) -> [ImportResult: Int] {
        var counts: [ImportResult: Int] = [:]
        for d in domains { for f in d.files { counts[f.result, default: 0] += 1 } }
        return counts
    }

    /// `3 domains: 5 imported, 1 unchanged, 2 absent, 1 invalid, 0 failed`; `N exists` after
    /// `unchanged` only when some file was left alone for that reason.
    package static func summary(_ domains: [ImportedDomain]) -> String {
        let counts = counts(domains)
        var parts = ["\(counts[.imported] ?? 0) imported", "\(counts[.unchanged] ?? 0) unchanged"]
        if let exists = counts[.exists], exists > 0 { parts.append("\(exists) exists") }
        parts += ["\(counts[.absent] ?? 0) absent", "\(counts[.invalid] ?? 0) invalid", "\(counts[.failed] ?? 0) failed"]
        return "\(counted(domains.count, "domain")): " + parts.joined(separator: ", ")
    }

    /// One line per file, `HOST: FILE: RESULT (DETAIL): NOTE`; after it the file's findings,
    /// compiler style with the URL as the file name; then the summary. Every line has its control
    /// characters escaped: a URL, a reason and a server's finding quote what a peer sent.
    package static func text(_ domains: [ImportedDomain]) -> String {
        var text = ""
        func line(_ s: String) { text += s.escapingControlCharacters + "\n" }
        for d in domains {
            for f in d.files {
                var s = "\(d.host): \(f.kind.fileName): \(f.result.rawValue)"
                if let detail = f.detail { s += " (\(detail))" }
                if let note = f.note { s += ": \(note)" }
                line(s)
                for x in f.diagnostics {
                    text += ValidationReport.line(path: f.url.escapingControlCharacters, line: x.line, column: x.column,
                                                  severity: x.severity.escapingControlCharacters,
                                                  message: x.message.escapingControlCharacters, code: x.code.escapingControlCharacters)
                }
                if f.unlisted > 0 { line("\(f.url): note: \(counted(f.unlisted, "more finding", "more findings")) not shown") }
            }
        }
        line(summary(domains))
        return text
    }

    /// `{"domains":[{"host","files":[{"name","result","url","redirects","bytes","version","message",
    /// "diagnostics"}]}],"summary":{RESULT:N}}`, every result counted in the summary, zeros too.
    package static func json(_ domains: [ImportedDomain]) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("domains")
        w.beginArray()
        for d in domains {
            w.beginObject()
            w.key("host"); w.value(d.host)
            w.key("files")
            w.beginArray()
            for f in d.files {
                w.beginObject()
                w.key("name"); w.value(f.kind.fileName)
                w.key("result"); w.value(f.result.rawValue)
                w.key("url"); w.value(f.url)
                w.key("redirects")
                w.beginArray()
                for r in f.redirects { w.value(r) }
                w.endArray()
                w.key("bytes"); w.value(f.bytes)
                w.key("version"); w.value(f.version)
                w.key("message"); w.value(f.message)
                w.key("diagnostics")
                w.beginArray()
                for x in f.diagnostics {
                    w.beginObject()
                    w.key("severity"); w.value(x.severity)
                    w.key("code"); w.value(x.code)
                    w.key("message"); w.value(x.message)
                    w.key("line"); w.value(x.line)
                    w.key("column"); w.value(x.column)
                    w.key("jsonPath"); w.value(x.jsonPath)
                    w.endObject()
                }
                w.endArray()
                w.endObject()
            }
            w.endArray()
            w.endObject()
        }
        w.endArray()
        w.key("summary")
        w.beginObject()
        let counts = counts(domains)
        for r in ImportResult.allCases {
            w.key(r.rawValue); w.value(counts[r] ?? 0)
        }
        w.endObject()
        w.endObject()
        return w.output + "\n"
    }
}

extension AdminAnswer.Finding {
    /// A finding of this client's validator in the terms a server's `422` lists.
    init(_ d: Diagnostic) {
        self.init(severity: d.severity.rawValue, code: d.code.rawValue, message: d.message, line: d.line, column: d.column,
                  jsonPath: d.path.description)
    }
}
