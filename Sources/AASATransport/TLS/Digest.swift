import COpenSSL

/// SHA-256 as the server and the commands use it: a file's entity tag (the version it is served
/// with), the development CA's identifiers.
package enum Digest {
    /// SHA-256, fetched from the default provider once (`nonisolated(unsafe)`: a pointer is not
    /// Sendable; a fetched EVP_MD is immutable and may be used by any thread, OpenSSL's
    /// crypto(7), "Performance"). `SHA256()` fetches it again at each call in OpenSSL 3: most
    /// of the 9 500 instructions a version's ETag cost at start (docs/performance.md).
    nonisolated(unsafe) private static let sha256 = EVP_MD_fetch(nil, "SHA256", nil)

    package static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { b in EVP_Digest(b.baseAddress, b.count, &digest, &length, sha256, nil) }
        precondition(ok == 1 && length == 32, "SHA-256 failed")
        return String(unsafeUninitializedCapacity: 64) { out in
            let hex: StaticString = "0123456789abcdef"
            for (i, byte) in digest.enumerated() {
                out[2 * i] = hex.utf8Start[Int(byte >> 4)]
                out[2 * i + 1] = hex.utf8Start[Int(byte & 15)]
            }
            return 64
        }
    }

    /// The strong entity tag a file's bytes are served with, quoted: the first 16 hex digits of
    /// their SHA-256 (docs/serving.md, "Responses"). The write API's `version` and `aasa import`'s
    /// are the same without the quotes.
    package static func entityTag(_ bytes: [UInt8]) -> String { "\"" + sha256Hex(bytes).prefix(16) + "\"" }
}
