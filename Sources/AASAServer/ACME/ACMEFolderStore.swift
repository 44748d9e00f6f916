import AASACore
import AASAHTTP
import COpenSSL
import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// What ACME keeps in `--certs DIR` (docs/acme.md): `acme/account.key` (EC P-256, 0600) and
/// `acme/account.json` (the account URL, and the directory it belongs to), the lock replicas
/// share, and each certificate in the certbot layout `HOST/fullchain.pem` + `HOST/privkey.pem`,
/// which the ordinary loader indexes and hot-reloads. `acme/certificates/HOST.json` records
/// that ACME issued `HOST/` (its `/status` source, and that it is ours to renew). The order
/// bucket is this process's own: replicas on one volume share the lock, not the bucket.
final class ACMEFolderStore: ACMEStore {
    let certsDirectory: String
    private var bucket: OrderBucket

    init(certsDirectory: String, orderRate: Int) {
        self.certsDirectory = certsDirectory
        bucket = OrderBucket(capacity: orderRate, now: monotonicMilliseconds())
    }

    var acmeDirectory: String { certsDirectory + "/acme" }
    var accountKeyPath: String { acmeDirectory + "/account.key" }
    var accountPath: String { acmeDirectory + "/account.json" }
    var lockPath: String { acmeDirectory + "/lock" }

    static func markerPath(certsDirectory: String, name: String) -> String {
        certsDirectory + "/acme/certificates/" + name + ".json"
    }

    func prepare() throws(ACMEError) {
        try makeDirectory(acmeDirectory, mode: 0o700)
        try makeDirectory(acmeDirectory + "/certificates", mode: 0o755)
        try makeDirectory(challengesDirectory, mode: 0o755)
        for type in ChallengeType.allCases { try makeDirectory(challengesDirectory + "/" + type.rawValue, mode: 0o755) }
    }

    // MARK: - Challenges shared with replicas

    /// `acme/challenges/TYPE/NAME` holds a pending challenge's key authorization (NAME is the
    /// token for HTTP-01, the host for TLS-ALPN-01). Behind a balancer the CA's validation
    /// may reach any replica; the others answer from these files.
    var challengesDirectory: String { acmeDirectory + "/challenges" }

