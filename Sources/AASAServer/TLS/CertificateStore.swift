#if canImport(Glibc)
import Glibc
#endif

/// Every certificate of `--certs`, indexed by subjectAltName (SPEC 3.1). Immutable: a reload
/// builds a new store.
public final class CertificateStore: @unchecked Sendable {
    public let certificates: [TLSCertificate]
    public let defaultCertificate: TLSCertificate?
    private let exact: [String: TLSCertificate]
    private let wildcard: [String: TLSCertificate]
    /// Names of the certificates ACME issued (SPEC 3.10): `/status` says `"source":"acme"`,
    /// and only these are renewed.
    public let acmeNames: Set<String>

    public init(certificates: [TLSCertificate], defaultName: String?, acmeNames: Set<String> = []) {
        self.acmeNames = acmeNames
        let sorted = certificates.sorted { Array($0.name.utf8).lexicographicallyPrecedes(Array($1.name.utf8)) }
        self.certificates = sorted
        self.defaultCertificate = sorted.first { $0.name == defaultName } ?? sorted.first
        var exact: [String: TLSCertificate] = [:]
        var wildcard: [String: TLSCertificate] = [:]
        // Earlier names win ties, so the choice is stable across reloads.
        for cert in sorted {
            for name in cert.dnsNames {
                if name.hasPrefix("*.") {
                    if wildcard[String(name.dropFirst(2))] == nil { wildcard[String(name.dropFirst(2))] = cert }
                } else if exact[name] == nil {
                    exact[name] = cert
                }
            }
        }
        self.exact = exact
        self.wildcard = wildcard
    }

    public static let empty = CertificateStore(certificates: [], defaultName: nil)

    /// The certificate for a ServerName: exact, then wildcard, then the default. SPEC 3.1.
    public func select(serverName: String?) -> TLSCertificate? {
        guard let serverName else { return defaultCertificate }
        if let c = exact[serverName] { return c }
        if let dot = serverName.firstIndex(of: "."), let c = wildcard[String(serverName[serverName.index(after: dot)...])] {
            return c
        }
        return defaultCertificate
    }

    /// Whether any certificate covers `host`.
    public func covers(_ host: String) -> Bool {
        certificates.contains { $0.covers(host) }
    }

    public func isACME(_ certificate: TLSCertificate) -> Bool {
        acmeNames.contains(certificate.name)
    }

    /// A key pair found in the certs directory, before loading.
    struct Candidate {
        var name: String
        var certificate: String
        var key: String
    }

    /// The key pairs of a certs directory in any layout: `NAME.crt`/`NAME.pem` beside
    /// `NAME.key`, `NAME/fullchain.pem` with `NAME/privkey.pem` (certbot), or `NAME/tls.crt` with
    /// `NAME/tls.key` (a Kubernetes TLS Secret mounted as a folder, as cert-manager fills it: the
    /// kubelet makes each file a symlink into `..data`, itself a symlink it swaps on renewal, so
    /// the files are followed; the `..data` and `..TIMESTAMP` entries begin with `.` and are skipped).
    /// A key pair whose files are not regular files (a FIFO would block the reading thread) is
    /// left out and named through `skipped`.
    static func candidates(in directory: String, skipped: (String) -> Void = { _ in }) throws(SystemError) -> [Candidate] {
        let names = try DirectoryListing.names(in: directory)
        let set = Set(names)
        var out: [Candidate] = []
        for name in names where !name.hasPrefix(".") {
            let path = directory + "/" + name
            if DirectoryListing.isDirectory(path) {
                let chain = path + "/fullchain.pem"
                let key = path + "/privkey.pem"
                if DirectoryListing.isFile(chain), DirectoryListing.isFile(key) {
                    out.append(Candidate(name: name, certificate: chain, key: key))
                } else if DirectoryListing.isFile(path + "/tls.crt"), DirectoryListing.isFile(path + "/tls.key") {
                    out.append(Candidate(name: name, certificate: path + "/tls.crt", key: path + "/tls.key"))
                }
                continue
            }
            for ext in [".crt", ".pem"] where name.hasSuffix(ext) {
                let base = String(name.dropLast(ext.count))
                // NAME.crt wins over NAME.pem when both exist.
                if ext == ".pem", set.contains(base + ".crt") { continue }
                if set.contains(base + ".key") {
                    let key = directory + "/" + base + ".key"
                    guard DirectoryListing.isFile(path), DirectoryListing.isFile(key) else {
                        skipped("certificate \(base): \(name) or \(base).key is not a regular file; skipped")
                        continue
                    }
                    out.append(Candidate(name: base, certificate: path, key: key))
                }
            }
        }
        return out
    }

    /// Loads every key pair; a pair that fails is reported and left out.
    static func load(directory: String, defaultName: String?, report: (String) -> Void) -> CertificateStore? {
        let found: [Candidate]
        do {
            found = try candidates(in: directory, skipped: report)
        } catch {
            report("certificates: cannot read \(directory): \(error)")
            return nil
        }
        var certificates: [TLSCertificate] = []
        var acmeNames: Set<String> = []
        for candidate in found {
            var st = stat()
            if stat(candidate.key, &st) == 0, st.st_mode & 0o077 != 0 {
                report("warning: private key \(candidate.key) is readable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
            }
            do {
                certificates.append(try TLSCertificate(name: candidate.name, certificatePath: candidate.certificate, keyPath: candidate.key))
            } catch {
                report("certificate \(candidate.name): \(error)")
            }
            // ACME writes the certbot layout and records each folder it issued (ACMEStorage).
            if candidate.certificate == directory + "/" + candidate.name + "/fullchain.pem",
               DirectoryListing.isFile(ACMEStorage.markerPath(certsDirectory: directory, name: candidate.name)) {
                acmeNames.insert(candidate.name)
            }
        }
        return CertificateStore(certificates: certificates, defaultName: defaultName, acmeNames: acmeNames)
    }
}

/// Directory reading for sites and certificates: names only, following symlinks when asked
/// what an entry is (Kubernetes mounts are symlinks).
enum DirectoryListing {
    static func names(in directory: String) throws(SystemError) -> [String] {
        guard let dir = opendir(directory) else { throw SystemError("opendir \(directory)", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            names.append(name)
        }
        return names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    static func isFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG
    }
}
