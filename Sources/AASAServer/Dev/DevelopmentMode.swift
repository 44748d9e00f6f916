import AASACore
import AASATransport
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
    /// Whether a new leaf (or CA) was written.
    @discardableResult
    func ensureCertificates(configDirectory: String, log: Log) -> Bool {
        let sites = ((try? DirectoryListing.names(in: configDirectory)) ?? []).compactMap { name -> SiteName? in
            DirectoryListing.isDirectory(configDirectory + "/" + name) ? SiteName(name) : nil
        }
        do {
            switch try certificates.ensure(names: DevelopmentCertificates.dnsNames(for: sites)) {
            case .unchanged:
                return false
            case .issued(let createdCA):
                if createdCA { log.info("dev: created a development CA in \(certificates.directory)/ca/") }
                log.info("dev: issued \(certificates.leafCertificatePath) for localhost, 127.0.0.1, ::1 and \(sites.count) sites")
                return true
            }
        } catch {
            log.error("dev: cannot make development certificates: \(error)")
            return false
        }
    }

    /// Above this many sites the guidance lists only a summary and the first few, so the device
    /// steps stay on one screen; the dashboard and `/entitlements.txt` have the full list.
    static let guidanceSiteLimit = 5

    /// The text printed at start: entitlement lines per site, the device steps, and a first
    /// request to try from this machine.
    func guidance(snapshot: SiteSnapshot, http: [SocketAddress], https: [SocketAddress]) -> String {
        let dashboard = http.first.map { "http://\(DevelopmentMode.localHost($0)):\($0.port)/" }
        var out = "\nDevelopment mode: for an iPhone or iPad that fetches straight from this machine.\n\n"
        out += "1. Entitlements to paste into Xcode (Signing & Capabilities > Associated Domains):\n"
        let sites = snapshot.sites
        let notServed = sites.filter { $0.state != .serving }.sorted { $0.name < $1.name }
        let limit = DevelopmentMode.guidanceSiteLimit
        if sites.count > limit {
            let stale = sites.count { $0.state == .stale }
            out += "     \(sites.count) sites: \(sites.count - notServed.count) serving, \(stale) stale, \(notServed.count - stale) rejected. The first \(limit):\n"
        }
        for site in sites.sorted(by: { $0.name < $1.name }).prefix(limit) {
            for line in Entitlements.lines(for: site) { out += "     \(line)\n" }
        }
        if sites.count > limit {
            let full = dashboard.map { "the dashboard at \($0), or curl -s \($0)entitlements.txt" } ?? "GET /entitlements.txt on an --http listener"
            out += "     … full list: \(full)\n"
        }
        for site in notServed.prefix(limit) {
            if let r = site.refusal {
                out += "     (\(site.name) is not served: \(site.path): \(r.message))\n"
            } else if let e = site.error {
                out += "     (\(site.name) is not served: \(site.path):\(e.line):\(e.column): \(e.message))\n"
            }
        }
        if notServed.count > limit { out += "     (and \(notServed.count - limit) more sites with errors: see the dashboard)\n" }
        if sites.isEmpty { out += "     (no sites in the config directory yet)\n" }
        if let wildcard = sites.first(where: { $0.name.isWildcard })?.name {
            out += "   A wildcard folder \(wildcard) also serves \(wildcard.host), where iOS fetches the file for applinks:\(wildcard).\n"
            out += "   Its certificate covers one level (a.\(wildcard.host), not a.b.\(wildcard.host)): deeper hosts need a folder of their own.\n"
        }
        out += "\n2. On the device:\n"
        out += "     - Settings > Privacy & Security > Developer Mode: on (restart when asked)\n"
        out += "     - Settings > Developer > Associated Domains Development: on\n"
        out += "     - install the development CA, then Settings > General > About > Certificate Trust Settings:\n"
        out += "       turn on full trust for \"aasa development CA\". Download it from:\n"
        for address in http {
            for host in DevelopmentMode.reachableHosts(address) { out += "         http://\(host):\(address.port)/ca.mobileconfig   (or /ca.pem)\n" }
        }
        if http.isEmpty { out += "         \(certificates.caCertificatePath) (no --http listener to download it from)\n" }
        out += "\n3. Point each domain at this machine (DNS or the device's network). A device fetches port 443\n"
        out += "   (an entitlement carries no port)"
        if let port = https.first?.port, !https.contains(where: { $0.port == 443 }) {
            out += "; this server listens on \(port), so forward 443 to it, for example:\n"
            out += "       sudo iptables -t nat -A PREROUTING -p tcp --dport 443 -j REDIRECT --to-ports \(port)\n"
            out += "   or  sudo socat TCP-LISTEN:443,fork,reuseaddr TCP:127.0.0.1:\(port)\n"
            out += "   or  run this command as root with --https 0.0.0.0:443.\n"
        } else {
            out += ".\n"
        }
        out += "   Then install the app from Xcode; Settings > Developer > Universal Links > Diagnostics tests a URL.\n"
        if let command = firstRequest(snapshot: snapshot, https: https) {
            out += "\n   First, try it from this machine:\n       \(command)\n"
        }
        let android = sites.filter { $0.file(.assetLinks) != nil }.map(\.name.description).sorted()
        if !android.isEmpty {
            // Android's side of the same links (docs/serving.md, "Config directory"): what makes assetlinks.json count.
            out += "\nAndroid: \(android.prefix(3).joined(separator: ", "))\(android.count > 3 ? " and \(android.count - 3) more" : "") \(android.count == 1 ? "serves" : "serve") assetlinks.json.\n"
            out += "   The app's intent filters need android:autoVerify=\"true\" with these hosts; the fingerprint is the\n"
            out += "   SHA-256 of the app signing certificate (Play Console > App integrity, or `keytool -list -v -keystore KEYSTORE`).\n"
            out += "   Android verifies over HTTPS with a publicly trusted certificate: the development CA is not enough there.\n"
        }
        if let dashboard {
            out += "\nDashboard: \(dashboard) (sites and every file, recent fetches, a URL tester)\n"
        }
        return out + "\n"
    }

    /// A curl command that fetches a served site's file through the HTTPS listener, trusting the
    /// development CA: the quickest proof that names, certificate and file all line up.
    func firstRequest(snapshot: SiteSnapshot, https: [SocketAddress]) -> String? {
        guard let listener = https.first else { return nil }
        let sites = snapshot.sites.sorted { $0.name < $1.name }
        // A plain name reads best; a wildcard site is fetched at its base name, as iOS does.
        guard let site = sites.first(where: { $0.state != .rejected && !$0.name.isWildcard })
            ?? sites.first(where: { $0.state != .rejected }) else { return nil }
        let host = site.name.host
        let address: String
        switch listener.host {
        case "0.0.0.0": address = "127.0.0.1"
        case "::": address = "[::1]"
        default: address = listener.family == .v6 ? "[\(listener.host)]" : listener.host
        }
        return "curl --cacert \(certificates.caCertificatePath) --resolve \(host):\(listener.port):\(address) https://\(host):\(listener.port)/.well-known/apple-app-site-association"
    }

    /// The body of the 404 for a host that is not a configured site, in `--dev`: the hosts that
    /// are, so a typo or a missing folder is obvious. Pure, for the responder to use.
    static func unknownHostMessage(host: String, snapshot: SiteSnapshot) -> String {
        var out = "unknown host \(host): no folder in the config directory serves it.\n"
        let names = snapshot.sites.map(\.name).sorted()
        if names.isEmpty { return out + "The config directory has no sites yet: add a folder named after the host.\n" }
        out += "Configured hosts:\n"
        let shown = 50
        for name in names.prefix(shown) {
            out += name.isWildcard ? "  \(name) (and \(name.host) itself, unless it has its own folder)\n" : "  \(name)\n"
        }
        if names.count > shown { out += "  … and \(names.count - shown) more\n" }
        return out
    }

    /// How this machine itself reaches a listener.
    static func localHost(_ address: SocketAddress) -> String {
        if address.family == .v6 { return address.host == "::" ? "localhost" : "[\(address.host)]" }
        return address.host == "0.0.0.0" ? "localhost" : address.host
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
