import AASAServer
import AASACommands
import ArgumentParser
import AASATransport
import AASAClient

struct HealthCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "health",
        abstract: "Exit 0 when the admin listener's /healthz answers 200, else 1 (for HEALTHCHECK).",
        discussion: """
        The address defaults to AASA_ADMIN, else 127.0.0.1:9090. With the admin listener off \
        (AASA_ADMIN=off, as serve accepts) there is nothing to ask: exit 1 with a message. With \
        AASA_ADMIN_TLS set (serve's --admin-tls) or --tls, it asks over HTTPS, without checking the \
        certificate: it asks its own server, on this machine.
        """
    )

    @Option(help: "Admin listener ADDR:PORT (default: AASA_ADMIN, else 127.0.0.1:9090).")
    var admin: String?

    @Flag(help: "Ask over HTTPS (the admin listener of serve --admin-tls; also when AASA_ADMIN_TLS is set).")
    var tls = false

    func run() throws {
        let text = admin ?? Environment()[.admin] ?? "127.0.0.1:9090"
        // `serve` reads these as "no admin listener": then there is no /healthz to ask, and a
        // health check cannot pass (exit 1, as for a server that does not answer).
        if ServeCommand.adminOff.contains(text.lowercased()) {
            FileHandleOutput.standardError.write("aasa health: the admin listener is off (\(admin == nil ? ServeVariable.admin.rawValue : "--admin")=\(text)), so there is no /healthz to ask; give the server an --admin address to health-check it\n")
            throw ExitCode(1)
        }
        var address: SocketAddress
        do { address = try SocketAddress(parsing: text) } catch { throw ValidationError("\(admin == nil ? ServeVariable.admin.rawValue : "--admin"): \(error)") }
        // A server listening on every address is reached on loopback.
        if address.host == "0.0.0.0" { address = try! SocketAddress(parsing: "127.0.0.1:\(address.port)") }
        if address.host == "::" { address = try! SocketAddress(parsing: "[::1]:\(address.port)") }
        if tls || Environment()[.adminTLS] != nil {
            try checkOverTLS(address)
            return
        }
        switch HealthProbe.check(address) {
        case .success(200):
            FileHandleOutput.standardOutput.write("healthy\n")
        case .success(let status):
            FileHandleOutput.standardError.write("aasa health: /healthz answered \(status)\n")
            throw ExitCode(1)
        case .failure(let error):
            FileHandleOutput.standardError.write("aasa health: \(address): \(error)\n")
            throw ExitCode(1)
        }
    }

    /// `/healthz` over HTTPS: the certificate is not checked (the probe asks its own server on
    /// this machine, by address, whatever names the certificate holds).
    private func checkOverTLS(_ address: SocketAddress) throws {
        let configuration = HTTPSClient.Configuration(timeoutSeconds: 3, connectTo: [address], allowUnverifiedCertificate: true,
                                                      userAgent: "aasa-health")
        do {
            let client = try HTTPSClient(configuration)
            let response = try client.get(HTTPURL(isSecure: true, host: "localhost", port: address.port, target: "/healthz"))
            guard response.head.status == 200 else {
                FileHandleOutput.standardError.write("aasa health: /healthz answered \(response.head.status)\n")
                throw ExitCode(1)
            }
            FileHandleOutput.standardOutput.write("healthy\n")
        } catch let error as HTTPClientError {
            FileHandleOutput.standardError.write("aasa health: \(address): \(error.message)\n")
            throw ExitCode(1)
        }
    }
}
