import AASACore
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// What makes a start fail (docs/serving.md, "Start-up errors"). A reload keeps what was
/// loaded before when a directory vanishes; a start has nothing loaded before, so a typo in
/// `--config` or `--certs` must end the process instead of passing a balancer's health check
/// with nothing to serve.
enum StartupCheck {
    /// Before anything is read: the directories exist, can be listed, and `--config` is not a
    /// site folder given by mistake. Nil when the start may go on.
    static func directories(_ configuration: ServerConfiguration) -> String? {
        let config = configuration.configDirectory
        let entries: [DirectoryListing.Entry]
        do {
            entries = try DirectoryListing.entries(in: config, sorted: false)
        } catch {
            return "config: cannot read --config \(config): \(String(cString: strerror(error.errno))); give the folder that holds one folder per site"
        }
        let siteFiles = AssociationFileKind.allCases.map(\.fileName).filter { name in entries.contains { $0.name == name } }
        if !siteFiles.isEmpty {
            return "config: --config \(config) is itself a site folder (it holds \(siteFiles.joined(separator: ", "))): "
                + "give its parent, whose folders are named after the sites' hosts"
        }
        guard configuration.servesHTTPS, let certs = configuration.certsDirectory, !configuration.dev else { return nil }
        if configuration.acme != nil, !DirectoryListing.isDirectory(certs) {
            // ACME writes its account and certificates there: made on first start.
            if mkdir(certs, 0o755) != 0, errno != EEXIST {
                return "certs: cannot create --certs \(certs) for ACME: \(String(cString: strerror(errno)))"
            }
        }
        do {
            try DirectoryListing.checkListable(certs)
        } catch {
            return "certs: cannot read --certs \(certs): \(String(cString: strerror(error.errno)))"
        }
        return nil
    }

    /// After the first load: a config with no site, or HTTPS listeners with no certificate to
    /// present, serve nothing — unless sites or certificates come by themselves.
    static func loaded(_ snapshot: SiteSnapshot, _ configuration: ServerConfiguration) -> String? {
        guard !configuration.mayStartEmpty else { return nil }
        if snapshot.summary.sites == 0 {
            return "config: no site in --config \(configuration.configDirectory): a site is a folder named after its host "
                + "(example.com, *.example.org) holding apple-app-site-association or another association file"
        }
        if configuration.servesHTTPS, let certs = configuration.certsDirectory, snapshot.certificates.certificates.isEmpty {
            return "certs: no usable certificate in --certs \(certs) for the HTTPS listeners (NAME.crt + NAME.key, "
                + "NAME/fullchain.pem + NAME/privkey.pem, or NAME/tls.crt + NAME/tls.key, with DNS names; the lines above name each file skipped and why)"
        }
        return nil
    }
}
