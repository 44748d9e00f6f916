import COpenSSL

/// A certificate's chain and private key as OpenSSL objects, parsed from its DER on first use
/// and handed to each handshake that serves it (`SSL_use_cert_and_key`, which takes its own
/// references: a connection keeps serving a pair this object no longer holds). About 7 KB for
/// a P-256 leaf and key, where the `SSL_CTX` each certificate had before was tens of KB and
/// three times the parse (docs/performance.md, "Cold handshakes"). EC and RSA pairs are parsed
/// without OpenSSL decoding the leaf's public key (``LeafWithKey``).
/// `@unchecked Sendable`: it owns OpenSSL objects that are only read once made.
final class TLSKeyPair: @unchecked Sendable {
    /// `X509 *`, owned.
    let leaf: OpaquePointer
    /// `STACK_OF(X509) *` of the certificates after the leaf, owned; nil for a leaf alone.
    let chain: OpaquePointer?
    /// `EVP_PKEY *`, owned.
    let key: OpaquePointer

    /// Nil when OpenSSL does not read what the certificate's load already read once (memory
    /// exhausted): the handshake then fails, as a context that could not be made did.
    init?(certificatesDER: [[UInt8]], keyDER: [UInt8], keyType: String, cache: TLSKeyPairCache) {
        guard let leafDER = certificatesDER.first else { return nil }
        let leaf: OpaquePointer, key: OpaquePointer
        if let pair = LeafWithKey.parse(leafDER: leafDER, keyDER: keyDER, keyType: keyType, keys: cache.sharedKeys) {
            (leaf, key) = pair
        } else {
            guard let parsed = ChainCertificates.decode(leafDER) else { return nil }
            guard let decoded = cache.decoders.decode(keyDER, type: keyType) else {
                X509_free(parsed)
                return nil
            }
            (leaf, key) = (parsed, decoded)
        }
        var chain: OpaquePointer?
        if certificatesDER.count > 1 {
            chain = aasa_x509_chain_new()
            for der in certificatesDER.dropFirst() {
                guard let chain, let cert = cache.chainCertificates.certificate(der) else {
                    if let chain { aasa_x509_chain_free(chain) }
                    X509_free(leaf)
                    EVP_PKEY_free(key)
                    return nil
                }
                if aasa_x509_chain_push(chain, cert) == 0 { X509_free(cert) }
            }
        }
        self.leaf = leaf
        self.chain = chain
        self.key = key
    }

    deinit {
        X509_free(leaf)
        if let chain { aasa_x509_chain_free(chain) }
        EVP_PKEY_free(key)
    }

    /// Sets this pair as `ssl`'s certificate, chain and key (replacing none: the shared
    /// context has none). False when OpenSSL refuses it.
    func use(on ssl: OpaquePointer) -> Bool {
        SSL_use_cert_and_key(ssl, leaf, key, chain, 1) == 1
    }
}
