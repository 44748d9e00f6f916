import AASAHTTP
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// A certificate sent to the write API, checked as the loader would read it from `--certs`
/// (docs/serving.md, "Certificates"), before anything is stored: the chain parses, the key
/// belongs to the leaf, the leaf has not expired, is no CA and names a DNS host.
enum CertificateCheck {
    enum Outcome {
        case success(TLSCertificate)
        case failure(String)
    }

    static func check(name: String, chain: String, key: String) -> Outcome {
        guard chain.contains("-----BEGIN CERTIFICATE-----") else {
            return .failure("certificate: no PEM certificate (-----BEGIN CERTIFICATE-----) in the chain")
        }
        guard key.contains("PRIVATE KEY-----") else { return .failure("key: no PEM private key") }
        // A combined PEM (HAProxy's, certificate and key in one file) pasted as the chain: the
        // chain is stored readable and given back by GET, so a key in it is never stored.
        if let other = CertificateCheck.blockOtherThanCertificate(in: chain) ?? (chain.contains("PRIVATE KEY") ? "PRIVATE KEY" : nil) {
            return .failure("certificate: the chain holds a \(other) block; send certificates only in \"certificate\" and the private key in \"key\" (nothing was stored)")
        }
        // The loader's own reading, from a private folder of its own that nothing else reads.
        var template = Array((TemporaryFolder.path + "/aasa-certificate-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { return .failure("cannot check the certificate: mkdtemp: \(String(cString: strerror(errno)))") }
        let folder = String(cString: made)
        defer {
            unlink(folder + "/chain.pem")
            unlink(folder + "/key.pem")
            rmdir(folder)
        }
        do {
            try FolderStore.writeDurably(Array(chain.utf8), to: "chain.pem", in: folder, mode: 0o600)
            try FolderStore.writeDurably(Array(key.utf8), to: "key.pem", in: folder, mode: 0o600)
        } catch {
            return .failure("cannot check the certificate: \(error.message)")
        }
        let cert: TLSCertificate
        do {
            cert = try TLSCertificate(name: name, certificatePath: folder + "/chain.pem", keyPath: folder + "/key.pem")
        } catch {
            let text = "\(error)"
            if text.contains("does not belong") { return .failure("key: the private key does not belong to the chain's first certificate") }
            if text.contains("private key") { return .failure("key: the private key does not parse as PEM") }
            return .failure("certificate: the chain does not parse as PEM certificates")
        }
        // Read again wholly through OpenSSL: a start reads keys without it, and a key that
        // only looks right (a truncated RSA key, a secret that is not the public key's) would be
        // stored and then fail every handshake.
        if let problem = KeyReader.pairProblem(certificatePath: folder + "/chain.pem", keyPath: folder + "/key.pem") {
            return .failure("key: " + problem)
        }
        if cert.notAfter <= Int(time(nil)) {
            return .failure("certificate: the leaf expired at \(HTTPDate.iso8601(milliseconds: Int64(cert.notAfter) * 1000))")
        }
        if cert.isCA { return .failure("certificate: the leaf is a CA certificate (basicConstraints CA:TRUE), not a serving one") }
        if cert.dnsNames.isEmpty { return .failure("certificate: the leaf names no DNS host in its subjectAltName") }
        return .success(cert)
    }

    /// The label of the first PEM block in `chain` that is not a certificate (`PRIVATE KEY`,
    /// `EC PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, ...), or nil when every block is one.
    static func blockOtherThanCertificate(in chain: String) -> String? {
        let begin = "-----BEGIN "
        for line in chain.split(whereSeparator: { $0 == "\n" || $0 == "\r\n" || $0 == "\r" }) {
            var line = line
            while let c = line.first, c == " " || c == "\t" { line = line.dropFirst() }
            guard line.hasPrefix(begin) else { continue }
            var label = line.dropFirst(begin.count)
            while let c = label.last, c == " " || c == "\t" { label = label.dropLast() }
            if label.hasSuffix("-----") { label = label.dropLast(5) }
            if label != "CERTIFICATE" { return String(label.prefix(40)) }
        }
        return nil
    }
}

/// Where temporary files go: $TMPDIR, else /tmp (a certificate checked before it is stored, the
/// PostgreSQL store's local copy).
enum TemporaryFolder {
    static var path: String {
        getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
    }
}
