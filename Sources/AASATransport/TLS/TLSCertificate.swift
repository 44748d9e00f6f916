import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One key pair from `--certs`, ready to serve: the names it covers, and its certificates and
/// key as DER. Its `SSL_CTX` (TLS 1.2/1.3, AEAD ciphers, no compression or renegotiation,
/// session tickets, ALPN as the server's ``TLSServerSettings`` say) is made on first use and kept
/// in the settings' bounded cache (``TLSContextCache``): a context is tens of KB, and at 100 000 certificates most are not in
/// use at any one time. Immutable but for that cache slot.
/// `@unchecked Sendable`: it wraps an `SSL_CTX`, whose one mutable slot is behind a ``Locked``.
public final class TLSCertificate: @unchecked Sendable {
    /// The file or folder name without extension (docs/serving.md, "Certificates").
    public let name: String
    /// subjectAltName DNS entries, lower case; wildcards as `*.example.com`.
    public let dnsNames: [String]
    /// notAfter, in seconds since 1970.
    public let notAfter: Int
    /// notBefore, in seconds since 1970 (ACME renews after two thirds of the lifetime).
    public let notBefore: Int
    /// The leaf is a CA (basicConstraints `cA: TRUE`): loaded only to be refused (docs/serving.md, "Certificates").
    public let isCA: Bool
    /// The leaf, then the rest of the chain, as the file lists them.
    private let certificatesDER: [[UInt8]]
    private let keyDER: [UInt8]
    /// The context while it is cached; owned, freed when evicted or with this object. OpenSSL
    /// counts references, so a connection whose SSL still uses it keeps it alive.
    private let cached = Locked<OpaquePointer?>(nil)

    package init(name: String, certificatePath: String, keyPath: String, keys: KeyReader? = nil) throws(TLSError) {
        TLSError.clearQueue()
        let keys = keys ?? KeyReader()
        // Read without OpenSSL when the file is plain PEM and the key matches byte for byte
        // (``CertificateDER``); OpenSSL decides everything else, and the context made on first
        // use parses the DER with OpenSSL all the same.
        if let pem = TLSCertificate.readFile(certificatePath), case let ders = PEMBlocks.decode(pem), !ders.isEmpty,
           let fields = CertificateDER(ders[0]) {
            let key = try keys.read(keyPath)
            if fields.publicKeyInfo.elementsEqual(key.publicDER) {
                self.dnsNames = fields.dnsNames
                self.notAfter = fields.notAfter
                self.notBefore = fields.notBefore
                self.isCA = fields.isCA
                self.certificatesDER = ders
                self.keyDER = key.der
                self.name = name
                return
            }
        }
        let chain = try TLSCertificate.readChain(certificatePath)
        defer { for cert in chain { X509_free(cert) } }
        let key = try keys.read(keyPath)
        // The same public key, byte for byte; else OpenSSL decides (another encoding of the point).
        let certificatePublic = KeyReader.encode { i2d_X509_PUBKEY(X509_get_X509_PUBKEY(chain[0]), $0) }
        guard certificatePublic == key.publicDER || X509_check_private_key(chain[0], key.pointer) == 1 else {
            TLSError.clearQueue()
            throw TLSError("\(keyPath) does not belong to \(certificatePath)")
        }
        var ders: [[UInt8]] = []
        for cert in chain {
            let n = i2d_X509(cert, nil)
            guard n > 0 else { throw TLSError("encoding \(certificatePath)") }
            var der = [UInt8](repeating: 0, count: Int(n))
            der.withUnsafeMutableBufferPointer { buffer in
                var p = buffer.baseAddress
                _ = i2d_X509(cert, &p)
            }
            ders.append(der)
        }
        self.dnsNames = X509Fields.dnsNames(chain[0])
        self.notAfter = X509Fields.notAfter(chain[0])
        self.notBefore = X509Fields.notBefore(chain[0])
        self.isCA = X509_get_extension_flags(chain[0]) & UInt32(EXFLAG_CA) != 0
        self.certificatesDER = ders
        self.keyDER = key.der
        self.name = name
    }

    deinit {
        if let ctx = cached.withLock({ $0 }) { SSL_CTX_free(ctx) }
    }

