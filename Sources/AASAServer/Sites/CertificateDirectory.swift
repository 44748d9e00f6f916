import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// The certs directory (docs/serving.md, "Certificates"): which key pairs it holds, in any of
/// its layouts, and loading one.
extension CertificateStore {
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
        // Each entry's NAME and extension, and what each NAME has: one dictionary probe per file
        // here and one per certificate below, where a probe per possible file name (NAME.crt,
        // NAME.pem, NAME.key, each a new String) cost a second of a 100 000-certificate start.
        var bases: [(name: String, ext: PairFile)?] = []
        bases.reserveCapacity(entries.count)
        var pairs: [String: PairFiles] = [:]
        pairs.reserveCapacity(entries.count / 2 + 1)
        for (i, entry) in entries.enumerated() {
            let split = PairFile.split(entry.name)
            bases.append(split)
            if let (base, ext) = split { pairs[base, default: PairFiles()][ext] = i }
        }
        func isFile(_ i: Int) -> Bool {
            entries[i].isFile ?? DirectoryListing.isFile(DirectoryListing.path(directory, entries[i].name))
        }
        var out: [Candidate] = []
        out.reserveCapacity(pairs.count)
        // Names a folder gave: a folder `NAME/` listed before `NAME.crt` (byte order) wins over
        // it, so one name is one certificate (two made a removal miss the one left indexed).
        var folders: Set<String> = []
        for (i, entry) in entries.enumerated() where !entry.name.hasPrefix(".") {
            let name = entry.name
            let path = DirectoryListing.path(directory, name)
            if DirectoryListing.isDirectory(entry, in: directory) {
                let chain = path + "/fullchain.pem"
                let key = path + "/privkey.pem"
                if DirectoryListing.isFile(chain), DirectoryListing.isFile(key) {
                    out.append(Candidate(name: name, certificate: chain, key: key))
                    folders.insert(name)
                } else if DirectoryListing.isFile(path + "/tls.crt"), DirectoryListing.isFile(path + "/tls.key") {
                    out.append(Candidate(name: name, certificate: path + "/tls.crt", key: path + "/tls.key"))
                    folders.insert(name)
                }
                continue
            }
            guard let (base, ext) = bases[i], ext != .key, let files = pairs[base] else { continue }
            guard let key = files[.key] else {
                // A chain with no key beside it (a CA's `ca.pem`, an intermediate bundle) serves
                // nothing: said, so an empty start names what it passed over.
                if !(ext == .pem && files[.crt] != nil), !folders.contains(base) {
                    skipped("certificate \(base): \(name) has no \(base).key beside it; skipped (a CA or chain file alone is not a serving certificate)")
                }
                continue
            }
            // NAME.crt wins over NAME.pem when both exist.
            if ext == .pem, files[.crt] != nil { continue }
            if !folders.isEmpty, folders.contains(base) {
                skipped("certificate \(base): both \(base)/ and \(name) hold one; \(base)/ is used, \(name) skipped")
                continue
            }
            guard isFile(i), isFile(key) else {
                skipped("certificate \(base): \(name) or \(base).key is not a regular file; skipped")
                continue
            }
            out.append(Candidate(name: base, certificate: path, key: DirectoryListing.path(directory, entries[key].name)))
        }
        return out
    }

    /// The three file names of the `NAME.crt`/`NAME.pem` + `NAME.key` layout.
    enum PairFile: Int {
        case crt, pem, key

        /// `NAME` and the extension of a file of that layout; nil for any other name.
        static func split(_ name: String) -> (String, PairFile)? {
            var name = name
            return name.withUTF8 { bytes -> (String, PairFile)? in
                let n = bytes.count
                guard n > 4, bytes[n - 4] == UInt8(ascii: ".") else { return nil }
                let ext: PairFile
                switch (bytes[n - 3], bytes[n - 2], bytes[n - 1]) {
                case (UInt8(ascii: "c"), UInt8(ascii: "r"), UInt8(ascii: "t")): ext = .crt
                case (UInt8(ascii: "p"), UInt8(ascii: "e"), UInt8(ascii: "m")): ext = .pem
                case (UInt8(ascii: "k"), UInt8(ascii: "e"), UInt8(ascii: "y")): ext = .key
                default: return nil
                }
                return (String(decoding: UnsafeBufferPointer(rebasing: bytes[..<(n - 4)]), as: UTF8.self), ext)
            }
        }
    }

    /// Where in a listing each file of one `NAME` is.
    struct PairFiles {
        private var indexes: (Int?, Int?, Int?) = (nil, nil, nil)

        subscript(file: PairFile) -> Int? {
            get {
                switch file {
                case .crt: indexes.0
                case .pem: indexes.1
                case .key: indexes.2
                }
            }
            set {
                switch file {
                case .crt: indexes.0 = newValue
                case .pem: indexes.1 = newValue
                case .key: indexes.2 = newValue
                }
            }
        }
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
            // A folder without a pair: `NAME.crt` beside it may still be one, as in candidates(in:).
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
        PairFile.split(entry)?.0 ?? entry
    }

    /// What loading one key pair gave.
    enum Loaded: Sendable {
        /// Ready to serve; `isACME` when ACME issued it.
        case serving(TLSCertificate, isACME: Bool)
        /// Read, but never served: a CA, or a certificate that names no DNS host. Said once,
        /// and not read again until its files change.
        case skipped
        /// Unreadable, or the key does not match (reported); read again at the next reload.
        case failed
    }

    /// Loads one key pair (docs/serving.md, "Certificates"). `keyMode`: the key file's mode, from
    /// the `stat` that took its stamp (nil when that failed, and the read will say why).
    static func load(_ candidate: Candidate, keyMode: mode_t?, directory: String, findings: StartupFindings,
                     keys: KeyReader? = nil) -> Loaded {
        if let keyMode, keyMode & 0o077 != 0 {
            findings.note(.keyReadableByOthers, level: .warning,
                          "warning: private key \(candidate.key) is readable by group or others (mode \(String(keyMode & 0o777, radix: 8))); chmod 600 it")
        }
        let certificate: TLSCertificate
        do {
            certificate = try TLSCertificate(name: candidate.name, certificatePath: candidate.certificate, keyPath: candidate.key, keys: keys)
        } catch {
            findings.error("certificate \(candidate.name): \(error)")
            return .failed
        }
        // A CA's certificate beside its leaves (ca.pem + ca.key) would otherwise be indexed
        // under no name, or handed to clients as the default certificate.
        if certificate.isCA {
            findings.error("certificate \(candidate.name): \(candidate.certificate) is a CA certificate (basicConstraints CA:TRUE), not a serving one; skipped (`openssl req -x509` marks a self-signed certificate CA:TRUE unless given -addext basicConstraints=CA:FALSE)")
            return .skipped
        }
        if certificate.dnsNames.isEmpty {
            findings.error("certificate \(candidate.name): \(candidate.certificate) names no DNS host in its subjectAltName, so no client name can select it; skipped")
            return .skipped
        }
        // ACME records each folder it issued (ACMEFolderStore; the store's local copy carries
        // the mark of its rows the same way).
        let isACME = candidate.certificate.hasPrefix(directory + "/" + candidate.name + "/")
            && DirectoryListing.isFile(ACMEFolderStore.markerPath(certsDirectory: directory, name: candidate.name))
        return .serving(certificate, isACME: isACME)
    }
}
