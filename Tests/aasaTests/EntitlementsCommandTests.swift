import Foundation
import Testing

private let app = "ABCDE12345.com.example.app"

private func plist(_ domains: [String]) -> String {
    """
    <?xml version="1.0" encoding="UTF-8"?>
    <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
    <plist version="1.0">
    <dict>
    \t<key>com.apple.developer.associated-domains</key>
    \t<array>
    \(domains.map { "\t\t<string>\($0)</string>" }.joined(separator: "\n"))
    \t</array>
    </dict>
    </plist>
    """
}

/// A config directory with one site per result: example.com and the wildcard *.example.org
/// back the app, bad.example.com is broken, other.example.com lists another app.
private func config() throws -> (TemporaryDirectory, String) {
    let dir = try TemporaryDirectory()
    try dir.write("config/example.com/apple-app-site-association", exampleCom)
    try dir.write("config/*.example.org/apple-app-site-association", #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": [{"/": "/*"}]}]}}"#)
    try dir.write("config/bad.example.com/apple-app-site-association", #"{"applinks": {"details": [}}"#)
    try dir.write("config/other.example.com/apple-app-site-association", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.other"], "components": [{"/": "/*"}]}]}}"#)
    return (dir, dir.url.appendingPathComponent("config").path)
}

private let everyResult = [
    "applinks:example.com",
    "webcredentials:example.com?mode=developer",
    "applinks:*.example.org",
    "applinks:example.com:8443",
    "applinks:missing.example.net",
    "applinks:bad.example.com",
    "activitycontinuation:example.com",
    "applinks:other.example.com",
]

@Suite struct EntitlementsCommandTests {
    @Test func eachEntitlementOfAPlistGetsItsResult() throws {
        let (dir, configPath) = try config()
        let file = try dir.write("App.entitlements", plist(everyResult))
        let r = try AASABinary.run(["entitlements", file, "--app", app, "--config", configPath])
        #expect(r.status == 1, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == everyResult.count)
        #expect(lines[0] == "applinks:example.com: ok: \(configPath)/example.com/apple-app-site-association lists \(app) in applinks.details[0]")
        #expect(lines[1] == "webcredentials:example.com?mode=developer: ok: \(configPath)/example.com/apple-app-site-association lists \(app) in webcredentials.apps")
        #expect(lines[2] == "applinks:*.example.org: ok: \(configPath)/*.example.org/apple-app-site-association lists \(app) in applinks.details[0]",
                "the wildcard folder serves example.org itself, where iOS fetches *.example.org's file")
        #expect(lines[3].hasPrefix("applinks:example.com:8443: invalid-entitlement: a port is not allowed for applinks"))
        #expect(lines[4] == "applinks:missing.example.net: no-file: no site in \(configPath) serves missing.example.net: create \(configPath)/missing.example.net/apple-app-site-association")
        #expect(lines[5].hasPrefix("applinks:bad.example.com: invalid-file: \(configPath)/bad.example.com/apple-app-site-association:1:"))
        #expect(lines[6].hasPrefix("activitycontinuation:example.com: no-service: "))
        #expect(lines[7] == "applinks:other.example.com: app-not-listed: \(app) is not in \(configPath)/other.example.com/apple-app-site-association's applinks (it lists ABCDE12345.com.example.other): add it to a details entry's appIDs")
    }

    @Test func writesJSONInTheSpecShape() throws {
        let (dir, configPath) = try config()
        defer { withExtendedLifetime(dir) {} }
        let r = try AASABinary.run(["entitlements", "--entitlement", "applinks:*.example.org?mode=developer", "--entitlement", "appclips:*.example.com",
                                    "--app", app, "--config", configPath, "--format", "json"])
        #expect(r.status == 1)
        let json = try r.json()
        #expect(json["app"] as? String == app)
        let results = try #require(json["results"] as? [[String: Any]])
        #expect(results.count == 2)
        #expect(results[0]["entitlement"] as? String == "applinks:*.example.org?mode=developer")
        #expect(results[0]["service"] as? String == "applinks")
        #expect(results[0]["host"] as? String == "*.example.org")
        #expect(results[0]["mode"] as? String == "developer")
        #expect(results[0]["result"] as? String == "ok")
        #expect(results[1]["result"] as? String == "invalid-entitlement")
        #expect(results[1]["service"] as? String == "appclips")
        #expect(results[1]["mode"] is NSNull)
        #expect((results[1]["message"] as? String)?.contains("appclips does not support wildcards") == true)
    }

    @Test func readsTheEntitlementsInsideASignedProvisioningProfile() throws {
        let (dir, configPath) = try config()
        let inner = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><dict><key>Name</key><string>Dev</string><key>Entitlements</key><dict><key>com.apple.developer.associated-domains</key><array><string>applinks:example.com</string><string>webcredentials:example.com</string></array></dict></dict></plist>\n"
        try dir.write("profile.plist", inner)
        // A self-signed signer, as in a test: the profile's signature is not what is checked.
        let script = """
        set -e
        cd '\(dir.url.path)'
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout signer.key -subj '/CN=test signer' -days 2 -out signer.pem 2>/dev/null
        openssl cms -sign -in profile.plist -signer signer.pem -inkey signer.key -outform DER -nodetach -binary -out App.mobileprovision
        """
        let made = try Shell.run("/bin/bash", ["-c", script])
        #expect(made.status == 0, "\(made.stderr)")
        let r = try AASABinary.run(["entitlements", dir.url.appendingPathComponent("App.mobileprovision").path, "--app", app, "--config", configPath])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout.split(separator: "\n").map { $0.split(separator: ":").prefix(3).joined(separator: ":") } == ["applinks:example.com: ok", "webcredentials:example.com: ok"])
    }

    @Test func checksTheLiveHostsLikeCheckWithoutTheCDN() throws {
        let server = try ServerProcess()
        let r = try AASABinary.run(["entitlements", "--entitlement", "applinks:example.com", "--entitlement", "webcredentials:www.example.com",
                                    "--entitlement", "applinks:unknown.example.net", "--app", app, "--live",
                                    "--connect", "127.0.0.1:\(server.https)", "--cacert", TestCertificates.caFile])
        #expect(r.status == 1)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3)
        #expect(lines[0] == "applinks:example.com: ok: https://example.com/.well-known/apple-app-site-association lists \(app) in applinks.details[0]")
        #expect(lines[1].hasPrefix("webcredentials:www.example.com: no-service: https://www.example.com/.well-known/apple-app-site-association has no webcredentials section"))
        // A certificate a device refuses: the host cannot be reached over TLS, which says nothing of the file.
        #expect(lines[2].hasPrefix("applinks:unknown.example.net: unreachable: https://unknown.example.net/.well-known/apple-app-site-association cannot be reached (tls): tls: "), "\(lines[2])")
        #expect(lines[2].contains("hostname mismatch"))
        #expect(!server.accessLog.contains("/a/v1/"), "no CDN")
    }

    @Test func developerModeAcceptsAValidCertificateTheSystemDoesNotTrust() throws {
        let server = try ServerProcess()
        let r = try AASABinary.run(["entitlements", "--entitlement", "applinks:example.com?mode=developer", "--entitlement", "applinks:example.com",
                                    "--app", app, "--live", "--connect", "127.0.0.1:\(server.https)"])
        #expect(r.status == 1)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("applinks:example.com?mode=developer: ok: ") == true, "\(r.stdout)")
        #expect(lines.last?.hasPrefix("applinks:example.com: unreachable: https://example.com/.well-known/apple-app-site-association cannot be reached (tls): tls: ") == true, "\(r.stdout)")
        #expect(lines.last?.contains("unable to get local issuer certificate") == true)
    }

    @Test func aHostThatCannotBeReachedIsUnreachableNotMissingItsFile() throws {
        // Nothing listens on this port: connection refused.
        let closed = try freePort()
        let refused = try AASABinary.run(["entitlements", "--entitlement", "applinks:example.com", "--app", app, "--live",
                                          "--connect", "127.0.0.1:\(closed)", "--format", "json"])
        #expect(refused.status == 1)
        let result = try #require((try refused.json()["results"] as? [[String: Any]])?.first)
        #expect(result["result"] as? String == "unreachable", "\(refused.stdout)")
        #expect((result["message"] as? String)?.contains("cannot be reached (connect)") == true, "\(refused.stdout)")
        // A name that does not resolve (RFC 6761: .invalid never does).
        let dns = try AASABinary.run(["entitlements", "--entitlement", "applinks:nowhere.invalid", "--app", app, "--live"])
        #expect(dns.status == 1)
        #expect(dns.stdout.hasPrefix("applinks:nowhere.invalid: unreachable: https://nowhere.invalid/.well-known/apple-app-site-association cannot be reached (dns): resolve: "), "\(dns.stdout)")
    }

    @Test func aHostThatAnswersWithNoUsableHTTPResponseHasNoFileAndIsNotUnreachable() throws {
        // A response head that never ends: the host was reached and answered, with nothing usable.
        let endless = Array("HTTP/1.1 200 OK\r\n".utf8) + Array(repeating: Array("X-Filler: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n".utf8), count: 1500).flatMap { $0 }
        let origin = try ScriptedServer { _ in endless }
        let front = try TLSFront(backend: origin.port, certificatePEM: try TestCertificates.sitesPEM)
        let r = try AASABinary.run(["entitlements", "--entitlement", "applinks:example.com", "--app", app, "--live",
                                    "--connect", "127.0.0.1:\(front.port)", "--cacert", TestCertificates.caFile])
        #expect(r.status == 1)
        #expect(r.stdout.hasPrefix("applinks:example.com: no-file: https://example.com/.well-known/apple-app-site-association: status: "), "\(r.stdout)")
        #expect(r.stdout.contains("is larger than 65536 bytes"), "\(r.stdout)")
        #expect(!r.stdout.contains("(connect)"), "\(r.stdout)")
    }

    @Test func badUsageAndUnreadableFilesExitWith2() throws {
        let (dir, configPath) = try config()
        #expect(try AASABinary.run(["entitlements", "--entitlement", "applinks:example.com", "--app", app]).status == 2, "no --config or --live")
        #expect(try AASABinary.run(["entitlements", "--entitlement", "applinks:example.com", "--app", app, "--config", configPath, "--live"]).status == 2)
        let missing = try AASABinary.run(["entitlements", dir.url.appendingPathComponent("none.entitlements").path, "--app", app, "--config", configPath])
        #expect(missing.status == 2)
        let garbage = try dir.write("bad.entitlements", "<plist><dict><key>x</key></dict></plist>")
        let r = try AASABinary.run(["entitlements", garbage, "--app", app, "--config", configPath])
        #expect(r.status == 2)
        #expect(r.stderr.contains("not a property list this tool reads"))
        let noKey = try dir.write("none.entitlements", plist([]).replacingOccurrences(of: "com.apple.developer.associated-domains", with: "aps-environment"))
        let absent = try AASABinary.run(["entitlements", noKey, "--app", app, "--config", configPath])
        #expect(absent.status == 2)
        #expect(absent.stderr.contains("no com.apple.developer.associated-domains key"))
    }
}
