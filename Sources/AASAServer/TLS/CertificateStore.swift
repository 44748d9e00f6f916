#if canImport(Glibc)
import Glibc
#endif

/// Every certificate of `--certs`, indexed by subjectAltName (docs/serving.md, "Certificates"). Immutable: a reload
/// makes a new store from the previous one, changing only the certificates that changed.
///
/// Coverage and selection go through two name indexes (exact names, and wildcards by the name
/// under `*.`), as h2o resolves SNI: a lookup costs one or two dictionary probes whatever the
/// number of certificates, so no step compares every site with every certificate.
public final class CertificateStore: @unchecked Sendable {
    /// In byte order of name.
    public let certificates: [TLSCertificate]
    public let defaultCertificate: TLSCertificate?
    let defaultName: String?
    private let byName: [String: TLSCertificate]
    /// The certificate that wins each name: the first in byte order of certificate name, so the
    /// choice is stable across reloads.
    private let exact: [String: TLSCertificate]
    private let wildcard: [String: TLSCertificate]
    /// The other certificates of a name two certificates share (rare), to fall back on when the
    /// winner goes.
    private let shadowed: [String: [TLSCertificate]]
    /// Names of the certificates ACME issued (docs/acme.md): `/status` says `"source":"acme"`,
    /// and only these are renewed.
    public let acmeNames: Set<String>

    public convenience init(certificates: [TLSCertificate], defaultName: String?, acmeNames: Set<String> = []) {
        let built = CertificateStore(Parts(), defaultName: nil)
            .updating(removing: [], adding: certificates, acmeNames: acmeNames, defaultName: defaultName)
        self.init(copying: built)
    }

    private struct Parts {
        var certificates: [TLSCertificate] = []
        var byName: [String: TLSCertificate] = [:]
        var exact: [String: TLSCertificate] = [:]
        var wildcard: [String: TLSCertificate] = [:]
        var shadowed: [String: [TLSCertificate]] = [:]
        var acmeNames: Set<String> = []
    }

    private init(_ parts: Parts, defaultName: String?) {
        certificates = parts.certificates
        byName = parts.byName
        exact = parts.exact
        wildcard = parts.wildcard
        shadowed = parts.shadowed
        acmeNames = parts.acmeNames
        self.defaultName = defaultName
        defaultCertificate = defaultName.flatMap { parts.byName[$0] } ?? parts.certificates.first
    }

    private convenience init(copying other: CertificateStore) {
        self.init(Parts(certificates: other.certificates, byName: other.byName, exact: other.exact, wildcard: other.wildcard,
                        shadowed: other.shadowed, acmeNames: other.acmeNames), defaultName: other.defaultName)
    }

    public static let empty = CertificateStore(certificates: [], defaultName: nil)

    /// A store with the certificates named in `removing` taken out and `adding` put in (a
    /// certificate replaced is in both). Costs the names of the certificates changed, plus one
    /// copy of the indexes: never a walk that compares certificates with each other.
    func updating(removing: Set<String>, adding: [TLSCertificate], acmeNames acmeChanges: Set<String>, defaultName: String?) -> CertificateStore {
        var p = Parts(certificates: certificates, byName: byName, exact: exact, wildcard: wildcard, shadowed: shadowed, acmeNames: acmeNames)
        let added = Set(adding.map(\.name))
        for name in removing.union(added) {
            p.acmeNames.remove(name)
            guard let old = p.byName.removeValue(forKey: name) else { continue }
            if let i = CertificateStore.position(of: name, in: p.certificates), p.certificates[i] === old { p.certificates.remove(at: i) }
            for dnsName in old.dnsNames {
                if dnsName.hasPrefix("*.") {
                    CertificateStore.unindex(old, key: String(dnsName.dropFirst(2)), in: &p.wildcard, shadowed: &p.shadowed, shadowKey: dnsName)
                } else {
                    CertificateStore.unindex(old, key: dnsName, in: &p.exact, shadowed: &p.shadowed, shadowKey: dnsName)
                }
            }
        }
        for cert in adding.sorted(by: { CertificateStore.precedes($0.name, $1.name) }) {
            p.byName[cert.name] = cert
            let i = CertificateStore.position(of: cert.name, in: p.certificates) ?? p.certificates.count
            p.certificates.insert(cert, at: i)
            for dnsName in Set(cert.dnsNames) {
                if dnsName.hasPrefix("*.") {
                    CertificateStore.index(cert, key: String(dnsName.dropFirst(2)), in: &p.wildcard, shadowed: &p.shadowed, shadowKey: dnsName)
                } else {
                    CertificateStore.index(cert, key: dnsName, in: &p.exact, shadowed: &p.shadowed, shadowKey: dnsName)
                }
            }
        }
        p.acmeNames.formUnion(acmeChanges.filter { p.byName[$0] != nil })
        return CertificateStore(p, defaultName: defaultName)
    }

