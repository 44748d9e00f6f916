import COpenSSL

/// The server's side of TLS, one per server (and one for the admin listener): the one `SSL_CTX`
/// every site's connections start with and finish in — TLS 1.2/1.3, AEAD ciphers, no
/// compression or renegotiation, session tickets, ALPN as ``offersHTTP2`` says — and the parsed
/// certificates its certificate callback sets on each connection (`SSL_use_cert_and_key` from
/// `SSL_CTX_set_cert_cb`, the place OpenSSL's documentation names for choosing a certificate
/// per connection). A context per site cost a cold handshake three times a warm one
/// (docs/performance.md, "Cold handshakes"). Given to every TLS connection's handshake
/// (``HandshakeData``), so no callback reaches for a process-wide value.
/// `@unchecked Sendable`: the context is configured in `init` and only read after (OpenSSL's
/// contexts are safe to share between threads); the rest is `Sendable`.
final package class TLSServerSettings: @unchecked Sendable {
    /// Whether ALPN offers `h2` before `http/1.1` (docs/serving.md, "HTTP/2": `--http2 off`
    /// offers `http/1.1` only).
    package let offersHTTP2: Bool
    /// With `--acme`: the pending TLS-ALPN-01 challenges and the names asked for that no
    /// certificate covers.
    package let challenges: (any TLSChallenges)?
    /// The certificates parsed so far, bounded.
    let keyPairs: TLSKeyPairCache
    /// `SSL_CTX *`, owned: every connection's ``TLSStream`` starts from it.
    let context: OpaquePointer

    package init(offersHTTP2: Bool, challenges: (any TLSChallenges)? = nil, keyPairCapacity: Int = TLSKeyPairCache.defaultCapacity) {
        self.offersHTTP2 = offersHTTP2
        self.challenges = challenges
        self.keyPairs = TLSKeyPairCache(capacity: keyPairCapacity)
        TLSError.clearQueue()
        // Fails only without memory, like the allocations around it.
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { preconditionFailure("SSL_CTX_new: \(TLSError("SSL_CTX_new"))") }
        do throws(TLSError) {
            try TLSServerSettings.configure(ctx, offersHTTP2: offersHTTP2)
        } catch {
            preconditionFailure("configuring the server's TLS context: \(error)")
        }
        self.context = ctx
    }

    deinit { SSL_CTX_free(context) }

    private static func configure(_ ctx: OpaquePointer, offersHTTP2: Bool) throws(TLSError) {
        guard aasa_SSL_CTX_set_min_proto_version(ctx, aasa_tls1_2_version()) == 1,
              aasa_SSL_CTX_set_max_proto_version(ctx, aasa_tls1_3_version()) == 1 else {
            throw TLSError("setting TLS versions")
        }
        SSL_CTX_set_options(ctx, aasa_server_options())
        _ = aasa_SSL_CTX_set_mode(ctx, aasa_server_modes())
        // TLS 1.2: ECDHE key exchange with AEAD ciphers only. TLS 1.3 suites are all AEAD. In the
        // server's order, AES-128-GCM first (as Mozilla's TLS guidelines order them): ten AES
        // rounds a block instead of fourteen, for the same protection here.
        guard SSL_CTX_set_cipher_list(ctx, "ECDHE+AES128+AESGCM:ECDHE+AES256+AESGCM:ECDHE+CHACHA20") == 1 else {
            throw TLSError("SSL_CTX_set_cipher_list")
        }
        guard SSL_CTX_set_ciphersuites(ctx, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256") == 1 else {
            throw TLSError("SSL_CTX_set_ciphersuites")
        }
        _ = aasa_SSL_CTX_set_session_cache_mode(ctx, aasa_session_cache_server())
        // One TLS 1.3 ticket per full handshake instead of OpenSSL's two: each costs an encrypted
        // session and a record, and the clients of this server rarely resume.
        _ = SSL_CTX_set_num_tickets(ctx, 1)
        // Read what the socket holds in one read instead of a record header, then its body.
        _ = aasa_SSL_CTX_set_read_ahead(ctx, 1)
        let sid: [UInt8] = Array("aasa".utf8)
        _ = SSL_CTX_set_session_id_context(ctx, sid, UInt32(sid.count))
        aasa_SSL_CTX_use_alpn(ctx, offersHTTP2 ? 1 : 0)
        _ = aasa_SSL_CTX_set_tlsext_servername_callback(ctx, serverNameCallback)
        SSL_CTX_set_client_hello_cb(ctx, tlsClientHelloCallback, nil)
        SSL_CTX_set_cert_cb(ctx, certificateCallback, nil)
    }
}

