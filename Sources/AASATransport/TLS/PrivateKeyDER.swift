/// An EC or RSA private key in the PEM forms certbot, cert-manager, ACME clients and
/// `openssl genpkey` write, read without OpenSSL: what a start needs of a key is its type, its
/// DER for the handshake that first uses it, and its public key to compare with the
/// certificate's (docs/performance.md, "A key per site"). Through OpenSSL 3.0 a key cost a
/// decoder walk and two encoder walks (`i2d_PrivateKey`, `i2d_PUBKEY`) under the providers'
/// global locks: 1.3 M instructions a key, the two loader threads taking turns.
///
/// Read here:
/// - PKCS #8 `PRIVATE KEY` (RFC 5208) holding either of the two below;
/// - SEC 1 `EC PRIVATE KEY` (RFC 5915) on a named curve, with its public key;
/// - PKCS #1 `RSA PRIVATE KEY` (RFC 8017 §A.1.2).
/// Anything else (an encrypted key, explicit curve parameters, an EC key without its public
/// point, Ed25519, two keys in one file) is nil: OpenSSL reads it, as every key was read before.
/// The public key is taken as the file states it; a key whose private half does not match it is
/// refused at its first handshake, by OpenSSL, as before.
package struct PrivateKeyDER: Equatable {
    /// `EC` or `RSA`, as `EVP_PKEY_get0_type_name` names them.
    package var type: String
    /// SEC 1 with its curve (EC) or PKCS #1 (RSA): what `d2i_ECPrivateKey`/`d2i_RSAPrivateKey`
    /// and a typed decoder read.
    package var der: [UInt8]
    /// The SubjectPublicKeyInfo (RFC 5280 §4.1.2.7) of the key, in DER.
    package var publicKeyInfo: [UInt8]

    /// The byte length of the order of the named curves this reader takes (P-256, P-384,
    /// P-521, secp256k1), by their OID element; nil for any other.
    static func orderBytes(_ curve: ArraySlice<UInt8>) -> Int? {
        switch Array(curve) {
        case [0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]: return 32   // prime256v1
        case [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x22]: return 48                     // secp384r1
        case [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x23]: return 66                     // secp521r1
        case [0x06, 0x05, 0x2B, 0x81, 0x04, 0x00, 0x0A]: return 32                     // secp256k1
        default: return nil
        }
    }

    static let ecPublicKey: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]        // 1.2.840.10045.2.1
    static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]  // 1.2.840.113549.1.1.1

    /// The key of a PEM file that holds exactly one key block of these forms (certificates
    /// beside it are allowed, as in a combined file), else nil.
    package init?(pem: [UInt8]) {
        var found: PrivateKeyDER?
        for label in ["PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY"] {
            let blocks = PEMBlocks.decode(pem, label: label)
            if blocks.isEmpty { continue }
            guard blocks.count == 1, found == nil else { return nil }
            switch label {
            case "PRIVATE KEY": found = PrivateKeyDER(pkcs8: blocks[0])
            case "EC PRIVATE KEY": found = PrivateKeyDER(sec1: blocks[0][...], curve: nil)
            default: found = PrivateKeyDER(pkcs1: blocks[0][...])
            }
            guard found != nil else { return nil }
        }
        guard let found else { return nil }
        self = found
    }

    /// PrivateKeyInfo ::= SEQUENCE { version, AlgorithmIdentifier, privateKey OCTET STRING, ... }
    init?(pkcs8 bytes: [UInt8]) {
        var top = DERReader(bytes[...])
        guard var info = top.read(tag: 0x30)?.reader, top.isEmpty,
              let version = info.read(tag: 0x02), version.content.count == 1, version.content.first! <= 1,
              var algorithm = info.read(tag: 0x30)?.reader, let oid = algorithm.read(tag: 0x06),
              let key = info.read(tag: 0x04) else { return nil }
        if oid.content.elementsEqual(PrivateKeyDER.ecPublicKey) {
            // The named curve is in the algorithm's parameters; the SEC 1 inside may omit it.
            guard let curve = algorithm.read(tag: 0x06), algorithm.isEmpty else { return nil }
            self.init(sec1: key.content, curve: curve.whole)
        } else if oid.content.elementsEqual(PrivateKeyDER.rsaEncryption) {
            self.init(pkcs1: key.content)
        } else {
            return nil
        }
    }

    /// ECPrivateKey ::= SEQUENCE { version 1, privateKey OCTET STRING,
    ///   parameters [0] ECParameters OPTIONAL, publicKey [1] BIT STRING OPTIONAL }
    /// `curve`: the named curve's OID element, from PKCS #8, when the structure may omit it.
    init?(sec1 bytes: ArraySlice<UInt8>, curve given: ArraySlice<UInt8>?) {
        var top = DERReader(bytes)
        guard var key = top.read(tag: 0x30)?.reader, top.isEmpty,
              let version = key.read(tag: 0x02), version.content.elementsEqual([1]),
              let secret = key.read(tag: 0x04) else { return nil }
        var curve = given
        if key.peek == 0xA0 {
            guard var parameters = key.read(tag: 0xA0)?.reader, let named = parameters.read(tag: 0x06), parameters.isEmpty else { return nil }
            // Stated twice, it must be the same curve.
            guard given.map({ $0.elementsEqual(named.whole) }) ?? true else { return nil }
            curve = named.whole
        }
        guard let curve, var wrapper = key.read(tag: 0xA1)?.reader, let point = wrapper.read(tag: 0x03), wrapper.isEmpty, key.isEmpty,
              point.content.first == 0 else { return nil }
        // The secret is a number below the curve's order, written in at most its length
        // (RFC 5915 §3); a curve not listed here is left to OpenSSL.
        guard let order = PrivateKeyDER.orderBytes(curve), (1...order).contains(secret.content.count),
              secret.content.contains(where: { $0 != 0 }) else { return nil }
        type = "EC"
        der = DERWriter.sequence([Array(version.whole), Array(secret.whole), DERWriter.element(0xA0, curve), DERWriter.element(0xA1, point.whole)])
        publicKeyInfo = DERWriter.sequence([DERWriter.sequence([DERWriter.element(0x06, PrivateKeyDER.ecPublicKey), Array(curve)]),
                                            Array(point.whole)])
    }

    /// RSAPrivateKey ::= SEQUENCE { version, modulus, publicExponent, privateExponent, ... }
    init?(pkcs1 bytes: ArraySlice<UInt8>) {
        var top = DERReader(bytes)
        // Version 0 (two primes): modulus, exponents, primes and CRT values, nothing after.
        guard var key = top.read(tag: 0x30)?.reader, top.isEmpty,
              let version = key.read(tag: 0x02), version.content.elementsEqual([0]),
              let modulus = key.read(tag: 0x02), let exponent = key.read(tag: 0x02) else { return nil }
        for _ in 0..<6 {
            guard let value = key.read(tag: 0x02), value.content.contains(where: { $0 != 0 }) else { return nil }
        }
        guard key.isEmpty, modulus.content.count >= 64 else { return nil }
        type = "RSA"
        der = Array(bytes)
        // RSAPublicKey ::= SEQUENCE { modulus, publicExponent }, in a BIT STRING with no unused bits.
        let publicKey = DERWriter.sequence([Array(modulus.whole), Array(exponent.whole)])
        publicKeyInfo = DERWriter.sequence([DERWriter.sequence([DERWriter.element(0x06, PrivateKeyDER.rsaEncryption), [0x05, 0x00]]),
                                            DERWriter.element(0x03, [0] + publicKey)])
    }
}

/// Definite-length DER out: what ``PrivateKeyDER`` builds.
enum DERWriter {
    static func element<C: Collection<UInt8>>(_ tag: UInt8, _ content: C) -> [UInt8] {
        var out: [UInt8] = [tag]
        let n = content.count
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var length: [UInt8] = []
            var rest = n
            while rest > 0 {
                length.insert(UInt8(rest & 0xFF), at: 0)
                rest >>= 8
            }
            out.append(0x80 | UInt8(length.count))
            out += length
        }
        out.append(contentsOf: content)
        return out
    }

    static func sequence(_ parts: [[UInt8]]) -> [UInt8] {
        element(0x30, parts.flatMap { $0 })
    }
}
