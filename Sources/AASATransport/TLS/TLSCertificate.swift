import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One key pair from `--certs`, ready to serve: the names it covers, and its certificates and
/// key as DER. It is parsed into OpenSSL objects (``TLSKeyPair``) on first use, kept in the
/// server's bounded cache (``TLSKeyPairCache``), and set on each connection that the shared
/// context's certificate callback gives it to (``TLSServerSettings``): at 100 000 certificates
/// most are not in use at any one time. Immutable but for that cache slot.
/// `@unchecked Sendable`: its one mutable slot is behind a ``Locked``.
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
    /// The key's type as OpenSSL names it (`EC`, `RSA`), for a decoder of that type.
    private let keyType: String
    /// The parsed pair while it is cached.
    private let parsed = Locked<TLSKeyPair?>(nil)

    package init(name: String, certificatePath: String, keyPath: String, keys: KeyReader? = nil) throws(TLSError) {
        TLSError.clearQueue()
        let keys = keys ?? KeyReader()
        // Read without OpenSSL when the file is plain PEM and the key matches byte for byte
        // (``CertificateDER``); OpenSSL decides everything else, and the pair parsed on first
        // use is parsed by OpenSSL all the same.
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
                self.keyType = key.type
                self.name = name
                return
            }
        }
        let chain = try TLSCertificate.readChain(certificatePath)
        defer { for cert in chain { X509_free(cert) } }
        let key = try keys.read(keyPath, throughOpenSSL: true)
        // The same public key, byte for byte; else OpenSSL decides (another encoding of the point).
        let certificatePublic = KeyReader.encode { i2d_X509_PUBKEY(X509_get_X509_PUBKEY(chain[0]), $0) }
        guard certificatePublic == key.publicDER || key.pointer.map({ X509_check_private_key(chain[0], $0) }) == 1 else {
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
        self.keyType = key.type
        self.name = name
    }

    /// The parsed chain and key, from the cache or parsed now and added to it. Nil when
    /// OpenSSL cannot read them (``TLSKeyPair``).
    func keyPair(_ cache: TLSKeyPairCache) -> TLSKeyPair? {
        if let pair = parsed.withLock({ $0 }) { return pair }
        guard let made = TLSKeyPair(certificatesDER: certificatesDER, keyDER: keyDER, keyType: keyType, cache: cache) else {
            return nil
        }
        let (pair, isNew) = parsed.withLock { slot -> (TLSKeyPair, Bool) in
            // Another thread may have parsed it meanwhile: keep the first.
            if let existing = slot { return (existing, false) }
            slot = made
            return (made, true)
        }
        if isNew { cache.added(self) }
        return pair
    }

    /// Drops the parsed pair (the cache is full); connections serving it keep their references.
    func evictKeyPair() {
        parsed.withLock { $0 = nil }
    }

    /// Every certificate of a PEM file: the leaf first, then its chain.
    static func readChain(_ path: String) throws(TLSError) -> [OpaquePointer] {
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
}