    /// Where `name` is or would go in `sorted` (byte order; names are ASCII file names mostly,
    /// and byte order is what `/status` promises).
    private static func position(of name: String, in sorted: [TLSCertificate]) -> Int? {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if precedes(sorted[mid].name, name) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    static func precedes(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }

    private static func index(_ cert: TLSCertificate, key: String, in table: inout [String: TLSCertificate],
                              shadowed: inout [String: [TLSCertificate]], shadowKey: String) {
        guard let winner = table[key] else {
            table[key] = cert
            return
        }
        if precedes(cert.name, winner.name) {
            table[key] = cert
            shadowed[shadowKey, default: []].append(winner)
        } else {
            shadowed[shadowKey, default: []].append(cert)
        }
    }

    private static func unindex(_ cert: TLSCertificate, key: String, in table: inout [String: TLSCertificate],
                                shadowed: inout [String: [TLSCertificate]], shadowKey: String) {
        if table[key] === cert {
            // The next in byte order of name takes the name over.
            if var others = shadowed[shadowKey], let next = others.indices.min(by: { precedes(others[$0].name, others[$1].name) }) {
                table[key] = others.remove(at: next)
                shadowed[shadowKey] = others.isEmpty ? nil : others
            } else {
                table[key] = nil
            }
        } else if var others = shadowed[shadowKey] {
            others.removeAll { $0 === cert }
            shadowed[shadowKey] = others.isEmpty ? nil : others
        }
    }

    /// The certificate of a name as in the layouts of `--certs`.
    func certificate(named name: String) -> TLSCertificate? { byName[name] }

    /// The certificate for a ServerName: exact, then wildcard, then the default. docs/serving.md, "Certificates".
    public func select(serverName: String?) -> TLSCertificate? {
        guard let serverName else { return defaultCertificate }
        return covering(serverName) ?? defaultCertificate
    }

    /// The certificate whose names cover `host`, exact name before wildcard (RFC 6125 §6.4.3:
    /// a wildcard covers exactly one label).
    func covering(_ host: String, work: BuildWork? = nil) -> TLSCertificate? {
        work?.add()
        if let c = exact[host] { return c }
        if let dot = host.utf8.firstIndex(of: UInt8(ascii: ".")), dot != host.utf8.startIndex {
            work?.add()
            return wildcard[String(host[host.utf8.index(after: dot)...])]
        }
        return nil
    }

    /// Whether any certificate covers `host`: two dictionary probes at most (counted in `work`).
    public func covers(_ host: String) -> Bool {
        covering(host) != nil
    }

    func covers(_ host: String, work: BuildWork?) -> Bool {
        covering(host, work: work) != nil
    }

    public func isACME(_ certificate: TLSCertificate) -> Bool {
        acmeNames.contains(certificate.name)
    }

    /// A key pair found in the certs directory, before loading.
    struct Candidate: Sendable {
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
        let entries = try DirectoryListing.entries(in: directory)
        var types: [String: DirectoryListing.Entry] = [:]
        for entry in entries { types[entry.name] = entry }
        func isFile(_ name: String) -> Bool {
            guard let entry = types[name] else { return false }
            return entry.isFile ?? DirectoryListing.isFile(directory + "/" + name)
        }
        var out: [Candidate] = []
        for entry in entries where !entry.name.hasPrefix(".") {
            let name = entry.name
            let path = directory + "/" + name
            if DirectoryListing.isDirectory(entry, in: directory) {
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
                if ext == ".pem", types[base + ".crt"] != nil { continue }
                if types[base + ".key"] != nil {
                    let key = directory + "/" + base + ".key"
                    guard isFile(name), isFile(base + ".key") else {
                        skipped("certificate \(base): \(name) or \(base).key is not a regular file; skipped")
                        continue
                    }
                    out.append(Candidate(name: base, certificate: path, key: key))
                }
            }
        }
        return out
    }

    /// The key pair named `name` alone, in either layout, as ``candidates(in:skipped:)`` would
    /// find it: what a change to one certificate's files reads, instead of the whole directory.
    static func candidate(named name: String, in directory: String, skipped: (String) -> Void = { _ in }) -> Candidate? {
        guard !name.isEmpty, !name.hasPrefix("."), !name.contains("/") else { return nil }
        let path = directory + "/" + name
        if DirectoryListing.isDirectory(path) {
            // certbot's layout first, then a Kubernetes TLS Secret's, as candidates(in:) does.
            for (chain, key) in [(path + "/fullchain.pem", path + "/privkey.pem"), (path + "/tls.crt", path + "/tls.key")]
            where DirectoryListing.isFile(chain) && DirectoryListing.isFile(key) {
                return Candidate(name: name, certificate: chain, key: key)
            }
            return nil
        }
        let key = path + ".key"
        var keyStat = stat()
        guard stat(key, &keyStat) == 0 else { return nil }
        for ext in [".crt", ".pem"] {
            let certificate = path + ext
            var st = stat()
            // NAME.crt wins over NAME.pem when both exist (lstat: a dangling link still counts).
            guard lstat(certificate, &st) == 0 else { continue }
            guard DirectoryListing.isFile(certificate), DirectoryListing.isFile(key) else {
                skipped("certificate \(name): \(name)\(ext) or \(name).key is not a regular file; skipped")
                return nil
            }
            return Candidate(name: name, certificate: certificate, key: key)
        }
        return nil
    }

    /// The certificate name a file or folder of the certs directory belongs to: `NAME` for
    /// `NAME.crt`, `NAME.pem`, `NAME.key` and the folder `NAME/`.
    static func certificateName(forEntry entry: String) -> String {
        for ext in [".crt", ".pem", ".key"] where entry.hasSuffix(ext) && entry.count > ext.count {
            return String(entry.dropLast(ext.count))
        }
        return entry
    }

    /// Loads one key pair; nil (reported) when it fails. `isACME` when ACME issued it.
    static func load(_ candidate: Candidate, directory: String, findings: StartupFindings,
                     keys: KeyReader? = nil) -> (certificate: TLSCertificate, isACME: Bool)? {
        var st = stat()
        if stat(candidate.key, &st) == 0, st.st_mode & 0o077 != 0 {
            findings.note(.keyReadableByOthers, level: .warning,
                          "warning: private key \(candidate.key) is readable by group or others (mode \(String(st.st_mode & 0o777, radix: 8))); chmod 600 it")
        }
        let certificate: TLSCertificate
        do {
            certificate = try TLSCertificate(name: candidate.name, certificatePath: candidate.certificate, keyPath: candidate.key, keys: keys)
        } catch {
            findings.error("certificate \(candidate.name): \(error)")
            return nil
        }
        // ACME writes the certbot layout and records each folder it issued (ACMEStorage).
        let isACME = candidate.certificate == directory + "/" + candidate.name + "/fullchain.pem"
            && DirectoryListing.isFile(ACMEStorage.markerPath(certsDirectory: directory, name: candidate.name))
        return (certificate, isACME)
    }
}

/// Directory reading for sites and certificates: names only, following symlinks when asked
/// what an entry is (Kubernetes mounts are symlinks).
enum DirectoryListing {
    /// An entry and what readdir says it is: `isDirectory`/`isFile` nil when d_type cannot tell
    /// (a symlink, or a filesystem without d_type), and a stat must.
    struct Entry {
        var name: String
        var type: UInt8

