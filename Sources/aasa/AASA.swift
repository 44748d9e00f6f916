import AASAServer
import ArgumentParser
import AASATransport
import AASACommands
import AASAMonitor
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
        version: aasaVersion,
        subcommands: [ServeCommand.self, ValidateCommand.self, MatchCommand.self, CheckCommand.self, MonitorCommand.self, ImportCommand.self, EntitlementsCommand.self, SiteCommand.self, CertCommand.self, HealthCommand.self, DevCertsCommand.self]
    )

    /// Every command exits 2 for bad usage (docs/validation.md, docs/check.md). ArgumentParser uses
    /// EX_USAGE (64) for that; map it here.
    static func main() {
        openMissingStandardDescriptors()
        initializeOpenSSL()
        var parsed: ParsableCommand.Type?
        do {
            var command = try parseAsRoot()
            parsed = type(of: command)
            try command.run()
        } catch {
            let code = exitCode(for: error)
            if code == .success {
                exit(withError: error)
            }
            var message = fullMessage(for: error)
            // A usage error found while running (a bad URL, a bad --https address) belongs to the
            // subcommand that was parsed: show its usage, not the list of subcommands.
            if let parsed, parsed != AASA.self, let validation = error as? ValidationError {
                message = "Error: \(validation.message)\nUsage: " + usageString(for: parsed)
                    + "\n  See '\(commandPath(to: parsed).joined(separator: " ")) --help' for more information."
            }
            if !message.isEmpty {
                FileHandleOutput.standardError.write(message + "\n")
            }
            Glibc.exit(code.rawValue == 64 ? 2 : code.rawValue)
        }
    }
}

/// The names from `aasa` down to `command` (`aasa site put`), found in the tree of subcommands.
func commandPath(to command: ParsableCommand.Type, from root: ParsableCommand.Type = AASA.self) -> [String] {
    let name = root.configuration.commandName ?? ""
    if command == root { return [name] }
    for sub in root.configuration.subcommands {
        let path = commandPath(to: command, from: sub)
        if !path.isEmpty { return [name] + path }
    }
    return []
}

/// Descriptors 0, 1 and 2 the process was started without (`aasa serve >&- 2>&-`, a careless
/// supervisor) are opened on /dev/null before anything else runs: otherwise the next socket or
/// file takes their number, and every log line meant for stdout or stderr is written into it (a
/// listener, a client's connection, a key file being written).
func openMissingStandardDescriptors() {
    for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
        // open(2) returns the lowest free number: this one, as the lower ones are open by now.
        let null = open("/dev/null", O_RDWR | O_NOCTTY)
        if null >= 0, null != fd {
            dup2(null, fd)
            close(null)
        }
    }
}