/// What ACME asks of every handshake (docs/acme.md): the ACME side implements it, the TLS layer
/// calls it and knows nothing more of ACME.
package protocol TLSChallenges: AnyObject, Sendable {
    /// Called with each ClientHello, before the ServerName and ALPN steps: a ClientHello for a
    /// pending TLS-ALPN-01 challenge (RFC 8737 §3) is moved to that challenge's context here.
    func clientHello(_ ssl: OpaquePointer)
    /// A client asked for a name no certificate covers (it goes to the front of the order queue).
    func uncovered(serverName: String)
}

/// The two ex-data slots of a server connection's SSL during its handshake: the certificates
/// of the snapshot it started in (slot 0) and the server's ``TLSServerSettings`` (slot 1). The
/// ``TLSStream`` holds both references until the handshake is over, then clears the slots.
package enum HandshakeData {
    static package func set(_ ssl: OpaquePointer, certificates: CertificateStore, settings: TLSServerSettings) {
        _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(certificates).toOpaque())
        _ = SSL_set_ex_data(ssl, 1, Unmanaged.passUnretained(settings).toOpaque())
    }

    static func clear(_ ssl: OpaquePointer) {
        _ = SSL_set_ex_data(ssl, 0, nil)
        _ = SSL_set_ex_data(ssl, 1, nil)
    }

    static package func certificates(_ ssl: OpaquePointer) -> CertificateStore? {
        SSL_get_ex_data(ssl, 0).map { Unmanaged<CertificateStore>.fromOpaque($0).takeUnretainedValue() }
    }

    static package func settings(_ ssl: OpaquePointer) -> TLSServerSettings? {
        SSL_get_ex_data(ssl, 1).map { Unmanaged<TLSServerSettings>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// The ServerName callback: tells the server's ``TLSChallenges`` of a name no certificate
/// covers, and acknowledges the name, so that OpenSSL keeps it with a TLS 1.2 session.
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, _ in
    guard let ssl, let store = HandshakeData.certificates(ssl), let settings = HandshakeData.settings(ssl) else {
        return aasa_tlsext_noack()
    }
    if let challenges = settings.challenges, let name = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)) {
        let serverName = String(cString: name).lowercased()
        if store.covering(serverName) == nil { challenges.uncovered(serverName: serverName) }
    }
    return aasa_tlsext_ok()
}

/// The certificate callback, called once per full handshake after the ServerName and
/// ClientHello steps (ssl/statem/statem_srvr.c, before the cipher and signature are chosen):
/// sets the certificate for the name the client asked for, exact name before wildcard, else
/// the default one (docs/serving.md, "Certificates"). No certificate fails the handshake. A
/// connection moved to a TLS-ALPN-01 challenge's context does not come here (that context has
/// its own certificate and no callback).
private let certificateCallback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _ in
    guard let ssl, let store = HandshakeData.certificates(ssl), let settings = HandshakeData.settings(ssl) else { return 0 }
    let serverName = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)).map { String(cString: $0).lowercased() }
    guard let pair = store.select(serverName: serverName)?.keyPair(settings.keyPairs) else { return 0 }
    return pair.use(on: ssl) ? 1 : 0
}

/// The ClientHello callback of every serving context: hands the ClientHello to the server's
/// ``TLSChallenges`` when it has any; any other ClientHello goes on untouched.
private let tlsClientHelloCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, _ in
    if let ssl, let challenges = HandshakeData.settings(ssl)?.challenges { challenges.clientHello(ssl) }
    return Int32(SSL_CLIENT_HELLO_SUCCESS)
}
