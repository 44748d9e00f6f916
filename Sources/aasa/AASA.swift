import AASAServer
import ArgumentParser
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct AASA: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "aasa",
        abstract: "Host, validate and test apple-app-site-association files.",
        version: "0.1.0",
        subcommands: [ServeCommand.self, ValidateCommand.self, MatchCommand.self, CheckCommand.self, EntitlementsCommand.self, HealthCommand.self, DevCertsCommand.self]
    )

    /// SPEC: exit 2 for bad usage. ArgumentParser uses EX_USAGE (64) for that; map it here.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            let message = fullMessage(for: error)
            if !message.isEmpty {
                FileHandleOutput.standardError.write(message + "\n")
            }
            Glibc.exit(code.rawValue == 64 ? 2 : code.rawValue)
        }
    }
}

/// stdout and stderr for the commands, through the server's serialized console writer.
struct FileHandleOutput {
    let fd: Int32
    static let standardOutput = FileHandleOutput(fd: 1)
    static let standardError = FileHandleOutput(fd: 2)

    func write(_ text: String) { ConsoleOutput.write(text, to: fd) }
}