    /// Tokens come from the CA: only base64url characters make a file name (RFC 8555 §8.1).
    static func isSafeName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && name.first != "." && name.utf8.allSatisfy {
            ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E
        }
    }

    func publishChallenge(_ type: ChallengeType, name: String, keyAuthorization: String) throws(ACMEError) {
        guard ACMEFolderStore.isSafeName(name) else { throw ACMEError(.protocolViolation, "unusable challenge name \(name)") }
        try write(Array(keyAuthorization.utf8), to: challengesDirectory + "/\(type.rawValue)/\(name)", mode: 0o644)
    }

    func withdrawChallenge(_ type: ChallengeType, name: String) {
        guard ACMEFolderStore.isSafeName(name) else { return }
        unlink(challengesDirectory + "/\(type.rawValue)/\(name)")
    }

    /// Every published challenge, as `TYPE/NAME` → key authorization: read by the ACME thread.
    func sharedChallenges() -> [String: String]? {
        var out: [String: String] = [:]
        for type in ChallengeType.allCases {
            let dir = challengesDirectory + "/" + type.rawValue
            for name in (try? DirectoryListing.names(in: dir)) ?? [] where ACMEFolderStore.isSafeName(name) {
                if let bytes = ACMEFolderStore.read(dir + "/" + name), !bytes.isEmpty {
                    out[type.rawValue + "/" + name] = String(decoding: bytes, as: UTF8.self)
                }
            }
        }
        return out
    }

    // MARK: - Account

    /// The account key, made and written (0600) on first use; one for every directory.
    func accountKey(directory: String, log: Log) throws(ACMEError) -> P256Key {
        if let pem = ACMEFolderStore.read(accountKeyPath) { return try P256Key(pem: pem) }
        let key = try P256Key.generate()
        try write(try key.privateKeyPEM(), to: accountKeyPath, mode: 0o600)
        log.info("acme: new account key in \(accountKeyPath)")
        return key
    }

    /// The account URL saved for `directory`, if any (another directory means another account).
    func accountURL(directory: String) -> String? {
        guard let bytes = ACMEFolderStore.read(accountPath), let json = JSONParser.parse(bytes).value,
              json["directory"]?.stringValue == directory else { return nil }
        return json["url"]?.stringValue
    }

    func saveAccount(url: String, directory: String) throws(ACMEError) {
        var w = JSONWriter()
        w.beginObject()
        w.key("directory"); w.value(directory)
        w.key("url"); w.value(url)
        w.endObject()
        try write(Array((w.output + "\n").utf8), to: accountPath, mode: 0o644)
    }

    func forgetAccount(directory: String) {
        unlink(accountPath)
    }

    // MARK: - Certificates

    /// Writes an issued certificate: the marker, then the key (0600), then the chain, each
    /// through a temporary file and a rename. The chain comes last so that the loader, which
    /// reloads after a change settles, finds the new key by the time it sees the new chain.
    /// A first certificate is assembled in a hidden folder (the loader skips names starting with
    /// `.`) renamed to `HOST` once complete: the reload that the new folder triggers must not
    /// run before its watch on the folder exists and miss the files.
    func saveCertificate(host: String, _ issued: Issuance.Issued) throws(ACMEError) {
        let folder = certsDirectory + "/" + host
        try writeMarker(host: host, issued)
        if !DirectoryListing.isDirectory(folder) {
            let staging = certsDirectory + "/.\(host).new-\(getpid())"
            try makeDirectory(staging, mode: 0o755)
            try write(issued.privateKeyPEM, to: staging + "/privkey.pem", mode: 0o600)
            try write(issued.chainPEM, to: staging + "/fullchain.pem", mode: 0o644)
            if rename(staging, folder) == 0 { return }
            // Another replica made the folder meanwhile: write into it like a renewal.
            unlink(staging + "/privkey.pem")
            unlink(staging + "/fullchain.pem")
            rmdir(staging)
            try makeDirectory(folder, mode: 0o755)
        }
        try write(issued.privateKeyPEM, to: folder + "/privkey.pem", mode: 0o600)
        try write(issued.chainPEM, to: folder + "/fullchain.pem", mode: 0o644)
    }

    private func writeMarker(host: String, _ issued: Issuance.Issued) throws(ACMEError) {
        var w = JSONWriter()
        w.beginObject()
        w.key("certificate"); w.value(issued.certificateURL)
        w.key("order"); w.value(issued.orderURL)
        w.key("issued"); w.value(HTTPDate.iso8601(milliseconds: wallClockMilliseconds()))
        w.endObject()
        try write(Array((w.output + "\n").utf8), to: ACMEFolderStore.markerPath(certsDirectory: certsDirectory, name: host), mode: 0o644)
    }

    /// The validity of the ACME certificate on disk for `host` (the leaf of `HOST/fullchain.pem`
    /// when ACME issued it and it names the host), to see what another replica already did.
    func issuedValidity(host: String) -> CertificateValidity? {
        guard DirectoryListing.isFile(ACMEFolderStore.markerPath(certsDirectory: certsDirectory, name: host)),
              let pem = ACMEFolderStore.read(certsDirectory + "/" + host + "/fullchain.pem") else { return nil }
        return CertificateValidity(pem: pem, host: host)
    }

    /// Removes `HOST/`'s ACME files and its marker (never a file ACME did not write).
    func removeCertificate(host: String) throws(ACMEError) {
        try ACMEFolderStore.removeFiles(certsDirectory: certsDirectory, name: host)
        rmdir(certsDirectory + "/" + host)
    }

    /// ACME's files of the certificate `name` in `certsDirectory`: the mark first, so the pair
    /// is never taken for ACME's once it starts to go, then the chain, then the key. Also what
    /// a certificate written through the write API over ACME's does.
    static func removeFiles(certsDirectory: String, name: String) throws(ACMEError) {
        let folder = certsDirectory + "/" + name
        for path in [markerPath(certsDirectory: certsDirectory, name: name), folder + "/fullchain.pem", folder + "/privkey.pem"]
        where unlink(path) != 0 && errno != ENOENT {
            throw ACMEError(.storage, "cannot remove \(path): \(String(cString: strerror(errno)))")
        }
    }

    // MARK: - Lock and bucket

    var lockDescription: String { lockPath }

    /// Takes `acme/lock` (flock(2), exclusive, not waiting): replicas sharing the volume order
    /// one at a time, whatever the host. Nil when another process holds it. Closing the
    /// descriptor releases it.
    func lock(_ host: String) throws(ACMEError) -> ACMELock? {
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ACMEError(.storage, "cannot open \(lockPath): \(String(cString: strerror(errno)))") }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let e = errno
            close(fd)
            if e == EWOULDBLOCK { return nil }
            throw ACMEError(.storage, "flock \(lockPath): \(String(cString: strerror(e)))")
        }
        return ACMELock { close(fd) }
    }

    func takeOrder(now: Int64) -> Bool { bucket.take(now: now) }

    func nextOrder(now: Int64) -> Int64 { bucket.nextOrder(now: now) }

    // MARK: - Files

    /// The file's bytes, or nil when it is missing or cannot be read (never blocks: the site
    /// loader's reader refuses anything but a regular file).
    static func read(_ path: String) -> [UInt8]? {
        (try? SnapshotBuilder.read(path))??.0
    }

    /// Through a temporary file created with `mode` and a rename: no reader sees half a file,
    /// and a key is never readable by others, not even for a moment.
    func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(ACMEError) {
        let tmp = path + ".tmp-\(getpid())"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw ACMEError(.storage, "cannot write \(tmp): \(String(cString: strerror(errno)))") }
        fchmod(fd, mode)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            if n <= 0 {
                if n < 0, errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(tmp)
                throw ACMEError(.storage, "cannot write \(tmp): \(reason)")
            }
            offset += n
        }
        // The rename must not land before the bytes do (a crash would leave an empty key).
        fsync(fd)
        close(fd)
        guard rename(tmp, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(tmp)
            throw ACMEError(.storage, "cannot rename \(tmp): \(reason)")
        }
    }

    private func makeDirectory(_ path: String, mode: mode_t) throws(ACMEError) {
        if mkdir(path, mode) != 0 && errno != EEXIST {
            throw ACMEError(.storage, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }
}

/// A certificate's validity period, and when ACME renews it: at a random time within
/// lifetime/20 after less than a third of its lifetime is left (docs/acme.md,
/// "Automatic certificates"; Let's Encrypt's 90-day certificates renew between day 60 and day 64.5), so
/// 100 000 certificates issued together do not all fall due in the same minute. The random part
/// comes from the validity itself: the same certificate gets the same time after a restart.
struct CertificateValidity: Sendable, Equatable {
    var notBefore: Int
    var notAfter: Int

    var renewAfter: Int {
        let lifetime = max(0, notAfter - notBefore)
        let window = lifetime / 20
        guard window > 0 else { return notAfter - lifetime / 3 }
        return notAfter - lifetime / 3 + Int(CertificateValidity.mix(UInt64(bitPattern: Int64(notBefore)) &* 31 &+ UInt64(bitPattern: Int64(notAfter))) % UInt64(window))
    }

    /// SplitMix64's finaliser: well spread bits from nearby inputs (certificates a second apart).
    private static func mix(_ x: UInt64) -> UInt64 {
        var z = x &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    init(notBefore: Int, notAfter: Int) {
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// The first certificate of a PEM chain, when it names `host`.
    init?(pem: [UInt8], host: String) {
        let cert: OpaquePointer? = pem.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        TLSError.clearQueue()
        guard let cert else { return nil }
        defer { X509_free(cert) }
        guard X509Fields.dnsNames(cert).contains(host) else { return nil }
        notBefore = X509Fields.notBefore(cert)
        notAfter = X509Fields.notAfter(cert)
    }
}
