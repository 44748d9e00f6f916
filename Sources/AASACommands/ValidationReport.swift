import AASACore

/// What `aasa validate` found, written in each output format. Every format shows the findings
/// the validator lists, at most the first ``Diagnostic/listLimit`` (100) of a file: a file full
/// of one mistake repeated would otherwise print as many lines as it has bytes, and past the
/// first hundred, the next run after a fix says more. The summary line counts them all.
package struct ValidationReport {
    package struct File {
        package var path: String
        package var file: AssociationFile

        /// The findings written out.
        package var shown: ArraySlice<Diagnostic> { file.diagnostics[...] }
        /// Findings the validator counted but did not list.
        var notShown: Int { file.unlistedCount }
    }

    package var files: [File]
    /// `--strict`: warnings fail the run, and the summary says so.
    package var strict = false
    /// Paths given that could not be read (reported on stderr); the summary counts them, so a
    /// run that read nothing never looks like a clean one.
    package var unread = 0

    package init(files: [File], strict: Bool = false, unread: Int = 0) {
        self.files = files
        self.strict = strict
        self.unread = unread
    }

    package var errorCount: Int { files.reduce(0) { $0 + $1.file.errorCount } }
    package var warningCount: Int { files.reduce(0) { $0 + $1.file.warningCount } }

    /// `1 error, 2 warnings in 1 file`; with `--strict` and warnings, `(--strict: warnings count as
    /// errors)` after it, since the run then fails; `; 1 path not read` when some could not be.
    /// Empty when nothing was read: "0 errors … in 0 files" would read like success, and the
    /// messages on stderr are the whole answer.
    package var summary: String {
        if files.isEmpty && unread > 0 { return "" }
        var line = ValidationReport.summaryCounts(errors: errorCount, warnings: warningCount, files: files.count)
        if strict && warningCount > 0 { line += " (--strict: warnings count as errors)" }
        if unread > 0 { line += "; \(counted(unread, "path")) not read" }
        return line + "\n"
    }

    /// `1 error, 2 warnings in 1 file`, for counts found elsewhere too (`aasa site put` prints
    /// the server's findings).
    static package func summaryCounts(errors: Int, warnings: Int, files: Int) -> String {
        "\(counted(errors, "error")), \(counted(warnings, "warning")) in \(counted(files, "file"))"
    }

    /// The summary line for counts found elsewhere.
    static package func summary(errors: Int, warnings: Int, files: Int) -> String {
        summaryCounts(errors: errors, warnings: warnings, files: files) + "\n"
    }

    /// One finding, compiler style, for a finding this report holds or one a server listed.
    static package func line(path: String, line: Int, column: Int, severity: String, message: String, code: String) -> String {
        "\(path):\(line):\(column): \(severity): \(message) [\(code)]\n"
    }

    /// Compiler style, `PATH:LINE:COLUMN: error|warning: MESSAGE [CODE]`, then the summary.
    package func text() -> String {
        var text = ""
        for entry in files {
            for d in entry.shown {
                text += ValidationReport.line(path: entry.path, line: d.line, column: d.column, severity: d.severity.rawValue,
                                              message: d.message, code: d.code.rawValue)
            }
            if entry.notShown > 0 {
                text += "\(entry.path): note: \(counted(entry.notShown, "more finding", "more findings")) not shown\n"
            }
        }
        return text + summary
    }

    /// `{"files":[{"path","valid","diagnostics":[…]}]}`; `passes` decides `valid` (it follows `--strict`).
    package func json(passes: (AssociationFile) -> Bool) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("files")
        w.beginArray()
        for entry in files {
            w.beginObject()
            w.key("path"); w.value(entry.path)
            w.key("valid"); w.value(passes(entry.file))
            w.key("diagnostics")
            w.write(Array(entry.shown))
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.output + "\n"
    }
}

// MARK: - GitHub Actions

extension ValidationReport {
    /// One workflow command per finding, `::error file=PATH,line=L,col=C,title=CODE::MESSAGE`
    /// (`::warning` for warnings), then the summary line. GitHub Actions shows each as an
    /// annotation on the file and line of the pull request ("Workflow commands for GitHub Actions",
    /// docs.github.com, "Setting an error message").
    func githubCommands() -> String {
        var out = ""
        for entry in files {
            let file = ValidationReport.githubProperty(entry.path)
            for d in entry.shown {
                out += "::\(d.severity.rawValue) file=\(file),line=\(d.line),col=\(d.column),title=\(ValidationReport.githubProperty(d.code.rawValue))::"
                out += ValidationReport.githubData(d.message) + "\n"
            }
        }
        return out + summary
    }

    /// A command's message, escaped as the runner unescapes it (actions/toolkit,
    /// `escapeData` in packages/core/src/command.ts): `%`, CR and LF.
    static func githubData(_ s: String) -> String { githubEscaped(s, separators: false) }

    /// A command's property value (`escapeProperty`): also `:` and `,`, which would end it.
    static func githubProperty(_ s: String) -> String { githubEscaped(s, separators: true) }

