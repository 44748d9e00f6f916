import AASACore
import COpenSSL
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The development CA and leaf certificate of `--dev` (docs/development-mode.md), made in process
/// with libcrypto: `DIR/ca/ca.pem` + `ca.key` (never served), and `DIR/aasa-dev.crt` +
/// `aasa-dev.key` for every site plus `localhost`, `127.0.0.1` and `::1`. EC P-256 keys, written
/// with mode 0600.
public struct DevelopmentCertificates: Sendable {
    public let directory: String

    /// The CA lives this long; the leaf 397 days (under Apple's 398-day rule for TLS server
    /// certificates) and is re-issued 30 days before it ends.
    static let caDays = 730
    static let leafDays = 397
    static let renewBeforeDays = 30
    public static let leafName = "aasa-dev"

    public init(directory: String) {
        self.directory = directory
    }

    public var caCertificatePath: String { directory + "/ca/ca.pem" }
    var caKeyPath: String { directory + "/ca/ca.key" }
    public var leafCertificatePath: String { directory + "/\(DevelopmentCertificates.leafName).crt" }
    var leafKeyPath: String { directory + "/\(DevelopmentCertificates.leafName).key" }

    public enum Outcome: Equatable, Sendable {
        case unchanged
        case issued(createdCA: Bool)
    }

    /// The DNS names the leaf must carry for these sites. A wildcard site `*.example.org` needs
    /// `*.example.org` and `example.org`: it also serves its base name, which is where iOS fetches
    /// the file for `applinks:*.example.org` (docs/serving.md). A TLS wildcard covers one label
    /// only, so `a.b.example.org` is not covered; such hosts can be added with `dev-certs --name`.
    public static func dnsNames(for sites: [SiteName]) -> [String] {
        var names = ["localhost"]
        for site in sites {
            for name in site.isWildcard ? [site.description, site.host] : [site.host] where !names.contains(name) {
                names.append(name)
            }
        }
        return names
    }

    /// Makes the CA if there is none and (re-)issues the leaf when it is missing, lacks a name,
    /// was signed by another CA, or is near its end. Returns what it did.
    public func ensure(names: [String], now: Int = Int(time(nil))) throws(TLSError) -> Outcome {
        try makeDirectory(directory, mode: 0o755)
        try makeDirectory(directory + "/ca", mode: 0o700)
        var createdCA = false
        let ca: (cert: OpaquePointer, key: OpaquePointer)
        if let cert = readCertificate(caCertificatePath), let key = readKey(caKeyPath) {
            ca = (cert, key)
        } else {
            ca = try makeCA(now: now)
            try write(pem: { PEM_write_bio_PrivateKey($0, ca.key, nil, nil, 0, nil, nil) }, to: caKeyPath, mode: 0o600)
            try write(pem: { PEM_write_bio_X509($0, ca.cert) }, to: caCertificatePath, mode: 0o644)
            createdCA = true
        }
        defer { X509_free(ca.cert); EVP_PKEY_free(ca.key) }

        if !createdCA, let leaf = readCertificate(leafCertificatePath), readKey(leafKeyPath).map({ EVP_PKEY_free($0); return true }) == true {
            defer { X509_free(leaf) }
            let current = Set(X509Fields.dnsNames(leaf))
            let signedByCA = X509_verify(leaf, X509_get0_pubkey(ca.cert)) == 1
            let endsAt = X509Fields.notAfter(leaf)
            if Set(names).isSubset(of: current), signedByCA, endsAt - now > DevelopmentCertificates.renewBeforeDays * 86_400 {
                return .unchanged
            }
        }
        guard let key = aasa_EVP_EC_gen_p256() else { throw TLSError("EC key generation") }
        defer { EVP_PKEY_free(key) }
        let san = (names.map { "DNS:" + $0 } + ["IP:127.0.0.1", "IP:::1"]).joined(separator: ",")
        let leaf = try makeCertificate(subject: "aasa development server", key: key, issuer: ca.cert, issuerKey: ca.key,
                                       days: DevelopmentCertificates.leafDays, now: now, extensions: [
                                           (NID_basic_constraints, "critical,CA:FALSE"),
                                           (NID_key_usage, "critical,digitalSignature"),
                                           (NID_ext_key_usage, "serverAuth"),
                                           (NID_subject_alt_name, san),
                                       ])
        defer { X509_free(leaf) }
        // Key first, then certificate: a reload that sees the new certificate finds its key.
        try write(pem: { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }, to: leafKeyPath, mode: 0o600)
        try write(pem: { PEM_write_bio_X509($0, leaf) }, to: leafCertificatePath, mode: 0o644)
        return .issued(createdCA: createdCA)
    }

