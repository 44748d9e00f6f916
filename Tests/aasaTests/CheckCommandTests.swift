import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"
private let app = "ABCDE12345.com.example.app"

/// `aasa check` against our own `aasa serve` on loopback (the test CA passed with --cacert), a
/// scripted origin behind haproxy's TLS for what the server never sends, and a scripted CDN.
@Suite(.serialized) struct CheckCommandTests {
    /// Runs `aasa check HOST` against `port` on loopback, trusting the test CA, without the CDN
    /// unless `cdn` names a scripted one.
    private func check(_ host: String = "example.com", port: Int, cdn: ScriptedServer? = nil,
                       _ extra: [String] = []) throws -> CommandResult {
        var args = ["check", host, "--connect", "127.0.0.1:\(port)", "--cacert", TestCertificates.caFile]
        args += cdn.map { ["--cdn-base", "http://127.0.0.1:\($0.port)"] } ?? ["--no-cdn"]
        return try AASABinary.run(args + extra)
    }

    /// The `status: message` of one check in the text output.
    private func line(_ r: CommandResult, _ name: String, host: String = "example.com") -> String {
        r.stdout.split(separator: "\n").first { $0.hasPrefix("\(host): \(name): ") }.map { String($0.dropFirst("\(host): \(name): ".count)) } ?? "(no \(name) line)\n\(r.stdout)"
    }

    /// An HTTPS origin for example.com that answers the well-known path with `reply`.
    private func scriptedOrigin(_ reply: [UInt8], legacy: [UInt8]? = nil) throws -> (ScriptedServer, TLSFront) {
        var routes = [wellKnown: reply]
        if let legacy { routes["/apple-app-site-association"] = legacy }
        let origin = try ScriptedServer(routes: routes)
        return (origin, try TLSFront(backend: origin.port, certificatePEM: try TestCertificates.sitesPEM))
    }

