import COpenSSL
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The PKCS#10 request sent to finalize an order (RFC 8555 §7.4): a new P-256 key per
/// certificate, the host as subject CN and as the only subjectAltName DNS entry (the CA
/// issues exactly the order's identifiers, and RFC 8555 §7.4 requires the CSR to list them).
package struct CertificateRequest {
    package let key: P256Key
    /// DER, as the `csr` field carries it (base64url).
    package let der: [UInt8]

    package init(host: String) throws(ACMEError) {
        let key = try P256Key.generate()
        TLSError.clearQueue()
        guard let req = X509_REQ_new() else { throw ACMEError(.crypto, "X509_REQ_new") }
        defer { X509_REQ_free(req) }
        let extensions = DER.subjectAltNameExtensions([host])
        guard X509_REQ_set_version(req, 0) == 1,
              let name = X509_REQ_get_subject_name(req),
              X509_NAME_add_entry_by_txt(name, "CN", aasa_mbstring_asc(), host, -1, -1, 0) == 1,
              X509_REQ_set_pubkey(req, key.pkey) == 1,
              // The extensionRequest attribute holds the DER of `Extensions`; this is what
              // X509_REQ_add_extensions does after encoding the stack we cannot build here.
              X509_REQ_add1_attr_by_NID(req, NID_ext_req, V_ASN1_SEQUENCE, extensions, Int32(extensions.count)) == 1,
              X509_REQ_sign(req, key.pkey, EVP_sha256()) > 0 else {
            throw ACMEError(.crypto, "certificate request for \(host): \(TLSError("X509_REQ"))")
        }
        var out: UnsafeMutablePointer<UInt8>?
        let n = i2d_X509_REQ(req, &out)
        guard n > 0, let out else { throw ACMEError(.crypto, "i2d_X509_REQ: \(TLSError("i2d_X509_REQ"))") }
        defer { CRYPTO_free(out, #fileID, #line) }
        self.key = key
        self.der = Array(UnsafeBufferPointer(start: out, count: Int(n)))
    }
}