    private static func githubEscaped(_ s: String, separators: Bool) -> String {
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "%": out += "%25"
            case "\r": out += "%0D"
            case "\n": out += "%0A"
            case ":" where separators: out += "%3A"
            case "," where separators: out += "%2C"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

// MARK: - SARIF

extension ValidationReport {
    /// One SARIF 2.1.0 log (OASIS, "Static Analysis Results Interchange Format Version 2.1.0"):
    /// one run of the tool `aasa`, one rule per code that occurs (§3.49, reportingDescriptor),
    /// one result per finding shown. GitHub code scanning reads it (`github/codeql-action/upload-sarif`).
    func sarif() -> String {
        var codes: [DiagnosticCode] = []
        var seen: Set<DiagnosticCode> = []
        for entry in files {
            for d in entry.shown where seen.insert(d.code).inserted { codes.append(d.code) }
        }
        codes.sort { $0.rawValue < $1.rawValue }
        var ruleIndex: [DiagnosticCode: Int] = [:]
        for (i, code) in codes.enumerated() { ruleIndex[code] = i }

        var w = JSONWriter()
        w.beginObject()
        w.key("$schema"); w.value("https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json")
        w.key("version"); w.value("2.1.0")
        w.key("runs")
        w.beginArray()
        w.beginObject()
        w.key("tool")
        w.beginObject()
        w.key("driver")
        w.beginObject()
        w.key("name"); w.value("aasa")
        w.key("version"); w.value(aasaVersion)
        w.key("rules")
        w.beginArray()
        for code in codes {
            w.beginObject()
            w.key("id"); w.value(code.rawValue)
            w.key("shortDescription"); ValidationReport.message(code.title, to: &w)
            w.key("fullDescription"); ValidationReport.message(code.explanation, to: &w)
            w.key("help"); ValidationReport.message(code.help, to: &w)
            w.key("defaultConfiguration")
            w.beginObject()
            w.key("level"); w.value(code.severity.rawValue)
            w.endObject()
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.endObject()
        // Columns count Unicode scalars (§3.14.17; GitHub assumes UTF-16 code units otherwise).
        w.key("columnKind"); w.value("unicodeCodePoints")
        w.key("results")
        w.beginArray()
        for entry in files {
            for d in entry.shown {
                w.beginObject()
                w.key("ruleId"); w.value(d.code.rawValue)
                w.key("ruleIndex"); w.value(ruleIndex[d.code])
                w.key("level"); w.value(d.severity.rawValue)
                w.key("message"); ValidationReport.message(d.message, to: &w)
                w.key("locations")
                w.beginArray()
                w.beginObject()
                w.key("physicalLocation")
                w.beginObject()
                w.key("artifactLocation")
                w.beginObject()
                w.key("uri"); w.value(entry.path)
                w.endObject()
                w.key("region")
                w.beginObject()
                w.key("startLine"); w.value(d.line)
                w.key("startColumn"); w.value(d.column)
                w.endObject()
                w.endObject()
                w.endObject()
                w.endArray()
                w.endObject()
            }
        }
        w.endArray()
        w.endObject()
        w.endArray()
        w.endObject()
        return w.output + "\n"
    }

    /// A SARIF message object (§3.11) with plain text only.
    private static func message(_ text: String, to w: inout JSONWriter) {
        w.beginObject()
        w.key("text"); w.value(text)
        w.endObject()
    }
}

// MARK: - GitLab Code Quality

extension ValidationReport {
    /// GitLab's Code Quality report ("Code Quality", docs.gitlab.com, "Implement a custom tool"):
    /// a JSON array of `{"description","check_name","fingerprint","severity","location":{"path","lines":{"begin"}}}`.
    /// GitLab compares fingerprints between a merge request and its target branch to tell new
    /// findings from old ones, so a fingerprint leaves out the line and column (an edit above a
    /// finding moves it, and it is not new): it hashes the path, the code, the message and the
    /// finding's rank among equal ones. The same findings give the same fingerprints in every run.
    func gitlabCodeQuality() -> String {
        var w = JSONWriter()
        var used: Set<String> = []
        w.beginArray()
        for entry in files {
            var occurrences: [String: Int] = [:]
            for d in entry.shown {
                let identity = "\(entry.path)\u{0}\(d.code.rawValue)\u{0}\(d.message)"
                let rank = occurrences[identity, default: 0]
                occurrences[identity] = rank + 1
                var fingerprint = ValidationReport.fingerprint("\(identity)\u{0}\(rank)")
                // Two different findings with the same 128-bit hash: never seen, but a report's
                // fingerprints must be unique, so the later one is hashed again.
                var salt = 0
                while !used.insert(fingerprint).inserted {
                    salt += 1
                    fingerprint = ValidationReport.fingerprint("\(identity)\u{0}\(rank)\u{0}\(salt)")
                }
                w.beginObject()
                w.key("description"); w.value(d.message)
                w.key("check_name"); w.value(d.code.rawValue)
                w.key("fingerprint"); w.value(fingerprint)
                w.key("severity"); w.value(d.severity == .error ? "major" : "minor")
                w.key("location")
                w.beginObject()
                w.key("path"); w.value(entry.path)
                w.key("lines")
                w.beginObject()
                w.key("begin"); w.value(d.line)
                w.endObject()
                w.endObject()
                w.endObject()
            }
        }
        w.endArray()
        return w.output + "\n"
    }

    /// 32 hex digits: two 64-bit FNV-1a hashes of the text with different offset bases. Not a
    /// security hash, only a stable name for a finding; the core has no digest and needs none.
    static package func fingerprint(_ text: String) -> String {
        func fnv1a(_ basis: UInt64) -> UInt64 {
            var hash = basis
            for byte in text.utf8 {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01B3
            }
            return hash
        }
        func hex(_ n: UInt64) -> String {
            let digits = String(n, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return hex(fnv1a(0xCBF2_9CE4_8422_2325)) + hex(fnv1a(0x6C62_272E_07BB_0142))
    }
}
