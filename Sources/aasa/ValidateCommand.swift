import AASACore
import ArgumentParser

enum OutputFormat: String, ExpressibleByArgument, CaseIterable {
    case text
    case json
}

struct ValidateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check apple-app-site-association files.",
        discussion: """
        PATH is a file, or a config directory (then every site in it). Exit status: 0 no errors \
        (warnings allowed), 1 errors (with --strict, warnings count too), 2 bad usage or unreadable input.
        """
    )

    @Argument(help: "Files or config directories.")
    var paths: [String]

    @Option(help: "Output format: text or json.")
    var format: OutputFormat = .text

    @Flag(help: "Count warnings as errors.")
    var strict = false

    func run() throws {
        var results: [(path: String, file: AASAFile)] = []
        var unreadable = false
        for path in paths {
            do {
                if InputFiles.isDirectory(path) {
                    let sites = try InputFiles.sites(in: path) { FileHandleOutput.standardError.write("aasa: \($0)\n") }
                    if sites.isEmpty {
                        FileHandleOutput.standardError.write("aasa: \(path): no site folders found\n")
                        unreadable = true
                    }
                    for site in sites {
                        do {
                            results.append((site.file, AASAFile(bytes: try InputFiles.read(site.file))))
                        } catch {
                            FileHandleOutput.standardError.write("aasa: \(error)\n")
                            unreadable = true
                        }
                    }
                } else {
                    results.append((path, AASAFile(bytes: try InputFiles.read(path))))
                }
            } catch {
                FileHandleOutput.standardError.write("aasa: \(error)\n")
                unreadable = true
            }
        }

        let out = FileHandleOutput.standardOutput
        switch format {
        case .text:
            var text = ""
            for (path, file) in results {
                for d in file.diagnostics {
                    text += "\(path):\(d.line):\(d.column): \(d.severity.rawValue): \(d.message) [\(d.code.rawValue)]\n"
                }
            }
            let errors = results.reduce(0) { $0 + $1.file.errorCount }
            let warnings = results.reduce(0) { $0 + $1.file.warningCount }
            text += "\(errors) errors, \(warnings) warnings in \(results.count) files\n"
            out.write(text)
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("files")
            w.beginArray()
            for (path, file) in results {
                w.beginObject()
                w.key("path"); w.value(path)
                w.key("valid"); w.value(passes(file))
                w.key("diagnostics")
                w.write(file.diagnostics)
                w.endObject()
            }
            w.endArray()
            w.endObject()
            out.write(w.output + "\n")
        }

        if unreadable { throw ExitCode(2) }
        if results.contains(where: { !passes($0.file) }) { throw ExitCode(1) }
    }

    private func passes(_ file: AASAFile) -> Bool {
        file.isValid && !(strict && file.warningCount > 0)
    }
}
