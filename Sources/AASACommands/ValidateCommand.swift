import AASACore
import ArgumentParser
import AASATransport

package enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text
    case json
}

/// `validate`'s formats: its own two, and three that CI systems read (GitHub Actions workflow
/// commands, SARIF 2.1.0 for code scanning, GitLab's Code Quality report).
package enum ValidateFormat: String, ExpressibleByArgument, CaseIterable {
    case text
    case json
    case github
    case sarif
    case gitlab
}

extension AssociationFileKind: ExpressibleByArgument {}

package struct ValidateCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check association files: apple-app-site-association, assetlinks.json, webauthn and Apple Pay's merchant ID file.",
        discussion: """
        PATH is a file, a site folder (every association file in it), or a config directory (every \
        association file of every site in it). A file's rules follow its name (assetlinks.json, webauthn, \
        apple-developer-merchantid-domain-association; any other name is read as apple-app-site-association) \
        unless --kind names them. Exit status: 0 no errors (warnings allowed), 1 errors (with --strict, \
        warnings count too), 2 bad usage or unreadable input.
        """
    )

    @Argument(help: "Files, site folders or config directories.")
    package var paths: [String]

    @Option(help: "Output format: text, json, or for CI github (workflow commands that annotate a pull request), sarif (SARIF 2.1.0, for code scanning) or gitlab (a Code Quality report).")
    package var format: ValidateFormat = .text

    @Option(help: "Read the files given as this kind (default: by file name).")
    package var kind: AssociationFileKind?

    @Flag(help: "Count warnings as errors.")
    package var strict = false

    package func validate() throws {
        if kind != nil, let directory = paths.first(where: InputFiles.isDirectory) {
            throw ValidationError("--kind applies to files; the files of \(directory) are read by their names")
        }
    }

    package func run() throws {
        var results: [(path: String, file: AssociationFile)] = []
        var unreadable = 0
        func complain(_ message: String) {
            FileHandleOutput.standardError.write("aasa: \(message)\n")
            unreadable += 1
        }
        func check(_ path: String, as kind: AssociationFileKind) {
            do {
                results.append((path, AssociationFile(kind: kind, bytes: try InputFiles.read(path))))
            } catch {
                complain("\(error)")
            }
        }

        for path in paths {
            guard InputFiles.isDirectory(path) else {
                check(path, as: kind ?? AssociationFileKind.kind(forFileName: path) ?? .aasa)
                continue
            }
            // A folder that holds association files is one site's folder (`aasa validate config/example.com`).
            let own = InputFiles.associationFiles(in: path)
            if !own.isEmpty {
                for file in own { check(file.path, as: file.kind) }
                continue
            }
            let sites: [InputFiles.Site]
            do {
                sites = try InputFiles.sites(in: path) { FileHandleOutput.standardError.write("aasa: \($0)\n") }
            } catch {
                complain("\(error)")
                continue
            }
            if sites.isEmpty {
                complain("\(path): no site folders and no association files found")
            }
            for site in sites {
                let files = InputFiles.associationFiles(in: site.folder)
                if files.isEmpty {
                    complain("\(site.folder): no association file (\(AssociationFileKind.allCases.map(\.fileName).joined(separator: ", ")))")
                }
                for file in files { check(file.path, as: file.kind) }
            }
        }

        let report = ValidationReport(files: results.map { ValidationReport.File(path: $0.path, file: $0.file) },
                                      strict: strict, unread: unreadable)
        let out = FileHandleOutput.standardOutput
        switch format {
        case .text: out.write(report.text())
        case .json: out.write(report.json(passes: passes))
        case .github: out.write(report.githubCommands())
        case .sarif: out.write(report.sarif())
        case .gitlab: out.write(report.gitlabCodeQuality())
        }

        if unreadable > 0 { throw ExitCode(2) }
        if results.contains(where: { !passes($0.file) }) { throw ExitCode(1) }
    }

    private func passes(_ file: AssociationFile) -> Bool {
        file.isValid && !(strict && file.warningCount > 0)
    }
}