    /// The certificate's context, made with `settings` on first use, with a reference the caller
    /// owns: `SSL_new` or `SSL_set_SSL_CTX` take their own, then the caller calls `SSL_CTX_free`.
    /// One server gives the same settings every time.
    package func retainedContext(_ settings: TLSServerSettings) -> OpaquePointer? {
        if let ctx = cached.withLock({ ctx -> OpaquePointer? in
            if let ctx { SSL_CTX_up_ref(ctx) }
            return ctx
        }) {
            return ctx
        }
        guard let made = try? makeContext(settings) else { return nil }
        let (ctx, isNew) = cached.withLock { slot -> (OpaquePointer, Bool) in
            // Another thread may have made one meanwhile: keep the first.
            if let existing = slot {
                SSL_CTX_up_ref(existing)
                return (existing, false)
            }
            slot = made
            SSL_CTX_up_ref(made)
            return (made, true)
        }
        if isNew {
            settings.contexts.added(self)
        } else {
            SSL_CTX_free(made)
        }
        return ctx
    }

    /// Frees the cached context (the cache is full); connections using it keep their reference.
    func evictContext() {
        if let ctx = cached.withLock({ slot -> OpaquePointer? in
            defer { slot = nil }
            return slot
        }) {
            SSL_CTX_free(ctx)
        }
    }

    var hasContext: Bool { cached.withLock { $0 != nil } }

    /// A context of its own, not the cached one, made with `settings`, owned by the caller
    /// (`SSL_CTX_free`): the admin listener over TLS offers `http/1.1` only, whatever the
    /// server's HTTP/2 setting (docs/platforms.md).
    package func makeOwnContext(_ settings: TLSServerSettings) -> OpaquePointer? {
        try? makeContext(settings)
    }

    private func makeContext(_ settings: TLSServerSettings) throws(TLSError) -> OpaquePointer {
        TLSError.clearQueue()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw TLSError("SSL_CTX_new") }
        do throws(TLSError) {
            try TLSCertificate.configure(ctx, offersHTTP2: settings.offersHTTP2)
            for (i, der) in certificatesDER.enumerated() {
                let cert = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                    var p = buffer.baseAddress
                    return d2i_X509(nil, &p, buffer.count)
                }
                guard let cert else { throw TLSError("decoding \(name)") }
                defer { X509_free(cert) }
                if i == 0 {
                    guard SSL_CTX_use_certificate(ctx, cert) == 1 else { throw TLSError("SSL_CTX_use_certificate \(name)") }
                } else {
                    guard aasa_SSL_CTX_add1_chain_cert(ctx, cert) == 1 else { throw TLSError("adding the chain of \(name)") }
                }
            }
            let key = keyDER.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                var p = buffer.baseAddress
                return d2i_AutoPrivateKey(nil, &p, buffer.count)
            }
            guard let key else { throw TLSError("decoding the key of \(name)") }
            defer { EVP_PKEY_free(key) }
            guard SSL_CTX_use_PrivateKey(ctx, key) == 1 else { throw TLSError("SSL_CTX_use_PrivateKey \(name)") }
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        return ctx
    }

    /// Every certificate of a PEM file: the leaf first, then its chain.
    private static func readChain(_ path: String) throws(TLSError) -> [OpaquePointer] {
        guard let bio = BIO_new_file(path, "r") else { throw TLSError("loading certificate \(path)") }
        defer { BIO_free(bio) }
        var chain: [OpaquePointer] = []
        while chain.count < 16, let cert = PEM_read_bio_X509(bio, nil, nil, nil) {
            chain.append(cert)
        }
        // The end of the file shows as an error on the queue: not one.
        ERR_clear_error()
        guard !chain.isEmpty else { throw TLSError("loading certificate \(path)") }
        return chain
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
    }
}

/// The ServerName callback of every context: picks the certificate for the name the client
/// asked for from the store of the connection's snapshot (``HandshakeData``), exact name before
/// wildcard; an unknown name keeps the default certificate the handshake started with.
private let serverNameCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, _ in
    guard let ssl, let store = HandshakeData.certificates(ssl), let settings = HandshakeData.settings(ssl) else {
        return aasa_tlsext_noack()
    }
    guard let namePointer = SSL_get_servername(ssl, Int32(TLSEXT_NAMETYPE_host_name)) else { return aasa_tlsext_ok() }
    let serverName = String(cString: namePointer).lowercased()
    if let challenges = settings.challenges, store.covering(serverName) == nil { challenges.uncovered(serverName: serverName) }
    if let cert = store.select(serverName: serverName), let context = cert.retainedContext(settings) {
        if context != SSL_get_SSL_CTX(ssl) { SSL_set_SSL_CTX(ssl, context) }
        SSL_CTX_free(context)
    }
    return aasa_tlsext_ok()
}

