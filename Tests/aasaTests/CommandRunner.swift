import Foundation

/// Runs the built `aasa` binary, as a user would from a shell.
struct CommandResult {
    var status: Int32
    var stdout: String
    var stderr: String

    /// stdout parsed as JSON.
    func json() throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
        guard let dict = object as? [String: Any] else { throw CocoaError(.coderReadCorrupt) }
        return dict
    }
}

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

    /// - Parameter environment: variables set (or, with an empty value, set empty) on top of ours.
    static func run(_ arguments: [String], in directory: URL? = nil, environment: [String: String] = [:]) throws -> CommandResult {
        let process = Process()
        process.executableURL = url
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.currentDirectoryURL = directory ?? packageRoot
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // Read both pipes to the end before waiting, so a full pipe cannot stall the child.
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return CommandResult(status: process.terminationStatus,
                             stdout: String(decoding: outData, as: UTF8.self),
                             stderr: String(decoding: errData, as: UTF8.self))
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
