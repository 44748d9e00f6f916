import COpenSSL

enum Digest {
    /// SHA-256, fetched from the default provider once (`nonisolated(unsafe)`: a pointer is not
    /// Sendable; a fetched EVP_MD is immutable and may be used by any thread, OpenSSL's
    /// crypto(7), "Performance"). `SHA256()` fetches it again at each call in OpenSSL 3: most
    /// of the 9 500 instructions a version's ETag cost at start (docs/performance.md).
    nonisolated(unsafe) private static let sha256 = EVP_MD_fetch(nil, "SHA256", nil)

    static func sha256Hex(_ bytes: [UInt8]) -> String {
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
}
