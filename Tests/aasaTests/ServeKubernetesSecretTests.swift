import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `--certs` with a folder in the layout of a Kubernetes TLS Secret (`tls.crt`, `tls.key`), as
/// cert-manager writes it: as plain files, and as the kubelet mounts it (symlinks into `..data`,
/// swapped atomically when the certificate is renewed).
@Suite struct ServeKubernetesSecretTests {
    /// The certificate the server presents for `example.com`, as base64 on one line.
    private static func presented(_ server: ServerProcess) throws -> String {
        let r = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com"],
                              input: "", timeout: 30)
        return r.stdout.components(separatedBy: "-----BEGIN CERTIFICATE-----").dropFirst().first?
            .components(separatedBy: "-----END CERTIFICATE-----").first?.replacingOccurrences(of: "\n", with: "") ?? ""
    }

    private static func pem(_ file: String) throws -> String {
        try String(contentsOf: TestCertificates.directory.appendingPathComponent(file), encoding: .utf8)
            .components(separatedBy: "-----BEGIN CERTIFICATE-----")[1]
            .components(separatedBy: "-----END CERTIFICATE-----")[0].replacingOccurrences(of: "\n", with: "")
    }

    /// Copies a test key pair to `folder/tls.crt` and `folder/tls.key` (mode 600).
    private static func writePair(_ name: String, to folder: String) throws {
        let fm = FileManager.default
        try fm.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try fm.copyItem(atPath: TestCertificates.directory.appendingPathComponent("\(name).crt").path, toPath: folder + "/tls.crt")
        try fm.copyItem(atPath: TestCertificates.directory.appendingPathComponent("\(name).key").path, toPath: folder + "/tls.key")
        chmod(folder + "/tls.key", 0o600)
    }

    private static func certificateNames(_ server: ServerProcess) throws -> [String] {
        try #require(try server.status()["certificates"] as? [[String: Any]]).compactMap { $0["name"] as? String }
    }

    @Test func aFolderWithTLSCrtAndTLSKeyIsAKeyPairNamedAfterTheFolder() throws {
        let server = try ServerProcess(prepare: { config in
            try Self.writePair("sites", to: config.deletingLastPathComponent().appendingPathComponent("certs/example-com-tls").path)
        }, certificates: false)
        #expect(try Self.presented(server) == Self.pem("sites.crt"))
        #expect(try Self.certificateNames(server) == ["example-com-tls"])
        let r = try server.curlHTTPS(host: "example.com")
        #expect(RawHTTP.status(r.stdout) == 200, "\(r.stdout.prefix(200))\(r.stderr)")
    }

    @Test func aSecretMountedByTheKubeletIsFollowedThroughItsDataSwap() throws {
        // The kubelet's atomic writer: the files live in a timestamped folder, `..data` points at
        // it, and `tls.crt`/`tls.key` point into `..data`.
        let server = try ServerProcess(prepare: { config in
            let secret = config.deletingLastPathComponent().appendingPathComponent("certs/example-com-tls").path
            try Self.writePair("sites", to: secret + "/..2026_11_25_01_00_00.000000001")
            let fm = FileManager.default
            try fm.createSymbolicLink(atPath: secret + "/..data", withDestinationPath: "..2026_11_25_01_00_00.000000001")
            try fm.createSymbolicLink(atPath: secret + "/tls.crt", withDestinationPath: "..data/tls.crt")
            try fm.createSymbolicLink(atPath: secret + "/tls.key", withDestinationPath: "..data/tls.key")
        }, certificates: false)
        #expect(try Self.presented(server) == Self.pem("sites.crt"))
        #expect(try Self.certificateNames(server) == ["example-com-tls"], "..data and the timestamped folder are not key pairs")

        // Renewal: the new files in a new folder, a new symlink renamed over `..data`, the old folder removed.
        let secret = server.certs.appendingPathComponent("example-com-tls").path
        try Self.writePair("replacement", to: secret + "/..2026_11_25_02_00_00.000000002")
        try FileManager.default.createSymbolicLink(atPath: secret + "/..data_tmp", withDestinationPath: "..2026_11_25_02_00_00.000000002")
        #expect(rename(secret + "/..data_tmp", secret + "/..data") == 0)
        try FileManager.default.removeItem(atPath: secret + "/..2026_11_25_01_00_00.000000001")

        #expect(ServerProcess.waitFor { try Self.presented(server) == Self.pem("replacement.crt") })
        let certificates = try #require(try server.status()["certificates"] as? [[String: Any]])
        #expect(certificates.count == 1)
        #expect((certificates.first?["dnsNames"] as? [String])?.contains("new.example.com") == true)
        let log = server.log
        #expect(!log.contains("private key"), "the key's mode is kept: \(log)")
    }
}
