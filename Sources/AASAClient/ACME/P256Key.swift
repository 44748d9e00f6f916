import COpenSSL
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// An EC P-256 private key in libcrypto: the ACME account key (signs every request, ES256),
/// a certificate's key (its CSR) and a challenge certificate's key.
/// `@unchecked Sendable`: it wraps an `EVP_PKEY`, never changed after it is made (signing only reads it).
final package class P256Key: @unchecked Sendable {
    /// The `EVP_PKEY`, owned.
    package let pkey: OpaquePointer

    private init(owning pkey: OpaquePointer) {
        self.pkey = pkey
    }

    deinit { EVP_PKEY_free(pkey) }

    static package func generate() throws(ACMEError) -> P256Key {
        TLSError.clearQueue()
        guard let key = aasa_EVP_EC_gen_p256() else { throw ACMEError(.crypto, "EC P-256 key generation: \(TLSError("EVP_EC_gen"))") }
        return P256Key(owning: key)
    }

    /// Reads a PEM private key; it must be EC P-256 (the account key of RFC 8555 §7.3 with ES256).
    package init(pem: [UInt8]) throws(ACMEError) {
        TLSError.clearQueue()
        let key: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { throw ACMEError(.crypto, "not a PEM private key: \(TLSError("PEM_read_bio_PrivateKey"))") }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC,
              EVP_PKEY_get_utf8_string_param(key, "group", &name, name.count, &length) == 1,
              String(decoding: name.prefix(length).map(UInt8.init), as: UTF8.self) == "prime256v1" else {
            EVP_PKEY_free(key)
            TLSError.clearQueue()
            throw ACMEError(.crypto, "the key is not EC P-256")
        }
        self.pkey = key
    }

    /// The private key as PKCS#8 PEM.
    package func privateKeyPEM() throws(ACMEError) -> [UInt8] {
        try P256Key.pem { PEM_write_bio_PrivateKey($0, pkey, nil, nil, 0, nil, nil) }
    }

    static package func pem(_ write: (OpaquePointer) -> Int32) throws(ACMEError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw ACMEError(.crypto, "BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw ACMEError(.crypto, "PEM_write: \(TLSError("PEM_write"))") }
        var data: UnsafeMutablePointer<CChar>?
        let length = aasa_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw ACMEError(.crypto, "PEM_write: empty") }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
    }

    /// The public point's affine coordinates, 32 bytes each (the uncompressed point is
    /// `04 || x || y`, SEC 1 §2.3.3).
    var coordinates: (x: [UInt8], y: [UInt8]) {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        let ok = EVP_PKEY_get_octet_string_param(pkey, "pub", &point, point.count, &length)
        precondition(ok == 1 && length == 65 && point[0] == 4, "a P-256 key has an uncompressed 65-byte public point")
        return (Array(point[1..<33]), Array(point[33..<65]))
    }

    /// The public key as a JWK (RFC 7518 §6.2.1), with exactly the required members in
    /// lexicographic order and no white space: the form RFC 7638 §3 hashes for the thumbprint,
    /// also used in JWS headers.
    var jwk: String {
        let (x, y) = coordinates
        return JWK.canonical(["crv": "P-256", "kty": "EC", "x": Base64URL.encode(x), "y": Base64URL.encode(y)])
    }

    /// The JWK thumbprint (RFC 7638 §3): base64url of SHA-256 over the canonical JWK. The
    /// second half of every key authorization (RFC 8555 §8.1).
    package var thumbprint: String { JWK.thumbprint(jwk) }

    /// ES256 (RFC 7518 §3.4): ECDSA over SHA-256, as the 64-byte `r || s`, each big-endian and
    /// left-padded to 32 bytes. libcrypto gives a DER `ECDSA-Sig-Value`, which JWS does not use.
    func signES256(_ data: [UInt8]) throws(ACMEError) -> [UInt8] {
        TLSError.clearQueue()
        guard let md = EVP_MD_CTX_new() else { throw ACMEError(.crypto, "EVP_MD_CTX_new") }
        defer { EVP_MD_CTX_free(md) }
        var length = 0
        guard EVP_DigestSignInit(md, nil, EVP_sha256(), nil, pkey) == 1,
              EVP_DigestSign(md, nil, &length, data, data.count) == 1 else {
            throw ACMEError(.crypto, "ES256: \(TLSError("EVP_DigestSign"))")
        }
        var der = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(md, &der, &length, data, data.count) == 1 else { throw ACMEError(.crypto, "ES256: \(TLSError("EVP_DigestSign"))") }
        return try P256Key.rawSignature(fromDER: Array(der.prefix(length)))
    }

    /// `ECDSA-Sig-Value ::= SEQUENCE { r INTEGER, s INTEGER }` to `r || s`.
    static func rawSignature(fromDER der: [UInt8]) throws(ACMEError) -> [UInt8] {
        let sig: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var p: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &p, buffer.count)
        }
        guard let sig else { throw ACMEError(.crypto, "ES256: the signature is not DER") }
        defer { ECDSA_SIG_free(sig) }
        var out = [UInt8](repeating: 0, count: 64)
        guard let r = ECDSA_SIG_get0_r(sig), let s = ECDSA_SIG_get0_s(sig),
              out.withUnsafeMutableBufferPointer({ BN_bn2binpad(r, $0.baseAddress, 32) == 32 && BN_bn2binpad(s, $0.baseAddress! + 32, 32) == 32 }) else {
            throw ACMEError(.crypto, "ES256: r or s is longer than 32 bytes")
        }
        return out
    }
}

/// JSON Web Keys as ACME needs them.
package enum JWK {
    /// Members in lexicographic order of their names, no white space (RFC 7638 §3.3). Values
    /// here are base64url or fixed names, which need no escaping.
    static package func canonical(_ members: [String: String]) -> String {
        "{" + members.keys.sorted().map { "\"\($0)\":\"\(members[$0]!)\"" }.joined(separator: ",") + "}"
    }

    static package func thumbprint(_ canonicalJWK: String) -> String {
        Base64URL.encode(SHA256Digest.hash(Array(canonicalJWK.utf8)))
    }
}

package enum SHA256Digest {
    static package func hash(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = EVP_Digest(bytes, bytes.count, &out, &length, EVP_sha256(), nil)
        precondition(ok == 1 && length == 32, "SHA-256 does not fail")
        return out
    }

    /// HMAC-SHA256 (RFC 2104), for HS256 in external account binding (RFC 8555 §7.3.4).
    static package func hmac(key: [UInt8], _ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let r = HMAC(EVP_sha256(), key, Int32(key.count), bytes, bytes.count, &out, &length)
        precondition(r != nil && length == 32, "HMAC-SHA256 does not fail")
        return out
    }
}