        var isDirectory: Bool? { type == UInt8(DT_DIR) ? true : type == UInt8(DT_LNK) || type == UInt8(DT_UNKNOWN) ? nil : false }
        var isFile: Bool? { type == UInt8(DT_REG) ? true : type == UInt8(DT_LNK) || type == UInt8(DT_UNKNOWN) ? nil : false }
    }

    static func names(in directory: String) throws(SystemError) -> [String] {
        try entries(in: directory).map(\.name)
    }

    /// In byte order of name, without `.` and `..`: no stat per entry (100 000 of them).
    static func entries(in directory: String) throws(SystemError) -> [Entry] {
        guard let dir = opendir(directory) else { throw SystemError("opendir \(directory)", errno: errno) }
        defer { closedir(dir) }
        var entries: [Entry] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            // Read the name in place: a dirent is only as long as its name (d_reclen), so a copy
            // of the whole 256-byte d_name reads past the end of the last entry of the buffer
            // (AddressSanitizer: heap-buffer-overflow).
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name == "." || name == ".." { continue }
            entries.append(Entry(name: name, type: entry.pointee.d_type))
        }
        return entries.sorted { bytewise($0.name, $1.name) }
    }

    /// Byte order, by memcmp (the generic comparison of UTF-8 views costs several times more).
    static func bytewise(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                let n = Swift.min(pa.count, pb.count)
                let c = n == 0 ? 0 : memcmp(pa.baseAddress!, pb.baseAddress!, n)
                return c != 0 ? c < 0 : pa.count < pb.count
            }
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    static func isFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG
    }

    static func isDirectory(_ entry: Entry, in directory: String) -> Bool {
        entry.isDirectory ?? isDirectory(directory + "/" + entry.name)
    }
}
