import COpenSSL

enum Digest {
    static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { b in _ = SHA256(b.baseAddress, b.count, &digest) }
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
