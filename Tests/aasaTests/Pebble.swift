import ChildProcess
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Let's Encrypt's test CA (Debian's `pebble`) with `pebble-challtestsrv` as its DNS, which
/// answers 127.0.0.1 for every name, so the CA validates challenges against aasa on loopback.
/// Each instance runs on ports of its own; both processes are stopped by their PID.
final class Pebble {
    /// The CA that signs pebble's own HTTPS certificate (Debian's package does not ship the
    /// upstream test certificates, so the tests make theirs): aasa's `--acme-ca-root`.
    static let tlsFiles: URL = {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-pebble-tls-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try! FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let script = """
        set -e
        cd '\(dir.path)'
        openssl ecparam -name prime256v1 -genkey -noout -out ca.key
        openssl req -x509 -new -key ca.key -sha256 -days 30 -subj '/CN=pebble test CA' -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign' -out ca.pem 2>/dev/null
        openssl ecparam -name prime256v1 -genkey -noout -out server.key
        openssl req -new -key server.key -subj '/CN=localhost' -out server.csr 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\nextendedKeyUsage=serverAuth\\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -sha256 -extfile server.ext -out server.pem 2>/dev/null
        """
        let r = try! Shell.run("/bin/bash", ["-c", script])
        precondition(r.status == 0, "making pebble's certificate failed: \(r.stderr)")
        return dir
    }()

    static var caRoot: String { tlsFiles.appendingPathComponent("ca.pem").path }

    struct Options {
        /// Where pebble validates: aasa's listeners.
        var httpPort: Int
        var tlsPort: Int
        /// Seconds; nil for pebble's default (5 years).
        var certificateValidity: Int?
        var externalAccountBinding: (kid: String, key: String)?
        /// Fixed, to bring a CA back on the address a server already uses; 0 picks one.
        var listenPort = 0
        /// Percentage of good nonces refused with badNonce (pebble's default is 5).
        var nonceRejectPercent: Int?
    }

    let options: Options
    let port: Int
    let managementPort: Int
    private let dnsPort: Int
    private let challengeManagementPort: Int
    private let directory: TemporaryDirectory
    private var processes: [Process] = []
    private var logs: [OutputBuffer] = []

    var directoryURL: String { "https://localhost:\(port)/dir" }

    init(_ options: Options) throws {
        self.options = options
        port = options.listenPort == 0 ? try freePort() : options.listenPort
        managementPort = try freePort()
        dnsPort = try freePort()
        challengeManagementPort = try freePort()
        directory = try TemporaryDirectory()
        let tls = Pebble.tlsFiles
        var config: [String: Any] = [
            "listenAddress": "127.0.0.1:\(port)",
            "managementListenAddress": "127.0.0.1:\(managementPort)",
            "certificate": tls.appendingPathComponent("server.pem").path,
            "privateKey": tls.appendingPathComponent("server.key").path,
            "httpPort": options.httpPort,
            "tlsPort": options.tlsPort,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": options.externalAccountBinding != nil,
        ]
        if let validity = options.certificateValidity { config["certificateValidityPeriod"] = validity }
        if let eab = options.externalAccountBinding { config["externalAccountMACKeys"] = [eab.kid: eab.key] }
        let configPath = directory.url.appendingPathComponent("pebble.json")
        try JSONSerialization.data(withJSONObject: ["pebble": config]).write(to: configPath)

        // Only the DNS server: A queries answer 127.0.0.1, AAAA nothing (aasa listens on IPv4).
        try start("/usr/bin/pebble-challtestsrv", ["-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01", "127.0.0.1:\(dnsPort)",
                                                  "-http01", "", "-https01", "", "-tlsalpn01", "", "-management", "127.0.0.1:\(challengeManagementPort)"],
                  environment: [:], ready: "Starting management server")
        // No random validation sleeps; the default 5 % of good nonces rejected stays on, so
        // every run goes through badNonce retries.
        try start("/usr/bin/pebble", ["-config", configPath.path, "-dnsserver", "127.0.0.1:\(dnsPort)"],
                  environment: ["PEBBLE_VA_NOSLEEP": "1"].merging(options.nonceRejectPercent.map { ["PEBBLE_WFE_NONCEREJECT": "\($0)"] } ?? [:]) { $1 },
                  ready: "ACME directory available")
    }

    private func start(_ executable: String, _ arguments: [String], environment: [String: String], ready: String) throws {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.currentDirectoryURL = directory.url
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        p.standardOutput = out
        p.standardError = out
        let log = OutputBuffer(out.fileHandleForReading)
        try p.run()
        processes.append(p)
        logs.append(log)
        guard log.wait(for: ready, timeout: 15) else {
            stop()
            throw HarnessError(description: "\(executable) did not start: \(log.text)")
        }
    }

    var log: String { logs.map(\.text).joined(separator: "\n") }

    /// Stops both processes (SIGTERM to each PID this fixture started, then waits).
    func stop() {
        for p in processes.reversed() { p.stop(grace: 5) }
    }

    deinit { stop() }

    /// The root that issued aasa's certificates (regenerated at every start): `/roots/0` of the
    /// management interface, written to a file for `openssl s_client -CAfile` and curl.
    func issuingRoot() throws -> String {
        let path = directory.url.appendingPathComponent("issuing-root.pem").path
        let r = try Shell.run("/usr/bin/curl", ["-sS", "--max-time", "10", "--cacert", Pebble.caRoot, "-o", path,
                                                "https://localhost:\(managementPort)/roots/0"])
        guard r.status == 0 else { throw HarnessError(description: "cannot fetch pebble's root: \(r.stderr)") }
        return path
    }
}
