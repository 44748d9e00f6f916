import AASACore
@testable import AASAServer
@testable import AASATransport
import Testing

/// The pure parts of development mode, without a server.
@Suite struct DevelopmentModeTests {
    private func snapshot(_ names: [String]) -> SiteSnapshot {
        let sites = names.map { name in
            Site(name: SiteName(name)!, folder: "config/\(name)", files: [
                SiteFile(kind: .aasa, path: "config/\(name)/apple-app-site-association", served: nil,
                         newest: AssociationFile(kind: .aasa, #"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#)),
            ])
        }
        return SiteSnapshot(sites: sites, certificates: .empty)
    }

    @Test func theUnknownHostMessageListsTheConfiguredHosts() {
        let text = DevelopmentMode.unknownHostMessage(host: "exmaple.com", snapshot: snapshot(["example.com", "*.example.org"]))
        #expect(text.hasPrefix("unknown host exmaple.com: no folder in the config directory serves it.\n"))
        #expect(text.contains("\n  example.com\n"))
        #expect(text.contains("\n  *.example.org (and example.org itself, unless it has its own folder)\n"))
    }

    @Test func theUnknownHostMessageSaysWhenThereAreNoSites() {
        #expect(DevelopmentMode.unknownHostMessage(host: "a.test", snapshot: snapshot([])).contains("no sites yet"))
    }

    @Test func theFirstRequestFetchesAPlainSiteThroughTheListenerTrustingTheCA() throws {
        let dev = DevelopmentMode(certificatesDirectory: "certs-dev")
        let https = try SocketAddress(parsing: "0.0.0.0:8443")
        #expect(dev.firstRequest(snapshot: snapshot(["*.example.org", "example.com"]), https: [https])
            == "curl --cacert certs-dev/ca/ca.pem --resolve example.com:8443:127.0.0.1 https://example.com:8443/.well-known/apple-app-site-association")
        // A wildcard site is fetched at its base name, as iOS fetches it.
        #expect(dev.firstRequest(snapshot: snapshot(["*.example.org"]), https: [https])?
            .contains("--resolve example.org:8443:127.0.0.1 https://example.org:8443/") == true)
        #expect(dev.firstRequest(snapshot: snapshot(["example.com"]), https: []) == nil)
    }
}
