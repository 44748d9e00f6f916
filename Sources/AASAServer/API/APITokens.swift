import AASAClient
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The bearer tokens of `--admin-token-file` (docs/platforms.md, "Tokens"): one a line,
/// `NAME:TOKEN` or `TOKEN` alone (named `token-N`, N its line), `#` comments. The file is read
/// again when its stamp changes (looked at on each API request: a `stat`, nothing when it is
/// unchanged) and on SIGHUP. A token is compared in constant time and never written anywhere.
final class APITokens: Sendable {
    struct Token: Sendable {
        var name: String
        var secret: [UInt8]
    }

    let path: String
    private struct Loaded: Sendable {
        var stamp: FileStamp?
        var tokens: [Token] = []
    }
    private let loaded = Locked(Loaded())
    private let log: Log

    init(path: String, log: Log) {
        self.path = path
        self.log = log
        refresh(force: true)
    }

    /// Reads the file again when it changed (or always, with `force`: SIGHUP). A file that is
    /// missing, cannot be read or is not a regular file revokes every token until it can be
    /// read again: a file replaced to revoke a token never leaves the old one working.
    func refresh(force: Bool = false) {
        let stamp = FileStamp(path: path)
        guard force || loaded.withLock({ $0.stamp != stamp }) else { return }
        let tokens: [Token]
        do {
            guard let bytes = try SnapshotBuilder.read(path)?.bytes else {
                log.error("api: token file \(path) is missing; every API request is refused (401) until it is back")
                loaded.withLock { $0 = Loaded(stamp: stamp, tokens: []) }
                return
            }
            let (entries, problems) = TokenFile.parse(String(decoding: bytes, as: UTF8.self))
            for problem in problems { log.error("api: token file \(path): \(problem); that line names no token") }
            tokens = entries.map { Token(name: $0.name, secret: Array($0.token.utf8)) }
        } catch {
            log.error("api: token file \(path): \(error.message); every API request is refused (401) until it can be read")
            loaded.withLock { $0 = Loaded(stamp: stamp, tokens: []) }
            return
        }
        if tokens.isEmpty { log.warning("api: token file \(path) holds no token; every API request is refused (401)") }
        // Names only: a token never reaches the log.
        log.info("api: \(tokens.count) token\(tokens.count == 1 ? "" : "s") from \(path) (\(tokens.map(\.name).joined(separator: ", ")))")
        loaded.withLock { $0 = Loaded(stamp: stamp, tokens: tokens) }
    }

    /// The name of the token an `Authorization` value carries, or nil. Every token is compared,
    /// each in time that depends on its length only, so the answer's timing says nothing of
    /// how much of a token was right.
    func authorize(_ authorization: String?) -> String? {
        refresh()
        guard let authorization else { return nil }
        let scheme = "bearer "
        guard authorization.utf8.count > scheme.utf8.count,
              authorization.prefix(scheme.count).lowercased() == scheme else { return nil }
        let given = Array(authorization.utf8.dropFirst(scheme.utf8.count))
        var found: String?
        for token in loaded.withLock({ $0.tokens }) where APITokens.equalInConstantTime(given, token.secret) && found == nil {
            found = token.name
        }
        return found
    }

    static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count) | (a.count == b.count ? 0 : 1)
        let n = max(a.count, b.count)
        for i in 0..<n {
            let x = i < a.count ? a[i] : 0
            let y = i < b.count ? b[i] : 0
            difference |= x ^ y
        }
        return difference == 0
    }
}
