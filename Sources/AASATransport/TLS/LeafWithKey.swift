import COpenSSL

/// A leaf certificate and its private key parsed without OpenSSL 3.0 decoding the leaf's public
/// key: that decoding was 1.22 M of the 1.53 M instructions of `d2i_X509`, and of a cold
/// handshake's 4.3 M (docs/performance.md, "Cold handshakes").
///
/// How, in public API only:
/// - `d2i_X509` decodes the SubjectPublicKeyInfo with a decoder context made for it
///   (`OSSL_DECODER_CTX_new_for_pkey`, which walks every decoder and key manager of every
///   provider) in the library context of the `X509` it fills, made with `X509_new_ex`
///   (crypto/x509/x_pubkey.c, `x509_pubkey_ex_d2i_ex`). It does so opportunistically: when
///   nothing decodes the key, the certificate is parsed all the same, without its key. In a
///   context whose one provider is OpenSSL's "null" provider (no algorithms), the walk finds
///   nothing and costs almost nothing.
/// - The private key is read by OpenSSL's built-in EC or RSA code rather than a provider's
///   (`aasa_d2i_builtin_private_key`, what `d2i_PrivateKey_ex` falls back to when no decoder
///   reads a key).
/// - `X509_set_pubkey` with such a key encodes the SubjectPublicKeyInfo with that code
///   (`X509_PUBKEY_set`, `pub_encode`; a provider's key would go through an encoder and then
///   `d2i_X509_PUBKEY`, the same decoder walk) and keeps the key itself as the certificate's.
///   `SSL_use_cert_and_key` then finds certificate and key the same object (`EVP_PKEY_eq`).
///
/// What it changes, and why that is safe here:
/// - `X509_set_pubkey` replaces the certificate's key but leaves its encoding as read (it does
///   not mark it modified, crypto/x509/x509_set.c), so `i2d_X509` still sends the file's bytes.
///   The key's own SubjectPublicKeyInfo is compared with the certificate's, byte for byte: a
///   leaf it does not reproduce (for one, the point compressed in the certificate and not in
///   the key file) is parsed the usual way instead, so that OpenSSL's checks of the key
///   (curve, point format) see what the client will.
/// - The certificate keeps the "null" context: OpenSSL cannot compute its SHA-1 fingerprint
///   with it (`EXFLAG_NO_FINGERPRINT`; `X509_cmp` then compares encodings) nor verify a
///   signature. Its extensions are cached here, with the failed fingerprint's error taken back
///   off the queue, so that the handshake finds them cached and no error lands on the queue
///   midway (`SSL_get_error` reads it). The server verifies nothing with its own leaf: for a
///   leaf sent without a chain, OpenSSL looks for one in the context's store
///   (ssl/ssl_cert.c, `ssl_add_cert_chain`), which is empty, and sends the leaf alone.
/// - The first signature with the key exports it to the default provider, once per key
///   object (`evp_pkey_export_to_provider`, about 0.23 M instructions for P-256); certificates
///   that share a key share that object (``SharedPrivateKeys``).
///
/// EC and RSA keys only, the two that certificate authorities issue for web servers; any
/// other key goes the usual way.
enum LeafWithKey {
    /// A library context with OpenSSL's "null" provider and nothing else (an explicitly
    /// loaded provider keeps OpenSSL from loading the default one into it on first use).
    /// Never freed: every `X509` parsed in it keeps a pointer to it, and a connection may hold
    /// one after its server's settings are gone. Nil if it cannot be made: then nothing uses
    /// this path.
    nonisolated(unsafe) private static let noAlgorithms: OpaquePointer? = {
        guard let context = OSSL_LIB_CTX_new() else { return nil }
        guard OSSL_PROVIDER_load(context, "null") != nil else {
            OSSL_LIB_CTX_free(context)
            TLSError.clearQueue()
            return nil
        }
        return context
    }()

    /// The leaf (`X509 *`) and key (`EVP_PKEY *`), each owned by the caller; the key is also
    /// the leaf's public key, and the one `keys` holds for `keyDER` if it holds one. Nil when this way does not apply (another key type, or a key
    /// that does not encode as the certificate's does): the caller parses as before.
    static func parse(leafDER: [UInt8], keyDER: [UInt8], keyType: String, keys: SharedPrivateKeys) -> (leaf: OpaquePointer, key: OpaquePointer)? {
        let type: Int32
        switch keyType {
        case "EC": type = aasa_evp_pkey_ec()
        case "RSA": type = aasa_evp_pkey_rsa()
        default: return nil
        }
        guard let context = noAlgorithms else { return nil }
        // The fingerprint that cannot be computed leaves an error on the queue: taken back at the end.
        ERR_set_mark()
        defer { ERR_pop_to_mark() }
        guard let key = keys.key(keyDER, parse: { der in
            der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var p = buffer.baseAddress
                return aasa_d2i_builtin_private_key(type, &p, buffer.count)
            }
        }) else { return nil }
        // Given to d2i_X509 to fill, so that its library context is the one used; on failure
        // d2i_X509 frees it and sets it to nil.
        var leaf = X509_new_ex(context, nil)
        let parsed = leafDER.withUnsafeBufferPointer { buffer -> Bool in
            var p = buffer.baseAddress
            return leaf != nil && d2i_X509(&leaf, &p, buffer.count) != nil
        }
        guard parsed, let leaf else {
            EVP_PKEY_free(key)
            return nil
        }
        let certificateKey = KeyReader.encode { i2d_X509_PUBKEY(X509_get_X509_PUBKEY(leaf), $0) }
        guard certificateKey != nil, X509_set_pubkey(leaf, key) == 1,
              KeyReader.encode({ i2d_X509_PUBKEY(X509_get_X509_PUBKEY(leaf), $0) }) == certificateKey else {
            X509_free(leaf)
            EVP_PKEY_free(key)
            return nil
        }
        // Extensions, key usage, signature algorithm: cached now, under the mark above.
        _ = X509_get_extension_flags(leaf)
        return (leaf, key)
    }
}
