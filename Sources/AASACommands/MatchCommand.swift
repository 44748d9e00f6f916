import AASACore
import ArgumentParser

package struct MatchCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Decide which app opens a URL, as iOS decides it.",
        discussion: """
        aasa match FILE URL, or aasa match --config DIR URL (the site is chosen by the URL's host, \
        exact before wildcard; a wildcard folder also serves its base name). FILE may be a site \
        folder: its apple-app-site-association is read. Validation findings go to stderr and do \
        not stop matching, but a file with a JSON syntax error is never read by a device: exit 2. \
        Exit status: 0 when at least one app (or the --app app) gets match, \
        1 otherwise, 2 bad usage, an unreadable file, or one that is not JSON.
        """
    )

    @Argument(help: "FILE URL (FILE may be a site folder such as config/example.com), or only URL with --config.")
    var arguments: [String]

    @Option(help: "A config directory; the site is chosen by the URL's host.")
    package var config: String?

    @Option(help: "Decide only for this app ID.")
    package var app: String?

    @Option(help: "The host the file is served from (default: the URL's host).")
    package var domain: String?

    @Option(help: "Output format.")
    package var format: OutputFormat = .text

    package func validate() throws {
        let expected = config == nil ? 2 : 1
        guard arguments.count == expected else {
            throw ValidationError(config == nil ? "expected FILE and URL" : "with --config, expected only URL")
        }
    }

    package func run() throws {
        let urlText = arguments[arguments.count - 1]
        let url: URLParts
        do {
            url = try URLParts(urlText)
        } catch {
            throw ValidationError(error.description)
        }
        let domain = domain.map(URLParts.normalizeHost) ?? url.host

        let path: String
        if let config {
            let (sites, index) = try InputFiles.siteIndex(config: config)
            guard let site = index.lookup(domain) else {
                let names = sites.map(\.name.description)
                FileHandleOutput.standardError.write("aasa: no site in \(config) serves \(domain)"
                    + (names.isEmpty ? " (it has no site folders)\n" : " (sites: \(names.joined(separator: ", ")))\n"))
                // The message above is the whole answer in text; JSON readers still get a document.
                if format == .json { report(url: urlText, host: url.host, results: [], document: AASADocument(), parts: nil) }
                throw ExitCode(1)
            }
            path = site.value
        } else if InputFiles.isDirectory(arguments[0]) {
            // A site folder (`config/example.com`): its file, as the server would serve it.
            path = (arguments[0].hasSuffix("/") ? arguments[0] : arguments[0] + "/") + "apple-app-site-association"
        } else {
            path = arguments[0]
        }

        let file: AASAFile
        do {
            file = AASAFile(bytes: try InputFiles.read(path))
        } catch {
            FileHandleOutput.standardError.write("aasa: \(error)\n")
            throw ExitCode(2)
        }
        var findings = ""
        for d in file.diagnostics {
            findings += "\(path):\(d.line):\(d.column): \(d.severity.rawValue): \(d.message) [\(d.code.rawValue)]\n"
        }
        // docs/validation.md, `aasa match`: a device's JSON parser rejects the whole file at the
        // first syntax error, even where ours recovers to report more, so there is nothing a device
        // would match.
        if file.diagnostics.contains(where: { $0.code.isJSONSyntaxError }) || file.document == nil {
            let why = file.document == nil && !file.diagnostics.contains(where: { $0.code.isJSONSyntaxError })
                ? "is not a JSON object" : "is not valid JSON"
            FileHandleOutput.standardError.write(findings + "aasa: \(path) \(why); a device never reads it: nothing to match\n")
            throw ExitCode(2)
        }
        if !file.diagnostics.isEmpty {
            findings += "\(path): \(counted(file.errorCount, "error")), \(counted(file.warningCount, "warning"))"
            findings += file.isValid ? "; matching\n" : "; the server would not serve this file; matching it anyway\n"
            FileHandleOutput.standardError.write(findings)
        }
        let document = file.document!

        let results = document.decide(url, domain: domain, apps: app.map { [$0] })
        // A component that decided while a misspelt `exclude` beside it was ignored: the finding
        // is above, but this is where it changed the answer.
        var notes = ""
        for r in results {
            guard let d = r.detail, let c = r.component, case .components(let components)? = document.appLinks?.details[d].rules,
                  components.indices.contains(c), let note = components[c].note else { continue }
            notes += "aasa: note: \(r.app): details[\(d)], component \(c) decided: \(note)\n"
        }
        if !notes.isEmpty { FileHandleOutput.standardError.write(notes) }
        // A URL on another host than the file's gets no_match with nothing to explain.
        report(url: urlText, host: url.host, results: results, document: document, parts: domain == url.host ? url : nil)
        if !results.contains(where: { $0.decision == .match }) { throw ExitCode(1) }
    }

    private func report(url: String, host: String, results: [AppDecision], document: AASADocument, parts: URLParts?) {
        let out = FileHandleOutput.standardOutput
        switch format {
        case .text:
            var text = ""
            let listed = document.appLinksAppIDs
            if results.isEmpty { text += "no app: the file lists no applinks app\n" }
            for r in results {
                text += "\(r.app): \(r.decision.rawValue)"
                if let rule = document.rule(deciding: r), let d = r.detail {
                    text += " (details[\(d)], \(rule.description))"
                } else if r.decision == .noMatch, let parts, let miss = document.nearMiss(parts, app: r.app) {
                    text += " (closest: details[\(miss.detail)], component \(miss.component): \(miss.reasons.joined(separator: "; ")))"
                } else if !listed.contains(r.app) {
                    text += listed.isEmpty
                        ? " (not listed: the file lists no applinks app)"
                        : " (not listed: the file's applinks apps are \(listed.joined(separator: ", ")))"
                }
                text += "\n"
            }
            out.write(text)
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("url"); w.value(url)
            w.key("host"); w.value(host)
            w.key("results")
            w.write(results, in: document)
            w.endObject()
            out.write(w.output + "\n")
        }
    }
}