    /// The CA certificate in DER, for the configuration profile.
    public func caDER() -> [UInt8]? {
        guard let cert = readCertificate(caCertificatePath) else { return nil }
        defer { X509_free(cert) }
        var out: UnsafeMutablePointer<UInt8>?
        let n = i2d_X509(cert, &out)
        guard n > 0, let out else { return nil }
        defer { CRYPTO_free(out, #fileID, #line) }
        return Array(UnsafeBufferPointer(start: out, count: Int(n)))
    }

    // MARK: - Making

    private func makeCA(now: Int) throws(TLSError) -> (cert: OpaquePointer, key: OpaquePointer) {
        guard let key = aasa_EVP_EC_gen_p256() else { throw TLSError("EC key generation") }
        do {
            let cert = try makeCertificate(subject: "aasa development CA (\(hostName()))", key: key, issuer: nil, issuerKey: key,
                                           days: DevelopmentCertificates.caDays, now: now, extensions: [
                                               (NID_basic_constraints, "critical,CA:TRUE,pathlen:0"),
                                               (NID_key_usage, "critical,keyCertSign,cRLSign"),
                                               (NID_subject_key_identifier, "hash"),
                                           ])
            return (cert, key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
    }

    private func makeCertificate(subject: String, key: OpaquePointer, issuer: OpaquePointer?, issuerKey: OpaquePointer,
                                 days: Int, now: Int, extensions: [(Int32, String)]) throws(TLSError) -> OpaquePointer {
        TLSError.clearQueue()
        guard let cert = X509_new() else { throw TLSError("X509_new") }
        do throws(TLSError) {
            guard X509_set_version(cert, 2) == 1 else { throw TLSError("X509_set_version") }
            // A random 128-bit serial: browsers refuse two certificates with one serial from a CA.
            let serial = BN_new()
            defer { BN_free(serial) }
            guard BN_rand(serial, 127, 0, 0) == 1, BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(cert)) != nil else {
                throw TLSError("serial number")
            }
            var start = time_t(now - 3600)
            var end = time_t(now + days * 86_400)
            guard X509_time_adj_ex(X509_getm_notBefore(cert), 0, 0, &start) != nil,
                  X509_time_adj_ex(X509_getm_notAfter(cert), 0, 0, &end) != nil else { throw TLSError("validity") }
            guard let name = X509_get_subject_name(cert),
                  X509_NAME_add_entry_by_txt(name, "O", aasa_mbstring_asc(), "aasa development", -1, -1, 0) == 1,
                  X509_NAME_add_entry_by_txt(name, "CN", aasa_mbstring_asc(), subject, -1, -1, 0) == 1 else {
                throw TLSError("subject name")
            }
            guard X509_set_issuer_name(cert, issuer.map { X509_get_subject_name($0) } ?? name) == 1,
                  X509_set_pubkey(cert, key) == 1 else { throw TLSError("issuer") }
            var ctx = X509V3_CTX()
            aasa_X509V3_set_ctx_nodb(&ctx)
            X509V3_set_ctx(&ctx, issuer ?? cert, cert, nil, nil, 0)
            for (nid, value) in extensions {
                guard let ext = X509V3_EXT_conf_nid(nil, &ctx, nid, value) else { throw TLSError("extension \(value)") }
                defer { X509_EXTENSION_free(ext) }
                guard X509_add_ext(cert, ext, -1) == 1 else { throw TLSError("X509_add_ext") }
            }
            if issuer != nil, let ext = X509V3_EXT_conf_nid(nil, &ctx, NID_authority_key_identifier, "keyid:always") {
                X509_add_ext(cert, ext, -1)
                X509_EXTENSION_free(ext)
            }
            guard X509_sign(cert, issuerKey, EVP_sha256()) > 0 else { throw TLSError("X509_sign") }
        } catch {
            X509_free(cert)
            throw error
        }
        return cert
    }

    // MARK: - Files

    private func readCertificate(_ path: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "r") else { TLSError.clearQueue(); return nil }
        defer { BIO_free(bio) }
        let cert = PEM_read_bio_X509(bio, nil, nil, nil)
        if cert == nil { TLSError.clearQueue() }
        return cert
    }

    private func readKey(_ path: String) -> OpaquePointer? {
        guard let bio = BIO_new_file(path, "r") else { TLSError.clearQueue(); return nil }
        defer { BIO_free(bio) }
        let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        if key == nil { TLSError.clearQueue() }
        return key
    }

    /// Writes PEM through a temporary file created with `mode` and a rename, so no reader ever
    /// sees half a file and a key is never readable by others, not even for a moment.
    private func write(pem: (OpaquePointer) -> Int32, to path: String, mode: mode_t) throws(TLSError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError("BIO_new") }
        defer { BIO_free(bio) }
        guard pem(bio) == 1 else { throw TLSError("PEM_write \(path)") }
        var data: UnsafeMutablePointer<CChar>?
        let length = aasa_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw TLSError("PEM_write \(path)") }
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw TLSError(message: "cannot write \(tmp): \(String(cString: strerror(errno)))") }
        fchmod(fd, mode)
        var offset = 0
        while offset < Int(length) {
            let n = Glibc.write(fd, data + offset, Int(length) - offset)
            if n <= 0 {
                if errno == EINTR { continue }
                close(fd)
                unlink(tmp)
                throw TLSError(message: "cannot write \(tmp): \(String(cString: strerror(errno)))")
            }
            offset += n
        }
        close(fd)
        guard rename(tmp, path) == 0 else {
            unlink(tmp)
            throw TLSError(message: "cannot rename \(tmp): \(String(cString: strerror(errno)))")
        }
    }

    private func makeDirectory(_ path: String, mode: mode_t) throws(TLSError) {
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw TLSError(message: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    private func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        gethostname(&buffer, buffer.count - 1)
        return String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self)
    }
}
