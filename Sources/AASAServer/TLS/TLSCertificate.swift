import COpenSSL
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Whether contexts made from now on offer `h2` in ALPN (SPEC 3.9: `--http2 off`). Off until the
/// event loop hands `h2` connections to ``HTTP2Session``: offering it sooner would break every
/// client that prefers it (curl does).
private let alpnOffersHTTP2 = Atomic<Bool>(false)

/// One key pair from `--certs`, ready to serve: its own `SSL_CTX` (TLS 1.2/1.3, AEAD ciphers,
/// no compression or renegotiation, session tickets, ALPN) and the names it covers.
public final class TLSCertificate: @unchecked Sendable {
    /// The file or folder name without extension (SPEC 3.1).
    public let name: String
    /// subjectAltName DNS entries, lower case; wildcards as `*.example.com`.
    public let dnsNames: [String]
    /// notAfter, in seconds since 1970.
    public let notAfter: Int
    /// notBefore, in seconds since 1970 (ACME renews after two thirds of the lifetime).
    public let notBefore: Int
    /// Owned: freed with this object. OpenSSL counts references, so a connection whose SSL
    /// still uses the context after a reload keeps it alive.
    let context: OpaquePointer

    init(name: String, certificatePath: String, keyPath: String) throws(TLSError) {
        TLSError.clearQueue()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new") }
        do throws(TLSError) {
            try TLSCertificate.configure(ctx)
            guard SSL_CTX_use_certificate_chain_file(ctx, certificatePath) == 1 else {
                throw TLSError("loading certificate \(certificatePath)")
            }
            guard SSL_CTX_use_PrivateKey_file(ctx, keyPath, SSL_FILETYPE_PEM) == 1 else {
                throw TLSError("loading private key \(keyPath)")
            }
            guard SSL_CTX_check_private_key(ctx) == 1 else {
                throw TLSError("\(keyPath) does not belong to \(certificatePath)")
            }
            guard let cert = SSL_CTX_get0_certificate(ctx) else { throw TLSError("no certificate in \(certificatePath)") }
            self.dnsNames = X509Fields.dnsNames(cert)
            self.notAfter = X509Fields.notAfter(cert)
            self.notBefore = X509Fields.notBefore(cert)
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        self.name = name
        self.context = ctx
    }

    deinit { SSL_CTX_free(context) }

    /// Whether ALPN offers `h2` before `http/1.1`. Read when a certificate's context is made, at
    /// start and at every reload: set it from the server configuration (`--http2`) before the
    /// first certificate loads. Off, ALPN offers `http/1.1` only.
    public static var offersHTTP2: Bool {
        get { alpnOffersHTTP2.load(ordering: .relaxed) }
        set { alpnOffersHTTP2.store(newValue, ordering: .relaxed) }
    }

    /// Whether the certificate is valid for `host` (RFC 6125: a wildcard covers one label).
    public func covers(_ host: String) -> Bool {
        for name in dnsNames {
            if name == host { return true }
            if name.hasPrefix("*."), let dot = host.firstIndex(of: "."), host[host.index(after: dot)...] == name.dropFirst(2),
               dot != host.startIndex {
                return true
            }
        }
        return false
    }

    private static func configure(_ ctx: OpaquePointer) throws(TLSError) {
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
        // TLS-ALPN-01 (RFC 8737): a ClientHello for a pending ACME challenge moves to its context.
        SSL_CTX_set_client_hello_cb(ctx, acmeClientHelloCallback, nil)
    }
}

/// The ServerName callback of every context: picks the certificate for the name the client
/// asked for from the store of the connection's snapshot (ex-data slot 0), exact name before
/// wildcard; an unknown name keeps the default certificate the handshake started with.
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, _ in
    guard let ssl, let raw = SSL_get_ex_data(ssl, 0) else { return aasa_tlsext_noack() }
    let store = Unmanaged<CertificateStore>.fromOpaque(raw).takeUnretainedValue()
    guard let namePointer = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)) else { return aasa_tlsext_ok() }
    let serverName = String(cString: namePointer).lowercased()
    if let cert = store.select(serverName: serverName), cert.context != SSL_get_SSL_CTX(ssl) {
        SSL_set_SSL_CTX(ssl, cert.context)
    }
    return aasa_tlsext_ok()
}
