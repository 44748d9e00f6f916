import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// `--store-secret-file` (docs/replicas.md): private keys the server writes to the store are
/// sealed with AES-256-GCM (OpenSSL's EVP) under a key derived from the file, a random 96-bit
/// nonce per key. A sealed key reads `aasa-sealed:v1:KEYID:HEX`, KEYID naming the secret that
/// sealed it (the first 16 hex digits of the SHA-256 of the derived key), so a replica with
/// another secret says so instead of serving garbage. A key row may also hold plain PEM (a
/// platform that writes its own rows), which is read as it is.
struct KeySealer: Sendable {
    static let prefix = "aasa-sealed:v1:"
    private let key: [UInt8]
    let keyID: String

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// From the secret file: at least 32 bytes, whatever they are; the key is their SHA-256.
    init(secretFile path: String) throws(Failure) {
        guard let bytes = (try? SnapshotBuilder.read(path))??.bytes else { throw Failure(description: "--store-secret-file: cannot read \(path)") }
        guard bytes.count >= 32 else {
            throw Failure(description: "--store-secret-file: \(path) holds \(bytes.count) bytes; at least 32 are needed (for instance `openssl rand -hex 32 > \(path)`)")
        }
        key = KeySealer.sha256(Array("aasa store key sealing v1".utf8) + bytes)
        keyID = KeySealer.hex(KeySealer.sha256(key)).prefix(16).description
    }

    static func isSealed(_ text: String) -> Bool { text.hasPrefix(prefix) }

    func seal(_ plain: String) -> String {
        var nonce = [UInt8](repeating: 0, count: 12)
        _ = RAND_bytes(&nonce, 12)
        let input = Array(plain.utf8)
        var output = [UInt8](repeating: 0, count: input.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        let ctx = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ctx) }
        var n: Int32 = 0, final: Int32 = 0
        let ok = EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1
            && EVP_EncryptUpdate(ctx, &output, &n, input, Int32(input.count)) == 1
            && output.withUnsafeMutableBufferPointer({ EVP_EncryptFinal_ex(ctx, $0.baseAddress! + Int(n), &final) }) == 1
            && EVP_CIPHER_CTX_ctrl(ctx, KeySealer.getTag, 16, &tag) == 1
        precondition(ok, "AES-256-GCM sealing failed: OpenSSL is broken")
        return KeySealer.prefix + keyID + ":" + KeySealer.hex(nonce + Array(output[0..<Int(n + final)]) + tag)
    }

    /// The PEM of a sealed key; a plain one as it is.
    func open(_ stored: String) throws(Failure) -> String {
        try KeySealer.open(stored, with: self)
    }

    /// `sealer` nil: no secret configured, so a sealed key cannot be read.
    static func open(_ stored: String, with sealer: KeySealer?) throws(Failure) -> String {
        guard isSealed(stored) else { return stored }
        let rest = stored.dropFirst(prefix.count)
        guard let colon = rest.firstIndex(of: ":") else { throw Failure(description: "a sealed key that is not KEYID:HEX") }
        let id = String(rest[..<colon])
        guard let sealer else { throw Failure(description: "the key is sealed (secret \(id)) and no --store-secret-file is given") }
        guard id == sealer.keyID else { throw Failure(description: "the key is sealed with another secret (\(id), this replica's is \(sealer.keyID))") }
        guard let bytes = unhex(rest[rest.index(after: colon)...]), bytes.count >= 28 else { throw Failure(description: "a sealed key that is not hex") }
        let nonce = Array(bytes[0..<12]), tag = Array(bytes[(bytes.count - 16)...]), sealed = Array(bytes[12..<(bytes.count - 16)])
        var output = [UInt8](repeating: 0, count: sealed.count + 16)
        let ctx = EVP_CIPHER_CTX_new()
        defer { EVP_CIPHER_CTX_free(ctx) }
        var n: Int32 = 0, final: Int32 = 0
        var expected = tag
        let ok = EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, sealer.key, nonce) == 1
            && EVP_DecryptUpdate(ctx, &output, &n, sealed, Int32(sealed.count)) == 1
            && EVP_CIPHER_CTX_ctrl(ctx, setTag, 16, &expected) == 1
            && output.withUnsafeMutableBufferPointer({ EVP_DecryptFinal_ex(ctx, $0.baseAddress! + Int(n), &final) }) == 1
        guard ok else { throw Failure(description: "the sealed key does not open (altered, or another secret)") }
        return String(decoding: output[0..<Int(n + final)], as: UTF8.self)
    }

    /// EVP_CTRL_GCM_GET_TAG and EVP_CTRL_GCM_SET_TAG (openssl/evp.h).
    private static let getTag: Int32 = 0x10
    private static let setTag: Int32 = 0x11

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        bytes.withUnsafeBufferPointer { b in _ = SHA256(b.baseAddress, b.count, &digest) }
        return digest
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func unhex(_ text: Substring) -> [UInt8]? {
        let chars = Array(text.utf8)
        guard chars.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: return c - 0x30
            case 0x61...0x66: return c - 0x61 + 10
            case 0x41...0x46: return c - 0x41 + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var i = 0
        while i < chars.count {
            guard let hi = value(chars[i]), let lo = value(chars[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
