import ArgumentParser

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve apple-app-site-association files over HTTPS (not built yet)."
    )

    func run() throws {
        FileHandleOutput.standardError.write("aasa serve: the server is not built yet; use `aasa validate` and `aasa match`.\n")
        throw ExitCode(1)
    }
}
