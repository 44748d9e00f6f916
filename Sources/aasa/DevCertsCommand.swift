import AASACore
import AASAServer
import ArgumentParser

struct DevCertsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-certs",
        abstract: "Make the development CA and a certificate for every site (what serve --dev does at start).",
        discussion: """
        Creates OUT/ca/ca.pem and ca.key when there is no CA, then issues OUT/aasa-dev.crt and \
        aasa-dev.key for localhost, 127.0.0.1, ::1, every site of --config and every --name, unless \
        the current one already covers them and is not near its end. Keys are written with mode 0600.
        """
    )

    @Option(help: "Config directory whose sites the certificate covers (default ./config).")
    var config: String = "./config"

    @Option(help: "Output directory (default certs-dev).")
    var out: String = "certs-dev"

    @Option(help: "Another host name to cover; repeatable.")
    var name: [String] = []

    func run() throws {
        var sites: [SiteName] = []
        if InputFiles.isDirectory(config) {
            sites = try InputFiles.sites(in: config).map(\.name)
        }
        for n in name {
            guard let site = SiteName(n.lowercased()) else { throw ValidationError("--name \(n): not a host name") }
            sites.append(site)
        }
        let certificates = DevelopmentCertificates(directory: out)
        do {
            let outcome = try certificates.ensure(names: DevelopmentCertificates.dnsNames(for: sites))
            switch outcome {
            case .unchanged:
                FileHandleOutput.standardOutput.write("\(certificates.leafCertificatePath) already covers every name\n")
            case .issued(let createdCA):
                if createdCA { FileHandleOutput.standardOutput.write("created \(certificates.caCertificatePath)\n") }
                FileHandleOutput.standardOutput.write("issued \(certificates.leafCertificatePath) for \(DevelopmentCertificates.dnsNames(for: sites).joined(separator: ", ")), 127.0.0.1, ::1\n")
            }
        } catch {
            FileHandleOutput.standardError.write("aasa dev-certs: \(error)\n")
            throw ExitCode(1)
        }
    }
}
