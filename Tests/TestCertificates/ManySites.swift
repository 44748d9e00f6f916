import COpenSSL
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import AASATransport

/// A config and a certs directory with many sites, each with a certificate of its own
/// (`siteN.example.net`, self-signed, one shared P-256 key: signing is what costs).
public final class ManySites {
    public let root: String
    public var config: String { root + "/config" }
    public var certs: String { root + "/certs" }
    private let key: OpaquePointer
    private let keyPEM: [UInt8]

    public init() throws {
        root = NSTemporaryDirectory() + "aasa-many-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/config", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: root + "/certs", withIntermediateDirectories: true)
        guard let key = aasa_EVP_EC_gen_p256() else { throw TLSError("EC key generation") }
        self.key = key
        keyPEM = try ManySites.pem { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
    }

    deinit {
        EVP_PKEY_free(key)
        try? FileManager.default.removeItem(atPath: root)
    }

    public static func host(_ i: Int) -> String { "site\(i).example.net" }

    /// Sites `range`, each with its own certificate unless `certificates` is false.
    public func add(_ range: Range<Int>, certificates: Bool = true) throws {
        for i in range {
            try addSite(ManySites.host(i))
            if certificates { try addCertificate(name: ManySites.host(i), dnsNames: [ManySites.host(i)]) }
        }
    }

    public func addSite(_ host: String, path: String = "/") throws {
        try FileManager.default.createDirectory(atPath: config + "/" + host, withIntermediateDirectories: true)
        try writeSite(host, path: path)
    }

    /// Writes the site's file through a temporary file and a rename, as deploy tools do.
    public func writeSite(_ host: String, path: String) throws {
        let body = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
        let file = config + "/" + host + "/apple-app-site-association"
        try Data(body.utf8).write(to: URL(fileURLWithPath: file + ".tmp"))
        guard rename(file + ".tmp", file) == 0 else { throw SystemError("rename", errno: errno) }
    }

    public func addCertificate(name: String, dnsNames: [String]) throws {
        guard let cert = X509_new() else { throw TLSError("X509_new") }
        defer { X509_free(cert) }
        X509_set_version(cert, 2)
        ASN1_INTEGER_set(X509_get_serialNumber(cert), Int(arc4random() & 0x7fff_ffff))
        var start = time_t(time(nil) - 3600)
        var end = time_t(time(nil) + 30 * 86_400)
        X509_time_adj_ex(X509_getm_notBefore(cert), 0, 0, &start)
        X509_time_adj_ex(X509_getm_notAfter(cert), 0, 0, &end)
        let subject = X509_get_subject_name(cert)
        X509_NAME_add_entry_by_txt(subject, "CN", aasa_mbstring_asc(), dnsNames[0], -1, -1, 0)
        X509_set_issuer_name(cert, subject)
        X509_set_pubkey(cert, key)
        var ctx = X509V3_CTX()
        aasa_X509V3_set_ctx_nodb(&ctx)
        X509V3_set_ctx(&ctx, cert, cert, nil, nil, 0)
        guard let ext = X509V3_EXT_conf_nid(nil, &ctx, NID_subject_alt_name, dnsNames.map { "DNS:" + $0 }.joined(separator: ",")) else {
            throw TLSError("subjectAltName")
        }
        X509_add_ext(cert, ext, -1)
        X509_EXTENSION_free(ext)
        guard X509_sign(cert, key, EVP_sha256()) > 0 else { throw TLSError("X509_sign") }
        let pem = try ManySites.pem { PEM_write_bio_X509($0, cert) }
        try write(pem, to: certs + "/" + name + ".crt.tmp", mode: 0o644)
        try write(keyPEM, to: certs + "/" + name + ".key", mode: 0o600)
        guard rename(certs + "/" + name + ".crt.tmp", certs + "/" + name + ".crt") == 0 else { throw SystemError("rename", errno: errno) }
    }

    private func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError("open \(path)", errno: errno) }
        defer { close(fd) }
        guard bytes.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == bytes.count else {
            throw SystemError("write \(path)", errno: errno)
        }
    }

    private static func pem(_ write: (OpaquePointer) -> Int32) throws -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw TLSError("PEM_write") }
        var data: UnsafeMutablePointer<CChar>?
        let length = aasa_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { throw TLSError("PEM_write") }
        return Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
    }
}
