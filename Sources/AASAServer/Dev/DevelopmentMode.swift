import AASACore
#if canImport(Glibc)
import Glibc
#endif

/// What `--dev` adds to a running server: the certificates it manages, the fetch log, and the
/// guidance printed at start.
final class DevelopmentMode: Sendable {
    let certificates: DevelopmentCertificates
    let fetches = FetchLog()

    init(certificatesDirectory: String) {
        certificates = DevelopmentCertificates(directory: certificatesDirectory)
    }

    /// Makes or renews the certificates for the sites in `configDirectory`.
    func ensureCertificates(configDirectory: String, log: Log) {
        let sites = ((try? DirectoryListing.names(in: configDirectory)) ?? []).compactMap { name -> SiteName? in
            DirectoryListing.isDirectory(configDirectory + "/" + name) ? SiteName(name) : nil
        }
        do {
            switch try certificates.ensure(names: DevelopmentCertificates.dnsNames(for: sites)) {
            case .unchanged:
                break
            case .issued(let createdCA):
                if createdCA { log.info("dev: created a development CA in \(certificates.directory)/ca/") }
                log.info("dev: issued \(certificates.leafCertificatePath) for localhost, 127.0.0.1, ::1 and \(sites.count) sites")
            }
        } catch {
            log.error("dev: cannot make development certificates: \(error)")
        }
    }

    /// The text printed at start: entitlement lines per site and the device steps.
    func guidance(snapshot: SiteSnapshot, http: [SocketAddress], https: [SocketAddress]) -> String {
        var out = "\nDevelopment mode: for an iPhone or iPad that fetches straight from this machine.\n\n"
        out += "1. Entitlements to paste into Xcode (Signing & Capabilities > Associated Domains):\n"
        for site in snapshot.sites {
            for line in Entitlements.lines(for: site) { out += "     \(line)\n" }
            if site.state != .serving, let r = site.refusal {
                out += "     (\(site.name) is not served: \(site.path): \(r.message))\n"
            } else if site.state != .serving, let e = site.error {
                out += "     (\(site.name) is not served: \(site.path):\(e.line):\(e.column): \(e.message))\n"
            }
        }
        if snapshot.sites.isEmpty { out += "     (no sites in the config directory yet)\n" }
        out += "\n2. On the device:\n"
        out += "     - Settings > Privacy & Security > Developer Mode: on (restart when asked)\n"
        out += "     - Settings > Developer > Associated Domains Development: on\n"
        out += "     - install the development CA, then Settings > General > About > Certificate Trust Settings:\n"
        out += "       turn on full trust for \"aasa development CA\". Download it from:\n"
        for address in http {
            for host in DevelopmentMode.reachableHosts(address) { out += "         http://\(host):\(address.port)/ca.mobileconfig   (or /ca.pem)\n" }
        }
        if http.isEmpty { out += "         \(certificates.caCertificatePath) (no --http listener to download it from)\n" }
        out += "\n3. Point each domain at this machine (DNS or the device's network), so it reaches HTTPS port \(https.map { String($0.port) }.joined(separator: ", ")),\n"
        out += "   then install the app from Xcode; Settings > Developer > Universal Links > Diagnostics tests a URL.\n"
        if let address = http.first {
            out += "\nDashboard: http://\(address.family == .v6 ? "[\(address.host)]" : (address.host == "0.0.0.0" ? "localhost" : address.host)):\(address.port)/ (sites, recent fetches, a URL tester)\n"
        }
        return out + "\n"
    }

    /// The hosts a device can use for a listener: this machine's addresses when it listens on
    /// all of them, else the one it is bound to.
    static func reachableHosts(_ address: SocketAddress) -> [String] {
        switch address.host {
        case "0.0.0.0": return localAddresses()
        case "::": return localAddresses()
        default: return [address.family == .v6 ? "[\(address.host)]" : address.host]
        }
    }

    /// Non-loopback IPv4 addresses of this machine, or `localhost` when there are none.
    static func localAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return ["localhost"] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var p = list
        while let entry = p {
            defer { p = entry.pointee.ifa_next }
            guard let addr = entry.pointee.ifa_addr, addr.pointee.sa_family == sa_family_t(AF_INET) else { continue }
            var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            var sin = UnsafeRawPointer(addr).load(as: sockaddr_in.self)
            inet_ntop(AF_INET, &sin.sin_addr, &buffer, socklen_t(buffer.count))
            let text = String(decoding: buffer.prefix { $0 != 0 }.map(UInt8.init), as: UTF8.self)
            if !text.hasPrefix("127."), !out.contains(text) { out.append(text) }
        }
        return out.isEmpty ? ["localhost"] : out
    }
}
