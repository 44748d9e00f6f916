import AASACore
import ArgumentParser

struct MatchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "match",
        abstract: "Decide which app opens a URL, as iOS decides it.",
        discussion: """
        aasa match FILE URL, or aasa match --config DIR URL (the site is chosen by the URL's host, \
        exact before wildcard). Exit status: 0 when at least one app (or the --app app) gets match, \
        1 otherwise, 2 bad usage, an unreadable file, or one that is not JSON.
        """
    )

    @Argument(help: "FILE URL, or only URL with --config.")
    var arguments: [String]

    @Option(help: "A config directory; the site is chosen by the URL's host.")
    var config: String?

    @Option(help: "Decide only for this app ID.")
    var app: String?

    @Option(help: "The host the file is served from (default: the URL's host).")
    var domain: String?

    @Option(help: "Output format: text or json.")
    var format: OutputFormat = .text

    func validate() throws {
        let expected = config == nil ? 2 : 1
        guard arguments.count == expected else {
            throw ValidationError(config == nil ? "expected FILE and URL" : "with --config, expected only URL")
        }
    }

    func run() throws {
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
            let sites: [InputFiles.Site]
            do {
                sites = try InputFiles.sites(in: config)
            } catch {
                FileHandleOutput.standardError.write("aasa: \(error)\n")
                throw ExitCode(2)
            }
            let index = SiteIndex(sites.map { ($0.name, $0.file) })
            guard let site = index.lookup(domain) else {
                FileHandleOutput.standardError.write("aasa: no site in \(config) serves \(domain)\n")
                report(url: urlText, host: url.host, results: [])
                throw ExitCode(1)
            }
            path = site.value
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
        for d in file.diagnostics {
            FileHandleOutput.standardError.write("\(path):\(d.line):\(d.column): \(d.severity.rawValue): \(d.message) [\(d.code.rawValue)]\n")
        }
        guard let document = file.document else {
            FileHandleOutput.standardError.write("aasa: \(path): not a JSON object; nothing to match\n")
            throw ExitCode(2)
        }

        let results = document.decide(url, domain: domain, apps: app.map { [$0] })
        report(url: urlText, host: url.host, results: results)
        if !results.contains(where: { $0.decision == .match }) { throw ExitCode(1) }
    }

    private func report(url: String, host: String, results: [AppDecision]) {
        let out = FileHandleOutput.standardOutput
        switch format {
        case .text:
            var text = ""
            if results.isEmpty { text += "no app: the file lists no applinks app\n" }
            for r in results {
                text += "\(r.app): \(r.decision.rawValue)"
                if let d = r.detail, let c = r.component { text += " (details[\(d)], component \(c))" }
                text += "\n"
            }
            out.write(text)
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("url"); w.value(url)
            w.key("host"); w.value(host)
            w.key("results")
            w.write(results)
            w.endObject()
            out.write(w.output + "\n")
        }
    }
}