/// Private keys read during one load of the certs directory, by the bytes of their files: a
/// key shared by many certificates (`certbot --reuse-key`, one key per fleet) is decoded once.
/// Decoding a PEM key through OpenSSL 3's decoders costs more than the rest of a certificate
/// (its provider lookups take global locks).
/// `@unchecked Sendable`: it wraps `EVP_PKEY`s, each table of them behind a ``Locked``.
final package class KeyReader: @unchecked Sendable {
    package struct Key {
        /// Owned by the reader; freed with it.
        var pointer: OpaquePointer
        package var der: [UInt8]
        /// SubjectPublicKeyInfo, to compare with a certificate's.
        var publicDER: [UInt8]
    }

    private let keys = Locked<[PEMKey: Key]>([:])

    /// A key file's bytes as the table's key, hashed as one buffer (an array of bytes is hashed
    /// byte by byte: a tenth of a start-up's certificate work).
    private struct PEMKey: Hashable {
        let bytes: [UInt8]
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }
    /// Kept small: distinct keys are not worth remembering beyond one load.
    private static let capacity = 64

    package init() {}

    deinit {
        keys.withLock { keys in
            for key in keys.values { EVP_PKEY_free(key.pointer) }
        }
        // The keys that did not fit, or that two threads decoded at once (LeakSanitizer found
        // them kept and never freed).
        orphans.withLock { orphans in
            for key in orphans { EVP_PKEY_free(key) }
        }
    }

    /// The key of a PEM file. `pointer` stays valid while the reader lives.
    package func read(_ path: String) throws(TLSError) -> Key {
        guard let pem = TLSCertificate.readFile(path) else { throw TLSError("loading private key \(path)") }
        if let key = keys.withLock({ $0[PEMKey(bytes: pem)] }) { return key }
        let decoded = pem.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let decoded else { throw TLSError("loading private key \(path)") }
        guard let der = KeyReader.encode({ i2d_PrivateKey(decoded, $0) }), let publicDER = KeyReader.encode({ i2d_PUBKEY(decoded, $0) }) else {
            EVP_PKEY_free(decoded)
            throw TLSError("encoding private key \(path)")
        }
        let key = Key(pointer: decoded, der: der, publicDER: publicDER)
        // Remembered, or freed by the caller's defer through `release`.
        let kept = keys.withLock { keys -> Bool in
            guard keys.count < KeyReader.capacity, keys[PEMKey(bytes: pem)] == nil else { return false }
            keys[PEMKey(bytes: pem)] = key
            return true
        }
        if !kept { orphans.withLock { $0.append(decoded) } }
        return key
    }

    /// Keys that did not fit in the table, freed with the reader.
    private let orphans = Locked<[OpaquePointer]>([])

    /// DER through OpenSSL's two-call i2d convention.
    static package func encode(_ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
        let n = i2d(nil)
        guard n > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(n))
        der.withUnsafeMutableBufferPointer { buffer in
            var p = buffer.baseAddress
            _ = i2d(&p)
        }
        return der
    }
}

extension TLSCertificate {
    /// A small file's bytes (a key), or nil.
    static func readFile(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return nil }
        return try? FileContents.read(fd, expectedSize: Int(st.st_size), limit: 1 << 20).get()
    }
}

/// The contexts one server made on first use, at most ``capacity`` at once (oldest made, first
/// freed): memory for contexts follows the certificates in use, not those that exist.
final package class TLSContextCache: Sendable {
    static package let defaultCapacity = 2048
    package let capacity: Int

    private let order = Locked<[TLSCertificate]>([])

    package init(capacity: Int = TLSContextCache.defaultCapacity) { self.capacity = capacity }

    package func added(_ certificate: TLSCertificate) {
        let evicted = order.withLock { order -> [TLSCertificate] in
            order.append(certificate)
            guard order.count > capacity else { return [] }
            let n = order.count - capacity
            let out = Array(order.prefix(n))
            order.removeFirst(n)
            return out
        }
        for cert in evicted { cert.evictContext() }
    }

    package var count: Int { order.withLock { $0.count } }
}
