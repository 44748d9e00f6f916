import ChildProcess
import Foundation

/// What a command printed and how it ended (for every file of this module).
typealias CommandResult = ChildProcess.CommandResult

/// Runs the built `aasa` binary, as a user would from a shell.
enum AASABinary {
    /// `swift test` puts the test bundle beside the products it built, `aasa` among them.
    static let url: URL = {
        if let explicit = ProcessInfo.processInfo.environment["AASA_BIN"] { return URL(fileURLWithPath: explicit) }
        let runner = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for dir in [runner, runner.deletingLastPathComponent()] {
            let candidate = dir.appendingPathComponent("aasa")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return packageRoot.appendingPathComponent(".build/debug/aasa")
    }()

    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// - Parameters:
    ///   - environment: variables set (or, with an empty value, set empty) on top of ours.
    ///   - input: written to the command's standard input (empty when nil).
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:],
                    input: String? = nil, timeout: Double = 300) throws -> CommandResult {
        try runCommand(url, arguments, input: input.map { Data($0.utf8) }, directory: directory ?? packageRoot,
                       environment: environment, timeout: timeout)
    }
}

/// A temporary directory removed when the value goes away.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    @discardableResult
    func write(_ relativePath: String, _ contents: String) throws -> String {
        let file = url.appendingPathComponent(relativePath)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(contents.utf8).write(to: file)
        return file.path
    }
}
