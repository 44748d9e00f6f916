import AASACore
import AASAServer
import ArgumentParser
import AASACommands

struct DevCertsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-certs",
        abstract: "Make the development CA and a certificate for every site (what serve --dev does at start).",
        discussion: """
        Creates OUT/ca/ca.pem and ca.key when there is no CA, then issues OUT/aasa-dev.crt and \
        aasa-dev.key for localhost, 127.0.0.1, ::1, every site of --config and every --name, unless \
        the current one already covers them and is not near its end. \
        A wildcard site *.example.org gets both *.example.org and example.org; a TLS wildcard covers \
        one level only, so give deeper hosts with --name. Keys are written with mode 0600.
        """
    )

    @Option(help: ArgumentHelp("Config directory whose sites the certificate covers (default: ./config).", valueName: "dir"))
    var config: String?

    @Option(help: ArgumentHelp("Output directory.", valueName: "dir"))
    var out: String = "certs-dev"

    @Option(help: "Another host name to cover; repeatable.")
    var name: [String] = []

    func run() throws {
        var sites: [SiteName] = []
        // A --config that is not there is a mistake to report; a missing default ./config only
        // means "no sites" (a certificate for localhost and the --name hosts).
        let directory = config ?? "./config"
        if InputFiles.isDirectory(directory) {
            do {
                sites = try InputFiles.sites(in: directory).map(\.name)
            } catch {
                FileHandleOutput.standardError.write("aasa dev-certs: \(error)\n")
                throw ExitCode(2)
            }
        } else if let config {
            FileHandleOutput.standardError.write("aasa dev-certs: --config \(config): not a directory\n")
            throw ExitCode(2)
        } else {
            FileHandleOutput.standardError.write("aasa dev-certs: no ./config directory: covering only localhost and --name hosts\n")
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
