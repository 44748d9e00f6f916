import COpenSSL
import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// The self-signed certificate of a TLS-ALPN-01 challenge (RFC 8737 §3) in an `SSL_CTX` of its
/// own: the host as its only subjectAltName, and the critical id-pe-acmeIdentifier extension
/// holding the SHA-256 of the key authorization. The context selects ALPN `acme-tls/1` and
/// nothing else, so no application data is ever served with this certificate.
/// `@unchecked Sendable`: it wraps an `SSL_CTX`, immutable once made and safe to share (OpenSSL).
final class ChallengeCertificate: @unchecked Sendable {
    /// Owned.
    let context: OpaquePointer
    let host: String

    /// id-pe-acmeIdentifier (RFC 8737 §6.1).
    static let acmeIdentifierOID = "1.3.6.1.5.5.7.1.31"

    init(host: String, keyAuthorization: String) throws(ACMEError) {
        let key = try P256Key.generate()
        let cert = try ChallengeCertificate.make(host: host, key: key, digest: SHA256Digest.hash(Array(keyAuthorization.utf8)))
        defer { X509_free(cert) }
        TLSError.clearQueue()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw ACMEError(.crypto, "SSL_CTX_new") }
        // RFC 8737 §4: TLS 1.2 or later. The validation server sends SNI and offers only acme-tls/1.
        guard aasa_SSL_CTX_set_min_proto_version(ctx, aasa_tls1_2_version()) == 1,
              SSL_CTX_use_certificate(ctx, cert) == 1,
              SSL_CTX_use_PrivateKey(ctx, key.pkey) == 1 else {
            SSL_CTX_free(ctx)
            throw ACMEError(.crypto, "challenge context for \(host): \(TLSError("SSL_CTX_use_certificate"))")
        }
        SSL_CTX_set_options(ctx, aasa_server_options())
        SSL_CTX_set_alpn_select_cb(ctx, acmeALPNSelect, nil)
        // The ServerName step runs after the ClientHello callback moved the connection here;
        // without a callback of its own OpenSSL would call the serving context's, which would
        // count the challenge's host as a name no certificate covers. This context has no
        // certificate callback: its own certificate is the one served.
        _ = aasa_SSL_CTX_set_tlsext_servername_callback(ctx, challengeServerName)
        self.context = ctx
        self.host = host
    }

    deinit { SSL_CTX_free(context) }

    /// The certificate alone (the unit tests read it back with the openssl tool).
    static func make(host: String, key: P256Key, digest: [UInt8]) throws(ACMEError) -> OpaquePointer {
        TLSError.clearQueue()
        guard let cert = X509_new() else { throw ACMEError(.crypto, "X509_new") }
        do throws(ACMEError) {
            let serial = BN_new()
            defer { BN_free(serial) }
            let now = time(nil)
            var start = now - 86_400
            var end = now + 7 * 86_400
            guard X509_set_version(cert, 2) == 1,
                  BN_rand(serial, 127, 0, 0) == 1, BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert)) != nil,
                  X509_time_adj_ex(X509_getm_notBefore(cert), 0, 0, &start) != nil,
                  X509_time_adj_ex(X509_getm_notAfter(cert), 0, 0, &end) != nil,
                  let name = X509_get_subject_name(cert),
                  X509_NAME_add_entry_by_txt(name, "CN", aasa_mbstring_asc(), host, -1, -1, 0) == 1,
                  X509_set_issuer_name(cert, name) == 1,
                  X509_set_pubkey(cert, key.pkey) == 1 else {
                throw ACMEError(.crypto, "challenge certificate: \(TLSError("X509"))")
            }
            var ctx = X509V3_CTX()
            aasa_X509V3_set_ctx_nodb(&ctx)
            X509V3_set_ctx(&ctx, cert, cert, nil, nil, 0)
            guard let san = X509V3_EXT_conf_nid(nil, &ctx, NID_subject_alt_name, "DNS:" + host) else {
                throw ACMEError(.crypto, "subjectAltName: \(TLSError("X509V3_EXT_conf_nid"))")
            }
            defer { X509_EXTENSION_free(san) }
            // extnValue holds `Authorization ::= OCTET STRING (SIZE (32))` in DER (RFC 8737 §3),
            // so the extension's OCTET STRING wraps another one: 04 20 || SHA-256.
            let value = DER.tlv(DER.octetString, digest)
            guard let oid = OBJ_txt2obj(acmeIdentifierOID, 1) else { throw ACMEError(.crypto, "OBJ_txt2obj") }
            defer { ASN1_OBJECT_free(oid) }
            guard let octets = ASN1_OCTET_STRING_new() else { throw ACMEError(.crypto, "ASN1_OCTET_STRING_new") }
            defer { ASN1_OCTET_STRING_free(octets) }
            guard ASN1_OCTET_STRING_set(octets, value, Int32(value.count)) == 1,
                  let identifier = X509_EXTENSION_create_by_OBJ(nil, oid, 1, octets) else {
                throw ACMEError(.crypto, "acmeIdentifier: \(TLSError("X509_EXTENSION_create_by_OBJ"))")
            }
            defer { X509_EXTENSION_free(identifier) }
            guard X509_add_ext(cert, san, -1) == 1, X509_add_ext(cert, identifier, -1) == 1,
                  X509_sign(cert, key.pkey, EVP_sha256()) > 0 else {
                throw ACMEError(.crypto, "challenge certificate: \(TLSError("X509_sign"))")
            }
        } catch {
            X509_free(cert)
            throw error
        }
        return cert
    }
}

/// "acme-tls/1" in ALPN wire form, allocated once and never freed: OpenSSL keeps the pointer the
/// select callback returns until it copies it, so it must not be a Swift temporary (STYLE).
nonisolated(unsafe) private let acmeProtocolWire: UnsafeMutableBufferPointer<UInt8> = {
    let bytes: [UInt8] = [10] + Array(PendingChallenges.alpnProtocol.utf8)
    let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: bytes.count)
    _ = buffer.initialize(from: bytes)
    return buffer
}()

/// Selects acme-tls/1 when offered; anything else fails the handshake (RFC 8737 §4: this
/// certificate is for validation only).
private let acmeALPNSelect: @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
                                            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?) -> Int32 = { _, out, outLength, input, inputLength, _ in
    guard let out, let outLength, let input,
          ClientHelloExtensions.protocols(UnsafeBufferPointer(start: input, count: Int(inputLength)), listIsPrefixed: false)
            .contains(PendingChallenges.alpnProtocol) else {
        return SSL_TLSEXT_ERR_ALERT_FATAL
    }
    out.pointee = UnsafePointer(acmeProtocolWire.baseAddress! + 1)
    outLength.pointee = UInt8(acmeProtocolWire.count - 1)
    return SSL_TLSEXT_ERR_OK
}

private let challengeServerName: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { _, _, _ in
    aasa_tlsext_ok()
}