/// Private keys read during one load of the certs directory, by the bytes of their files: a
/// key shared by many certificates (`certbot --reuse-key`, one key per fleet) is decoded once.
/// Decoding a PEM key through OpenSSL 3's decoders costs more than the rest of a certificate
/// (its provider lookups take global locks).
/// `@unchecked Sendable`: it wraps `EVP_PKEY`s, each table of them behind a ``Locked``.
final package class KeyReader: @unchecked Sendable {
    package struct Key {
        /// Owned by the reader; freed with it. Nil for a key read without OpenSSL
        /// (``PrivateKeyDER``).
        var pointer: OpaquePointer?
        package var der: [UInt8]
        /// SubjectPublicKeyInfo, to compare with a certificate's.
        var publicDER: [UInt8]
        /// `EC`, `RSA`, … (EVP_PKEY_get0_type_name).
        var type: String
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
            for key in keys.values { if let pointer = key.pointer { EVP_PKEY_free(pointer) } }
        }
        // The keys that did not fit, or that two threads decoded at once (LeakSanitizer found
        // them kept and never freed).
        orphans.withLock { orphans in
            for key in orphans { EVP_PKEY_free(key) }
        }
    }

    /// The key of a PEM file: read without OpenSSL when it is in a usual form
    /// (``PrivateKeyDER``), else, or with `throughOpenSSL`, decoded by OpenSSL into `pointer`,
    /// which stays valid while the reader lives.
    package func read(_ path: String, throughOpenSSL: Bool = false) throws(TLSError) -> Key {
        guard let pem = TLSCertificate.readFile(path) else { throw TLSError("loading private key \(path)") }
        if let key = keys.withLock({ $0[PEMKey(bytes: pem)] }), !throughOpenSSL || key.pointer != nil { return key }
        if !throughOpenSSL, let read = PrivateKeyDER(pem: pem) {
            let key = Key(pointer: nil, der: read.der, publicDER: read.publicKeyInfo, type: read.type)
            keys.withLock { keys in
                if keys.count < KeyReader.capacity, keys[PEMKey(bytes: pem)] == nil { keys[PEMKey(bytes: pem)] = key }
            }
            return key
        }
        let decoded = decodeUsualForm(pem) ?? pem.withUnsafeBytes { raw -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let decoded else { throw TLSError("loading private key \(path)") }
        guard let der = KeyReader.encode({ i2d_PrivateKey(decoded, $0) }), let publicDER = KeyReader.encode({ i2d_PUBKEY(decoded, $0) }) else {
            EVP_PKEY_free(decoded)
            throw TLSError("encoding private key \(path)")
        }
        let key = Key(pointer: decoded, der: der, publicDER: publicDER, type: EVP_PKEY_get0_type_name(decoded).map { String(cString: $0) } ?? "")
        // Remembered, or freed by the caller's defer through `release`.
        let kept = keys.withLock { keys -> Bool in
            // In place of one read without OpenSSL, which has no pointer.
            guard keys[PEMKey(bytes: pem)]?.pointer == nil, keys.count < KeyReader.capacity || keys[PEMKey(bytes: pem)] != nil else { return false }
            keys[PEMKey(bytes: pem)] = key
            return true
        }
        if !kept { orphans.withLock { $0.append(decoded) } }
        return key
    }

    /// Why the key at `keyPath` cannot serve the leaf of `certificatePath`, read wholly through
    /// OpenSSL, or nil: it parses, its public half is the leaf's, and its private half belongs to
    /// its public half (EVP_PKEY_pairwise_check). What a certificate put through the write API is
    /// held to before it is stored; a start reads keys without this (``PrivateKeyDER``).
    package static func pairProblem(certificatePath: String, keyPath: String) -> String? {
        let reader = KeyReader()
        guard let key = try? reader.read(keyPath, throughOpenSSL: true), let pointer = key.pointer else {
            return "the private key does not parse"
        }
        guard let chain = try? TLSCertificate.readChain(certificatePath), let leaf = chain.first else {
            return "the chain does not parse as PEM certificates"
        }
        defer { for cert in chain { X509_free(cert) } }
        defer { TLSError.clearQueue() }
        guard X509_check_private_key(leaf, pointer) == 1 else { return "the private key does not belong to the chain's first certificate" }
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { return "the private key cannot be checked" }
        defer { EVP_PKEY_CTX_free(context) }
        guard EVP_PKEY_pairwise_check(context) == 1 else { return "the private key's private half does not match its public half" }
        return nil
    }

    /// Keys that did not fit in the table, freed with the reader.
    private let orphans = Locked<[OpaquePointer]>([])

    /// Decoders kept for the load: with a key per certificate (as ACME issues them), reading each
    /// through `PEM_read_bio_PrivateKey` made OpenSSL 3.0 walk every decoder of every provider
    /// for each, 13 s of a 10 000-site start (docs/performance.md, "Cold handshakes").
    private let decoders = PrivateKeyDecoders()

    /// An unencrypted EC or RSA key in PEM as certbot, cert-manager and `openssl genpkey` write
    /// them (PKCS #8 `PRIVATE KEY`, SEC 1 `EC PRIVATE KEY`, PKCS #1 `RSA PRIVATE KEY`), read by a
    /// decoder kept for its type; nil for anything else, which OpenSSL's PEM reader decides.
    private func decodeUsualForm(_ pem: [UInt8]) -> OpaquePointer? {
        for (label, type) in [("PRIVATE KEY", ""), ("EC PRIVATE KEY", "EC"), ("RSA PRIVATE KEY", "RSA")] {
            let blocks = PEMBlocks.decode(pem, label: label)
            guard !blocks.isEmpty else { continue }
            guard blocks.count == 1, let type = type.isEmpty ? KeyReader.pkcs8Type(blocks[0]) : type else { return nil }
            return decoders.decode(blocks[0], type: type)
        }
        return nil
    }

    /// The key type a PKCS #8 PrivateKeyInfo names (RFC 5208 §5: version, then the algorithm's
    /// identifier): `EC` for id-ecPublicKey (RFC 5480), `RSA` for rsaEncryption (RFC 8017), else nil.
    static func pkcs8Type(_ der: [UInt8]) -> String? {
        var at = 0
        /// The start of the contents of the element at `at` with `tag`, its length; nil if it is not one.
        func enter(_ tag: UInt8) -> (start: Int, length: Int)? {
            guard at + 2 <= der.count, der[at] == tag else { return nil }
            var length = Int(der[at + 1])
            var start = at + 2
            if length & 0x80 != 0 {
                let bytes = length & 0x7F
                guard bytes >= 1, bytes <= 3, start + bytes <= der.count else { return nil }
                length = der[start..<(start + bytes)].reduce(0) { $0 << 8 | Int($1) }
                start += bytes
            }
            guard start + length <= der.count else { return nil }
            return (start, length)
        }
        guard let outer = enter(0x30) else { return nil }
        at = outer.start
        guard let version = enter(0x02) else { return nil }
        at = version.start + version.length
        guard let algorithm = enter(0x30) else { return nil }
        at = algorithm.start
        guard let oid = enter(0x06) else { return nil }
        let bytes = der[oid.start..<(oid.start + oid.length)]
        if bytes.elementsEqual([0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]) { return "EC" }
        if bytes.elementsEqual([0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]) { return "RSA" }
        return nil
    }

    /// DER from one of OpenSSL's i2d functions.
    static package func encode(_ i2d: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
        // One call, OpenSSL allocating the output (i2d_X509(3): `*ppout` NULL): asked for the
        // length first, OpenSSL 3.0 encodes a provider's key twice, each time through an encoder
        // context made for it.
        var out: UnsafeMutablePointer<UInt8>?
        let n = i2d(&out)
        guard let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        guard n > 0 else { return nil }
        return Array(UnsafeBufferPointer(start: out, count: Int(n)))
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