    @Test func aWellServedHostPassesEveryCheck() throws {
        let server = try ServerProcess()
        let cdn = try ScriptedServer(routes: ["/a/v1/example.com": ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom)])
        let r = try check(port: server.https, cdn: cdn, ["--app", app])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 9)
        #expect(lines.dropLast().map { $0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces) } == ["resolve", "tls", "status", "content-type", "size", "validate", "app", "cdn"])
        #expect(lines.dropLast().allSatisfy { $0.contains(": pass: ") })
        #expect(line(r, "status") == "pass: 200 OK for GET \(wellKnown) as AASA-Bot/1.0.0")
        #expect(line(r, "tls").hasPrefix("pass: TLSv1.3, certificate verified for example.com, valid until 20"))
        #expect(line(r, "size") == "pass: \(exampleCom.utf8.count) bytes (limit 131072)")
        #expect(line(r, "app") == "pass: \(app) is listed for applinks (also webcredentials)")
        #expect(line(r, "cdn") == "pass: the CDN serves the same file as the origin")
        #expect(lines.last == "0 failed, 0 warnings in 1 host")
        // What the CDN and the origin were sent.
        #expect(cdn.requests.first?.hasPrefix("GET /a/v1/example.com HTTP/1.1\r\n") == true)
        #expect(server.accessLog.contains("AASA-Bot/1.0.0"))
    }

    @Test func writesJSONInTheSpecShape() throws {
        let server = try ServerProcess()
        let cdn = try ScriptedServer(routes: ["/a/v1/example.com": ScriptedServer.response("200 OK", body: exampleCom)])
        let r = try check(port: server.https, cdn: cdn, ["--format", "json"])
        #expect(r.status == 0)
        let hosts = try #require(try r.json()["hosts"] as? [[String: Any]])
        let host = try #require(hosts.first)
        #expect(host["host"] as? String == "example.com")
        #expect(host["url"] as? String == "https://example.com\(wellKnown)")
        #expect(host["ok"] as? Bool == true)
        let checks = try #require(host["checks"] as? [[String: Any]])
        #expect(checks.map { $0["name"] as? String } == ["resolve", "tls", "status", "content-type", "size", "validate", "app", "cdn"])
        #expect(checks[6]["status"] as? String == "skip", "no --app")
        #expect((host["diagnostics"] as? [Any])?.isEmpty == true)
        let cdnJSON = try #require(host["cdn"] as? [String: Any])
        #expect(cdnJSON["status"] as? Int == 200)
        #expect(cdnJSON["failureReason"] is NSNull)
        #expect(cdnJSON["sameAsOrigin"] as? Bool == true)
    }

    @Test func hostsAreCheckedTogetherAndReportedInOrder() throws {
        let server = try ServerProcess()
        let r = try AASABinary.run(["check", "www.example.com", "example.com", "--connect", "127.0.0.1:\(server.https)",
                                    "--cacert", TestCertificates.caFile, "--no-cdn"])
        #expect(r.status == 0, "\(r.stdout)")
        let hosts = r.stdout.split(separator: "\n").dropLast().map { $0.prefix { $0 != ":" } }
        #expect(hosts == Array(repeating: "www.example.com", count: 8) + Array(repeating: "example.com", count: 8))
        #expect(r.stdout.hasSuffix("0 failed, 0 warnings in 2 hosts\n"))
    }

    @Test func aRedirectFailsAndNamesItsLocation() throws {
        let (_, front) = try scriptedOrigin(ScriptedServer.response("301 Moved Permanently", ["Location: https://www.example.com\(wellKnown)"]))
        let r = try check(port: front.port)
        #expect(r.status == 1)
        #expect(line(r, "tls").hasPrefix("pass: "))
        #expect(line(r, "status") == "fail: the file is behind a 301 Moved Permanently to https://www.example.com\(wellKnown): serve it on example.com itself; Apple's CDN follows no redirect (/apple-app-site-association too: 404 Not Found)")
        #expect(line(r, "content-type") == "skip: not run: status failed")
        #expect(line(r, "app") == "skip: not run: status failed")
    }

    @Test func aMissingFileFailsAndTheLegacyLocationIsAWarning() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom])
        let missing = try check("www.example.com", port: server.https)
        #expect(missing.status == 1)
        #expect(line(missing, "status", host: "www.example.com") == "fail: 404 Not Found for GET \(wellKnown) (the server says \"unknown host\"): serve the file at \(wellKnown) on www.example.com (/apple-app-site-association too: 404 Not Found)")

        let (_, front) = try scriptedOrigin(ScriptedServer.response("404 Not Found"),
                                            legacy: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom))
        let legacy = try check(port: front.port, ["--format", "json"])
        #expect(legacy.status == 0, "a warning is not a failure: \(legacy.stdout)")
        let host = try #require((try legacy.json()["hosts"] as? [[String: Any]])?.first)
        #expect(host["url"] as? String == "https://example.com/apple-app-site-association")
        let status = try #require((host["checks"] as? [[String: Any]])?[2])
        #expect(status["status"] as? String == "warn")
        #expect((status["message"] as? String)?.contains("only at the legacy /apple-app-site-association (200): move it to \(wellKnown)") == true)
    }

    @Test func aFileTheServerRefusedIsReportedAsRefusedWithTheServersReasonNotAsMissing() throws {
        let rejected = #"{"applinks": {"details": [{"appIDs": ["ABC.x"], "components": [{"/": "/buy/*"}]}]}}"#
        let server = try ServerProcess(sites: ["example.com": rejected, "*.example.org": wildcardOrg])
        let r = try check(port: server.https)
        #expect(r.status == 1)
        let status = line(r, "status")
        #expect(status.hasPrefix("fail: 404 Not Found for GET \(wellKnown) (the server says \"this site's apple-app-site-association has errors and is not served; first: 1:"), "\(status)")
        #expect(status.contains("[invalid-app-id]"), "\(status)")
        #expect(status.contains("the server has the file but refuses to serve it: fix what it reports"), "\(status)")
        #expect(!status.contains("serve the file at"), "\(status)")
    }

    @Test func aLowerCaseTeamIDIsListedOnlyAsWrittenAndTheWarningSaysSo() throws {
        let lower = #"{"applinks": {"details": [{"appIDs": ["abcde12345.com.acme.shop"], "components": [{"/": "/buy/*"}]}]}}"#
        let (_, front) = try scriptedOrigin(ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: lower))
        let r = try check(port: front.port, ["--app", "ABCDE12345.com.acme.shop", "--app", "abcde12345.com.acme.shop"])
        #expect(r.status == 1)
        #expect(line(r, "validate").contains("Whether iOS ignores case when it compares app IDs is not documented"), "\(r.stdout)")
        #expect(line(r, "app").hasPrefix("fail: ABCDE12345.com.acme.shop is not listed for applinks; abcde12345.com.acme.shop is listed for applinks"), "\(r.stdout)")
    }

    @Test func aFailingStatusQuotesTheFirstLineOfItsBodyEscapedAndCut() throws {
        let body = "\n\u{1b}[2J" + String(repeating: "a", count: 300) + "\nsecond line\n"
        let (_, front) = try scriptedOrigin(ScriptedServer.response("404 Not Found", ["Content-Type: text/plain"], body: body))
        let r = try check(port: front.port, ["--format", "json"])
        #expect(r.status == 1)
        let host = try #require((try r.json()["hosts"] as? [[String: Any]])?.first)
        let message = try #require((host["checks"] as? [[String: Any]])?[2]["message"] as? String)
        let quoted = "\\u{1b}[2J" + String(repeating: "a", count: 196) + "…"
        #expect(message.hasPrefix("404 Not Found for GET \(wellKnown) (the server says \"\(quoted)\"): serve the file at \(wellKnown) on example.com"), "\(message)")
        #expect(!message.contains("second line"))
        // An HTML page is not quoted.
        let (_, page) = try scriptedOrigin(ScriptedServer.response("404 Not Found", ["Content-Type: text/html"], body: "<html>nope</html>"))
        #expect(line(try check(port: page.port), "status").hasPrefix("fail: 404 Not Found for GET \(wellKnown): serve the file"))
    }

    @Test func anHTMLPageFailsContentTypeAndValidation() throws {
        let (_, front) = try scriptedOrigin(ScriptedServer.response("200 OK", ["Content-Type: text/html; charset=utf-8"], body: "<!DOCTYPE html><html><body>app</body></html>"))
        let r = try check(port: front.port)
        #expect(r.status == 1)
        #expect(line(r, "content-type").hasPrefix("fail: the body is an HTML page (Content-Type: text/html; charset=utf-8), not the file"))
        #expect(line(r, "validate").hasPrefix("fail: "))
    }

    @Test func anotherContentTypeIsAWarning() throws {
        let (_, front) = try scriptedOrigin(ScriptedServer.response("200 OK", ["Content-Type: application/octet-stream"], body: exampleCom))
        let r = try check(port: front.port)
        #expect(r.status == 0)
        #expect(line(r, "content-type") == "warn: Content-Type: application/octet-stream: send application/json (devices are lenient; some proxies and validators are not)")
        #expect(r.stdout.hasSuffix("0 failed, 1 warning in 1 host\n"))
    }

    @Test func aFileOver128KBFailsSize() throws {
        let big = #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": [{"/": "/x", "comment": ""# + String(repeating: "a", count: 140_000) + #""}]}]}}"#
        let (_, front) = try scriptedOrigin(ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: big))
        let r = try check(port: front.port)
        #expect(r.status == 1)
        #expect(line(r, "size") == "fail: \(big.utf8.count) bytes: over the 131072-byte limit (128 KB) after which iOS stops reading: shrink the file (fewer paths, broader components)")
        // A device reads no further than the limit: the body is not validated.
        #expect(line(r, "validate") == "skip: not run: size failed")
    }

    @Test func aResponseOverTheReadLimitStopsThereAndFailsSize() throws {
        let huge = String(repeating: " ", count: 1024 * 1024 + 1)
        let (_, front) = try scriptedOrigin(ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: huge))
        let r = try check(port: front.port)
        #expect(r.status == 1)
        #expect(line(r, "status").hasPrefix("pass: 200 OK"))
        #expect(line(r, "size") == "fail: over 1048576 bytes (reading stopped there); iOS stops after 131072 bytes (128 KB): shrink the file")
        #expect(line(r, "validate") == "skip: not run: size failed")
    }

    @Test func invalidJSONIsReportedWithItsPosition() throws {
        let broken = "{\n  \"applinks\": {\n    \"details\": [\n      {\"appIDs\": [\"\(app)\"]}\n    ]\n  \n}\n"
        let (_, front) = try scriptedOrigin(ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: broken))
        let r = try check(port: front.port)
        #expect(r.status == 1)
        let validate = line(r, "validate")
        #expect(validate.hasPrefix("fail: 1 error, 0 warnings; first: 8:1: "), "\(validate)")
        // Each finding on a line of its own right after the validate line, compiler style.
        let lines = r.stdout.split(separator: "\n").map(String.init)
        let at = try #require(lines.firstIndex { $0.hasPrefix("example.com: validate: ") })
        #expect(lines[at + 1].hasPrefix("https://example.com\(wellKnown):8:1: error: "), "\(r.stdout)")
        #expect(lines[at + 1].hasSuffix("]"), "\(r.stdout)")
        #expect(lines[at + 2].hasPrefix("example.com: app: "), "\(r.stdout)")
        let json = try check(port: front.port, ["--format", "json"])
        let diagnostic = try #require(((try json.json()["hosts"] as? [[String: Any]])?.first?["diagnostics"] as? [[String: Any]])?.first)
        #expect(diagnostic["line"] as? Int == 8)
        #expect(diagnostic["column"] as? Int == 1)
        #expect(diagnostic["severity"] as? String == "error")
    }

    /// Apple's CDN gets nothing from a host whose chain does not verify: the checks after
    /// `tls` are skipped, and say what a fetch without verification found.
    @Test func anUntrustedChainFailsTLSAndSkipsTheRestSayingWhatTheUnverifiedFetchFound() throws {
        let server = try ServerProcess()
        let r = try AASABinary.run(["check", "example.com", "--connect", "127.0.0.1:\(server.https)", "--no-cdn"])
        #expect(r.status == 1)
        #expect(line(r, "tls") == "fail: TLSv1.3, but the certificate does not verify for example.com: unable to get local issuer certificate: serve the whole chain (leaf and intermediates) from a CA in the system trust store; Apple's CDN trusts no other")
        let skipped = "skip: not run: tls failed (Apple's CDN gets nothing from a host whose certificate does not verify); without verification: "
        #expect(line(r, "status") == skipped + "pass: 200 OK for GET \(wellKnown) as AASA-Bot/1.0.0")
        #expect(line(r, "content-type").hasPrefix(skipped + "pass: application/json"))
        #expect(line(r, "size").hasPrefix(skipped + "pass: "))
        #expect(line(r, "validate").hasPrefix(skipped + "pass: valid"))
    }

    @Test func anExpiredCertificateFailsTLS() throws {
        let expired = try TestCertificates.issue(commonName: "example.com", names: "DNS:example.com", days: -1)
        let origin = try ScriptedServer(routes: [wellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom)])
        let front = try TLSFront(backend: origin.port, certificatePEM: expired)
        let r = try check(port: front.port)
        #expect(r.status == 1)
        #expect(line(r, "tls").hasSuffix("but the certificate does not verify for example.com: certificate has expired: renew it"), "\(r.stdout)")
    }

    @Test func aCertificateThatSoonExpiresIsAWarning() throws {
        let soon = try TestCertificates.issue(commonName: "example.com", names: "DNS:example.com", days: 5)
        let origin = try ScriptedServer(routes: [wellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom)])
        let front = try TLSFront(backend: origin.port, certificatePEM: soon)
        let r = try check(port: front.port)
        #expect(r.status == 0)
        #expect(line(r, "tls").contains("but it expires in 4 days") || line(r, "tls").contains("but it expires in 5 days"), "\(r.stdout)")
        #expect(line(r, "tls").hasPrefix("warn: "))
    }

    @Test func aCertificateForAnotherNameFailsTLS() throws {
        let server = try ServerProcess()
        let r = try check("other.example.net", port: server.https)
        #expect(r.status == 1)
        #expect(line(r, "tls", host: "other.example.net") == "fail: TLSv1.3, but the certificate does not verify for other.example.net: hostname mismatch: the certificate's subjectAltName must name other.example.net")
    }

    @Test func aRefusedConnectionFailsTLSAndSkipsTheRest() throws {
        let port = try freePort()
        let r = try check(port: port)
        #expect(r.status == 1)
        #expect(line(r, "tls") == "fail: cannot connect to 127.0.0.1:\(port): Connection refused")
        #expect(line(r, "status") == "skip: not run: tls failed")
        #expect(line(r, "validate") == "skip: not run: tls failed")
    }

    @Test func aServerThatNeverAnswersTimesOut() throws {
        let silent = try ScriptedServer(silent: true)
        let start = Date()
        let r = try check(port: silent.port, ["--timeout", "1"])
        #expect(Date().timeIntervalSince(start) < 5)
        #expect(r.status == 1)
        #expect(line(r, "tls") == "fail: no TLS handshake with 127.0.0.1:\(silent.port) within 1 s")
    }

    @Test func aCDNThatRefusesIsAFailureQuotingAppleHeaders() throws {
        let server = try ServerProcess()
        let cdn = try ScriptedServer(routes: ["/a/v1/example.com": ScriptedServer.response("404 Not Found", [
            "Apple-Failure-Reason: SWCERR00101 Bad HTTP Response: 404 Not Found",
            #"Apple-Failure-Details: {"status":"404 Not Found"}"#,
        ])])
        let r = try check(port: server.https, cdn: cdn)
        #expect(r.status == 1)
        #expect(line(r, "cdn") == #"fail: the CDN answers 404 Not Found for http://127.0.0.1:\#(cdn.port)/a/v1/example.com: Apple-Failure-Reason: SWCERR00101 Bad HTTP Response: 404 Not Found, Apple-Failure-Details: {"status":"404 Not Found"}; the CDN has no valid copy: once the origin serves the file, the CDN fetches it again within about 24 hours"#)
        let json = try check(port: server.https, cdn: cdn, ["--format", "json"])
        let cdnJSON = try #require((try json.json()["hosts"] as? [[String: Any]])?.first?["cdn"] as? [String: Any])
        #expect(cdnJSON["status"] as? Int == 404)
        #expect(cdnJSON["failureReason"] as? String == "SWCERR00101 Bad HTTP Response: 404 Not Found")
        #expect(cdnJSON["sameAsOrigin"] is NSNull)
    }

    @Test func anOlderCDNCopyIsAWarningThatNamesWhatChanged() throws {
        let server = try ServerProcess()
        let older = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.old"], "components": [{"/": "/buy/*"}]}]}, "webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#
        let cdn = try ScriptedServer(routes: ["/a/v1/example.com": ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: older)])
        let r = try check(port: server.https, cdn: cdn, ["--format", "json"])
        #expect(r.status == 0, "a stale CDN is a warning")
        let host = try #require((try r.json()["hosts"] as? [[String: Any]])?.first)
        let cdnCheck = try #require((host["checks"] as? [[String: Any]])?.last)
        #expect(cdnCheck["status"] as? String == "warn")
        #expect(cdnCheck["message"] as? String == "the CDN still serves an older version: applinks: ABCDE12345.com.example.app added; applinks: ABCDE12345.com.example.old removed; it refreshes within about 24 hours, and a device reads it when the app is installed (reinstall to test)")
        #expect((host["cdn"] as? [String: Any])?["sameAsOrigin"] as? Bool == false)
    }

    @Test func anAppThatIsNotListedFails() throws {
        let server = try ServerProcess()
        let r = try check(port: server.https, ["--app", app, "--app", "ABCDE12345.com.example.missing"])
        #expect(r.status == 1)
        #expect(line(r, "app") == "fail: \(app) is listed for applinks (also webcredentials); ABCDE12345.com.example.missing is not listed for applinks (it lists \(app)): add ABCDE12345.com.example.missing to a details entry's appIDs")
    }

    @Test func connectsOverIPv6Loopback() throws {
        let server = try ServerProcess(extraArguments: ["--https", "[::1]:0"])
        let v6 = try #require(server.log.split(separator: "\n").first { $0.contains("listening https [::1]:") }.flatMap { Int($0.split(separator: ":").last!) })
        let r = try AASABinary.run(["check", "example.com", "--connect", "[::1]:\(v6)", "--cacert", TestCertificates.caFile, "--no-cdn"])
        #expect(r.status == 0, "\(r.stdout)")
        #expect(line(r, "resolve") == "pass: not resolved: connecting to [::1]:\(v6) instead (--connect); SNI and Host stay example.com")
        #expect(line(r, "validate").hasPrefix("pass: "))
    }

    @Test func aURLInsteadOfAHostIsBadUsage() throws {
        let r = try AASABinary.run(["check", "https://example.com/"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("give a host name only"))
        #expect(try AASABinary.run(["check", "example.com", "--cdn-base", "ftp://x"]).status == 2)
    }
}
