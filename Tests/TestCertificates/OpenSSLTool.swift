import ChildProcess
import Foundation

/// The `openssl` command, to check what libcrypto made in process with a second implementation.
public enum OpenSSLTool {
    public struct Result {
        public var status: Int32
        public var output: String
    }

    /// Runs `openssl ARGS` in `directory`; stdout and stderr together.
    public static func run(_ arguments: [String], in directory: String) throws -> Result {
        let r = try runCommand(URL(fileURLWithPath: "/usr/bin/openssl"), arguments, directory: URL(fileURLWithPath: directory), timeout: 120)
        return Result(status: r.status, output: r.stdout + r.stderr)
    }

    public static func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "aasa-acme-unit-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    public static func write(_ bytes: [UInt8], _ path: String) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }
}

/// `r || s` back to `ECDSA-Sig-Value` DER, written independently of the code under test.
public func derSignature(raw: [UInt8]) -> [UInt8] {
    func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var b = Array(bytes.drop { $0 == 0 })
        if b.isEmpty { b = [0] }
        if b[0] & 0x80 != 0 { b.insert(0, at: 0) }
        return [0x02, UInt8(b.count)] + b
    }
    let body = integer(raw[0..<32]) + integer(raw[32..<64])
    return [0x30, UInt8(body.count)] + body
}

public func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
}
