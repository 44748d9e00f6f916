import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let aasaPath = "apple-app-site-association"
private let wellKnown = "/.well-known/apple-app-site-association"
private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// The admin listener's write API over real sockets (docs/platforms.md).
@Suite struct ServeWriteAPITests {
    static let token = "s3cret-for-tests-0123456789"

    /// A server with the API on (token `backend:TOKEN`).
    static func server(sites: [String: String] = ["example.com": exampleCom], extra: [String] = [],
                       launcher: [String] = [], reuse: TemporaryDirectory? = nil, store: String? = nil) throws -> ServerProcess {
        let tokens = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-tokens-\(UUID().uuidString)")
        try "# the platform's backend\nbackend:\(token)\n".write(to: tokens, atomically: true, encoding: .utf8)
        return try ServerProcess(sites: sites, extraArguments: ["--admin-token-file", tokens.path] + extra, launcher: launcher, reuse: reuse,
                                 store: store)
    }

    /// One request to the admin listener: status, headers and body as text.
    @discardableResult
    static func call(_ server: ServerProcess, _ method: String, _ path: String, body: [UInt8] = [], token: String? = ServeWriteAPITests.token,
                     headers: [String] = []) throws -> String {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for h in headers { head += h + "\r\n" }
        if method == "PUT" || !body.isEmpty { head += "Content-Length: \(body.count)\r\n" }
        return try RawHTTP.exchange(port: server.admin, Array((head + "\r\n").utf8) + body).text
    }

    static func put(_ server: ServerProcess, _ host: String, _ text: String, file: String = aasaPath, headers: [String] = []) throws -> String {
        try call(server, "PUT", "/sites/\(host)/\(file)", body: Array(text.utf8), headers: headers)
    }

    static func served(_ server: ServerProcess, _ host: String) throws -> (status: Int, body: String) {
        let r = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
        return (RawHTTP.status(r) ?? 0, RawHTTP.body(r))
    }

    static func json(_ response: String) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(RawHTTP.body(response).utf8)) as! [String: Any]
    }

    @Test func withoutTheFlagTheAPIPathsAnswer403AndSayHowToTurnItOn() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom])
        let r = try Self.call(server, "PUT", "/sites/new.example.com/\(aasaPath)", body: Array(appFile("/a").utf8))
        #expect(RawHTTP.status(r) == 403, "\(r)")
        #expect((try Self.json(r)["error"] as? String)?.contains("--admin-token-file") == true, "\(r)")
        #expect(try Self.served(server, "new.example.com").status == 404)
    }

    @Test func aMissingOrWrongTokenGets401WithWWWAuthenticateAndNoTokenIsEverLogged() throws {
        let server = try Self.server()
        for token in [nil, "wrong", Self.token + "x", String(Self.token.dropLast())] as [String?] {
            let r = try Self.call(server, "PUT", "/sites/new.example.com/\(aasaPath)", body: Array(appFile("/a").utf8), token: token)
            #expect(RawHTTP.status(r) == 401, "\(r)")
            #expect(RawHTTP.header("WWW-Authenticate", in: r) == "Bearer")
            #expect(try Self.json(r)["error"] is String)
        }
        // The same path with the token: accepted, logged under the token's name only.
        #expect(RawHTTP.status(try Self.put(server, "new.example.com", appFile("/a"))) == 201)
        #expect(server.waitForLog("api: PUT new.example.com/apple-app-site-association by backend: 201"), "\(server.log)")
        #expect(!server.log.contains(Self.token) && !server.accessLog.contains(Self.token))
        #expect(!(try server.admin("/status").body).contains(Self.token))
        #expect(try Self.served(server, "new.example.com").status == 200)
    }

    @Test func aPutIsServedByTheNextRequestWithTheVersionItAnswered() throws {
        let server = try Self.server()
        let created = try Self.put(server, "new.example.com", appFile("/one"))
        #expect(RawHTTP.status(created) == 201, "\(created)")
        let etag = try #require(RawHTTP.header("ETag", in: created))
        let answer = try Self.json(created)
        #expect(answer["host"] as? String == "new.example.com" && answer["file"] as? String == aasaPath)
        #expect("\"\(answer["version"] as? String ?? "")\"" == etag)
        // No wait: the replica that answered serves it already.
        let first = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: new.example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(first) == 200 && RawHTTP.body(first) == appFile("/one"))
        #expect(RawHTTP.header("ETag", in: first) == etag)
        // Replaced: 200, and GET returns the stored bytes and version.
        let replaced = try Self.put(server, "new.example.com", appFile("/two"))
        #expect(RawHTTP.status(replaced) == 200, "\(replaced)")
        #expect(try Self.served(server, "new.example.com").body == appFile("/two"))
        let got = try Self.call(server, "GET", "/sites/new.example.com/\(aasaPath)")
        #expect(RawHTTP.status(got) == 200 && RawHTTP.body(got) == appFile("/two"))
        #expect(RawHTTP.header("ETag", in: got) == RawHTTP.header("ETag", in: replaced))
        // On disk, in the site's folder, as any file of the config directory.
        let onDisk = try String(contentsOf: server.config.appendingPathComponent("new.example.com/\(aasaPath)"), encoding: .utf8)
        #expect(onDisk == appFile("/two"))
        let stray = try FileManager.default.contentsOfDirectory(atPath: server.config.appendingPathComponent("new.example.com").path)
        #expect(stray == [aasaPath], "no temporary file left: \(stray)")
        // Audit and metrics.
        #expect(server.waitForLog("api: PUT new.example.com/apple-app-site-association by backend: 200 \(RawHTTP.header("ETag", in: replaced) ?? "")"),
                "\(server.log)")
        let metrics = try server.admin("/metrics").body
        #expect(metrics.contains("aasa_api_requests_total{method=\"PUT\",status=\"201\"} 1"), "\(metrics)")
        #expect(metrics.contains("aasa_api_requests_total{method=\"PUT\",status=\"200\"} 1"), "\(metrics)")
    }

    @Test func everyKindAndAWildcardSiteCanBeWritten() throws {
        let server = try Self.server()
        let assetLinks = #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.app", "sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]"#
        #expect(RawHTTP.status(try Self.put(server, "%2A.example.net", appFile("/w/*"))) == 201)
        #expect(RawHTTP.status(try Self.put(server, "example.com", assetLinks, file: "assetlinks.json")) == 201)
        #expect(RawHTTP.status(try Self.put(server, "example.com", "0123ABCD", file: "apple-developer-merchantid-domain-association")) == 201)
        #expect(RawHTTP.status(try Self.put(server, "example.com", #"{"origins": ["https://example.net"]}"#, file: "webauthn")) == 201)
        #expect(try Self.served(server, "deep.example.net").body == appFile("/w/*"))
        #expect(FileManager.default.fileExists(atPath: server.config.appendingPathComponent("*.example.net/\(aasaPath)").path))
        let r = try RawHTTP.exchange(port: server.http, "GET /.well-known/webauthn HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(r) == 200 && RawHTTP.body(r) == #"{"origins": ["https://example.net"]}"#)
        // The site keeps its AASA file; deleting the site removes every file the API knows.
        #expect(RawHTTP.status(try Self.call(server, "DELETE", "/sites/example.com/webauthn")) == 204)
        #expect(RawHTTP.status(try Self.call(server, "DELETE", "/sites/example.com/webauthn")) == 404)
        #expect(try Self.served(server, "example.com").status == 200)
        try "keep me".write(to: server.config.appendingPathComponent("example.com/NOTES"), atomically: true, encoding: .utf8)
        #expect(RawHTTP.status(try Self.call(server, "DELETE", "/sites/example.com")) == 204)
        #expect(try Self.served(server, "example.com").status == 404)
        #expect(FileManager.default.fileExists(atPath: server.config.appendingPathComponent("example.com/NOTES").path), "only the API's files go")
        #expect(RawHTTP.status(try Self.call(server, "DELETE", "/sites/example.com")) == 404)
        #expect(RawHTTP.status(try Self.call(server, "DELETE", "/sites/%2A.example.net")) == 204)
        #expect(!FileManager.default.fileExists(atPath: server.config.appendingPathComponent("*.example.net").path), "an emptied folder goes")
    }

    @Test func anInvalidFileGets422WithValidatesDiagnosticsAndChangesNothing() throws {
        let server = try Self.server()
        let bad = #"{"applinks": {"details": [{"appIDs": ["com.example.app"], "components": [{"/": "/x"}]}]}}"#
        let r = try Self.put(server, "example.com", bad)
        #expect(RawHTTP.status(r) == 422, "\(r)")
        let answer = try Self.json(r)
        #expect(answer["error"] as? String == "invalid")
        let diagnostics = try #require(answer["diagnostics"] as? [[String: Any]])
        // The same findings, positions and paths as `aasa validate --format json`.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-api-\(UUID().uuidString).json")
        try bad.write(to: file, atomically: true, encoding: .utf8)
        let validate = try Shell.run(AASABinary.url.path, ["validate", "--format", "json", file.path])
        let reference = try JSONSerialization.jsonObject(with: Data(validate.stdout.utf8)) as! [String: Any]
        let expected = ((reference["files"] as! [[String: Any]])[0]["diagnostics"] as! [[String: Any]])
        #expect(NSArray(array: diagnostics).isEqual(to: expected), "\(diagnostics) vs \(expected)")
        // Nothing stored, the old file served.
        #expect(try Self.served(server, "example.com").body == exampleCom)
        let onDisk = try String(contentsOf: server.config.appendingPathComponent("example.com/\(aasaPath)"), encoding: .utf8)
        #expect(onDisk == exampleCom)
        // A body that is not UTF-8 is no valid file either.
        let binary = try Self.call(server, "PUT", "/sites/example.com/\(aasaPath)", body: [0x7B, 0xFF, 0xFE, 0x7D])
        #expect(RawHTTP.status(binary) == 422, "\(binary)")
        #expect(RawHTTP.status(try Self.put(server, "fresh.example.com", bad)) == 422)
        #expect(!FileManager.default.fileExists(atPath: server.config.appendingPathComponent("fresh.example.com").path))
    }

    @Test func badPathsMethodsAndSizesGetClearErrors() throws {
        let server = try Self.server()
        for path in ["/sites/a/b/\(aasaPath)", "/sites/../\(aasaPath)", "/sites/example.com:443/\(aasaPath)",
                     "/sites/Example.com/\(aasaPath)", "/sites/example.com./\(aasaPath)", "/sites/example.com/robots.txt",
                     "/sites/example.com/..", "/certificates/../x", "/certificates/a%2Fb"] {
            let r = try Self.call(server, "PUT", path, body: Array(appFile("/a").utf8))
            #expect(RawHTTP.status(r) == 400, "\(path): \(r)")
            #expect(try Self.json(r)["error"] is String, "\(path)")
        }
        let post = try Self.call(server, "POST", "/sites/example.com/\(aasaPath)", body: Array(appFile("/a").utf8))
        #expect(RawHTTP.status(post) == 405 && RawHTTP.header("Allow", in: post) == "GET, HEAD, PUT, DELETE", "\(post)")
        let putSite = try Self.call(server, "PUT", "/sites/example.com", body: Array(appFile("/a").utf8))
        #expect(RawHTTP.status(putSite) == 405 && RawHTTP.header("Allow", in: putSite) == "DELETE", "\(putSite)")
        // 1 MiB is read and judged (an invalid file, far over the 128 KB limit); a byte more is 413.
        let limit = 1024 * 1024
        let atLimit = try Self.call(server, "PUT", "/sites/example.com/\(aasaPath)", body: [UInt8](repeating: 0x20, count: limit))
        #expect(RawHTTP.status(atLimit) == 422, "\(atLimit.prefix(200))")
        let over = try Self.call(server, "PUT", "/sites/example.com/\(aasaPath)", body: [UInt8](repeating: 0x20, count: limit + 1))
        #expect(RawHTTP.status(over) == 413, "\(over.prefix(200))")
        #expect(try Self.served(server, "example.com").body == exampleCom)
        #expect(RawHTTP.status(try Self.call(server, "GET", "/sites/nothing.example.com/\(aasaPath)")) == 404)
        // The read endpoints keep working.
        #expect(try server.admin("/readyz").status == 200)
    }

    @Test func conditionsMakeConcurrentWritesSafe() throws {
        let server = try Self.server()
        let first = try Self.put(server, "race.example.com", appFile("/v1"), headers: ["If-None-Match: *"])
        #expect(RawHTTP.status(first) == 201)
        #expect(RawHTTP.status(try Self.put(server, "race.example.com", appFile("/v1b"), headers: ["If-None-Match: *"])) == 412)
        let etag = try #require(RawHTTP.header("ETag", in: first))
        #expect(RawHTTP.status(try Self.put(server, "race.example.com", appFile("/x"), headers: ["If-Match: \"0000000000000000\""])) == 412)
        // Writers that both read version 1 race: exactly one wins, and it is what is served.
        let results = Guarded<[(Int, String)]>([])
        nonisolated(unsafe) let shared = server
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let r = (try? Self.put(shared, "race.example.com", appFile("/racer\(i)"), headers: ["If-Match: \(etag)"])) ?? ""
            results.withLock { $0.append((RawHTTP.status(r) ?? 0, appFile("/racer\(i)"))) }
        }
        let all = results.withLock { $0 }
        let winners = all.filter { $0.0 == 200 }
        #expect(winners.count == 1, "\(all.map(\.0))")
        #expect(all.filter { $0.0 == 412 }.count == 7)
        #expect(try Self.served(server, "race.example.com").body == winners.first?.1)
        // DELETE honours If-Match too.
        #expect(RawHTTP.status(try Self.call(server, "DELETE", "/sites/race.example.com/\(aasaPath)", headers: ["If-Match: \(etag)"])) == 412)
        #expect(try Self.served(server, "race.example.com").status == 200)
    }

    @Test func aDiskThatRefusesTheWriteGetsAJSONErrorAndTheOldVersionServes() throws {
        // The config folder read-only in the server's own mount namespace (root ignores modes).
        let script = #"c=""; p=""; for a in "$@"; do [ "$p" = --config ] && c="$a"; p="$a"; done; "#
            + #"mount --bind "$c" "$c" && mount -o remount,bind,ro "$c" "$c" && exec "$0" "$@""#
        let server = try Self.server(launcher: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", script])
        let r = try Self.put(server, "example.com", appFile("/new"))
        #expect([500, 507].contains(RawHTTP.status(r) ?? 0), "\(r)")
        #expect((try Self.json(r)["error"] as? String)?.contains("Read-only file system") == true, "\(r)")
        #expect(try Self.served(server, "example.com").body == exampleCom)
        #expect(RawHTTP.status(try Self.put(server, "other.example.com", appFile("/new"))) == 500)
        #expect(try Self.served(server, "other.example.com").status == 404)
    }

    @Test func aServerKilledWhileWritingRestartsWithTheOldFileOrTheNewOneWhole() throws {
        let server = try Self.server()
        let versions = (0..<40).map { appFile("/v\($0)/" + String(repeating: "x", count: 20_000)) }
        // Writes in flight on another thread while the server is killed.
        let done = Guarded(false)
        nonisolated(unsafe) let shared = server
        let writer = Thread {
            for v in versions where !done.withLock({ $0 }) { _ = try? Self.put(shared, "example.com", v) }
        }
        writer.start()
        usleep(150_000)
        kill(server.process.processIdentifier, SIGKILL)
        done.withLock { $0 = true }
        _ = server.process.exitStatus(within: 10)
        let again = try ServerProcess(reuse: server.directory)
        let served = try Self.served(again, "example.com")
        #expect(served.status == 200)
        #expect(served.body == exampleCom || versions.contains(served.body), "a torn file: \(served.body.prefix(80))…")
        #expect(try again.site("example.com")?["state"] as? String == "serving")
    }
}

/// A value shared by a test's threads, behind a lock.
final class Guarded<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

@Suite struct ServeWriteAPICertificateTests {
    /// A leaf for `host` signed by the test CA, as PEM chain and key.
    static func leaf(_ host: String, in dir: URL) throws -> (chain: String, key: String) {
        let ca = TestCertificates.directory.path
        let script = """
        set -e
        cd '\(dir.path)'
        openssl ecparam -name prime256v1 -genkey -noout -out leaf.key
        openssl req -new -key leaf.key -subj "/CN=\(host)" -out leaf.csr 2>/dev/null
        printf 'subjectAltName=DNS:\(host)\\nbasicConstraints=critical,CA:FALSE\\n' > leaf.ext
        openssl x509 -req -in leaf.csr -CA '\(ca)/ca.pem' -CAkey '\(ca)/ca.key' -CAcreateserial -days 5 -sha256 -extfile leaf.ext -out leaf.crt 2>/dev/null
        cat '\(ca)/ca.pem' >> leaf.crt
        """
        let r = try Shell.run("/bin/bash", ["-c", script])
        guard r.status == 0 else { throw HarnessError(description: r.stderr) }
        return (try String(contentsOf: dir.appendingPathComponent("leaf.crt"), encoding: .utf8),
                try String(contentsOf: dir.appendingPathComponent("leaf.key"), encoding: .utf8))
    }

    static func body(chain: String, key: String) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: ["certificate": chain, "key": key]))
    }

    /// The subject a handshake with SNI `host` is given.
    static func presented(_ server: ServerProcess, _ host: String) throws -> String {
        try Shell.run("/bin/bash", ["-c", "openssl s_client -connect 127.0.0.1:\(server.https) -servername \(host) </dev/null 2>/dev/null | openssl x509 -noout -subject"]).stdout
    }

    @Test func aCertificatePutIsUsedByTheNextHandshakeAndItsKeyNeverLeaves() throws {
        let server = try ServeWriteAPITests.server()
        let dir = try TemporaryDirectory()
        let (chain, key) = try Self.leaf("api.example.com", in: dir.url)
        #expect(!(try Self.presented(server, "api.example.com")).contains("api.example.com"))
        let r = try ServeWriteAPITests.call(server, "PUT", "/certificates/api", body: try Self.body(chain: chain, key: key))
        #expect(RawHTTP.status(r) == 201, "\(r)")
        let answer = try ServeWriteAPITests.json(r)
        #expect(answer["name"] as? String == "api" && answer["dnsNames"] as? [String] == ["api.example.com"])
        #expect((answer["notAfter"] as? String)?.hasSuffix("Z") == true)
        #expect((try Self.presented(server, "api.example.com")).contains("CN = api.example.com"))
        // Stored as a Kubernetes TLS Secret's layout, the key readable by its owner only.
        var st = stat()
        #expect(stat(server.certs.appendingPathComponent("api/tls.key").path, &st) == 0 && st.st_mode & 0o777 == 0o600)
        let got = try ServeWriteAPITests.call(server, "GET", "/certificates/api")
        let gotJSON = try ServeWriteAPITests.json(got)
        #expect(gotJSON["certificate"] as? String == chain && gotJSON["key"] == nil && !got.contains("PRIVATE KEY"))
        #expect(gotJSON["dnsNames"] as? [String] == ["api.example.com"])
        #expect(RawHTTP.status(try ServeWriteAPITests.call(server, "PUT", "/certificates/api", body: try Self.body(chain: chain, key: key))) == 200)
        #expect(server.waitForLog("api: PUT certificate api by backend: 201"))
        #expect(!server.log.contains("PRIVATE KEY"))
        #expect(RawHTTP.status(try ServeWriteAPITests.call(server, "DELETE", "/certificates/api")) == 204)
        #expect(!(try Self.presented(server, "api.example.com")).contains("api.example.com"))
        #expect(RawHTTP.status(try ServeWriteAPITests.call(server, "GET", "/certificates/api")) == 404)
        #expect(RawHTTP.status(try ServeWriteAPITests.call(server, "DELETE", "/certificates/api")) == 404)
    }

    /// The SHA-256 fingerprint of the first certificate in `pem`, or of what a handshake with
    /// SNI `host` is given.
    static func fingerprint(pem: String) throws -> String {
        try Shell.run("/bin/bash", ["-c", "openssl x509 -noout -fingerprint -sha256"], input: pem).stdout
    }

    static func folder(_ name: String, in dir: TemporaryDirectory) throws -> URL {
        let url = dir.url.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func presentedFingerprint(_ server: ServerProcess, _ host: String) throws -> String {
        try Shell.run("/bin/bash", ["-c", "openssl s_client -connect 127.0.0.1:\(server.https) -servername \(host) </dev/null 2>/dev/null | openssl x509 -noout -fingerprint -sha256"]).stdout
    }

    @Test func aCertificatePutOverACMEsPairIsServedAndOverSomeoneElsesIsRefused() throws {
        let server = try ServeWriteAPITests.server()
        let dir = try TemporaryDirectory()
        let certs = server.certs.path
        // ACME's pair for `api`, in certbot's layout with ACME's mark, served first.
        let acme = try Self.leaf("api.example.com", in: try Self.folder("acme", in: dir))
        try FileManager.default.createDirectory(atPath: certs + "/api", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: certs + "/acme/certificates", withIntermediateDirectories: true)
        try acme.key.write(toFile: certs + "/api/privkey.pem", atomically: true, encoding: .utf8)
        try acme.chain.write(toFile: certs + "/api/fullchain.pem", atomically: true, encoding: .utf8)
        try "{}\n".write(toFile: certs + "/acme/certificates/api.json", atomically: true, encoding: .utf8)
        let acmePrint = try Self.fingerprint(pem: acme.chain)
        #expect(ServerProcess.waitFor(timeout: 10) { try Self.presentedFingerprint(server, "api.example.com") == acmePrint })
        // The platform's pair replaces it: served, and ACME's files and mark are gone.
        let platform = try Self.leaf("api.example.com", in: try Self.folder("platform", in: dir))
        let r = try ServeWriteAPITests.call(server, "PUT", "/certificates/api", body: try Self.body(chain: platform.chain, key: platform.key))
        #expect(RawHTTP.status(r) == 201, "\(r)")
        let platformPrint = try Self.fingerprint(pem: platform.chain)
        #expect(platformPrint != acmePrint)
        #expect(ServerProcess.waitFor(timeout: 10) { try Self.presentedFingerprint(server, "api.example.com") == platformPrint })
        for gone in ["/api/fullchain.pem", "/api/privkey.pem", "/acme/certificates/api.json"] {
            #expect(!FileManager.default.fileExists(atPath: certs + gone), "\(gone)")
        }
        // Someone else's certbot pair for `other`: a write would not be served, so it is refused.
        let other = try Self.leaf("other.example.com", in: try Self.folder("other", in: dir))
        try FileManager.default.createDirectory(atPath: certs + "/other", withIntermediateDirectories: true)
        try other.key.write(toFile: certs + "/other/privkey.pem", atomically: true, encoding: .utf8)
        try other.chain.write(toFile: certs + "/other/fullchain.pem", atomically: true, encoding: .utf8)
        let refused = try ServeWriteAPITests.call(server, "PUT", "/certificates/other", body: try Self.body(chain: platform.chain, key: platform.key))
        #expect(RawHTTP.status(refused) == 409, "\(refused)")
        #expect(refused.contains("other/fullchain.pem"))
        #expect(!FileManager.default.fileExists(atPath: certs + "/other/tls.crt"))
    }

    @Test func aCertificateThatWouldNotServeIsRefusedSayingWhy() throws {
        let server = try ServeWriteAPITests.server()
        let dir = try TemporaryDirectory()
        let (chain, _) = try Self.leaf("api.example.com", in: dir.url)
        let otherKey = try String(contentsOf: TestCertificates.directory.appendingPathComponent("sites.key"), encoding: .utf8)
        func put(_ body: [UInt8]) throws -> (Int, String) {
            let r = try ServeWriteAPITests.call(server, "PUT", "/certificates/api", body: body)
            return (RawHTTP.status(r) ?? 0, (try? ServeWriteAPITests.json(r)["error"] as? String) ?? "")
        }
        let mismatched = try put(try Self.body(chain: chain, key: otherKey))
        #expect(mismatched.0 == 422 && mismatched.1.contains("does not belong"), "\(mismatched)")
        let malformed = try put(try Self.body(chain: "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n", key: otherKey))
        #expect(malformed.0 == 422 && malformed.1.contains("does not parse"), "\(malformed)")
        let noChain = try put(try Self.body(chain: "hello", key: otherKey))
        #expect(noChain.0 == 422, "\(noChain)")
        #expect(try put(Array("not json".utf8)).0 == 400)
        #expect(try put(Array(#"{"certificate": 1, "key": "k"}"#.utf8)).0 == 400)
        // An expired leaf (made with Python's cryptography: openssl cannot date one in the past).
        let script = """
        import datetime
        from cryptography import x509
        from cryptography.x509.oid import NameOID
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "old.example.com")])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                .serial_number(1).not_valid_before(now - datetime.timedelta(days=10)).not_valid_after(now - datetime.timedelta(days=1))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName("old.example.com")]), critical=False)
                .sign(key, hashes.SHA256()))
        print(cert.public_bytes(serialization.Encoding.PEM).decode() + "\\n" + key.private_bytes(serialization.Encoding.PEM,
              serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode())
        """
        let made = try Shell.run("/usr/bin/env", ["python3", "-c", script])
        let parts = made.stdout.components(separatedBy: "-----BEGIN PRIVATE KEY-----")
        try #require(parts.count == 2, "\(made.stderr)")
        let expired = try put(try Self.body(chain: parts[0], key: "-----BEGIN PRIVATE KEY-----" + parts[1]))
        #expect(expired.0 == 422 && expired.1.contains("expired"), "\(expired)")
        // Nothing was stored.
        #expect(!FileManager.default.fileExists(atPath: server.certs.appendingPathComponent("api").path))
        #expect(RawHTTP.status(try ServeWriteAPITests.call(server, "PUT", "/certificates/\(String(repeating: "a", count: 201))", body: [])) == 400)
    }

    @Test func aSecondReplicaOnTheSameFoldersServesAWriteThroughItsWatch() throws {
        let first = try ServeWriteAPITests.server()
        // The second replica reads the first one's folders as they are.
        let second = try ServerProcess(reuse: first.directory)
        let put = try ServeWriteAPITests.put(first, "shared.example.com", appFile("/shared"))
        #expect(RawHTTP.status(put) == 201)
        #expect(ServerProcess.waitFor(timeout: 5) { try ServeWriteAPITests.served(second, "shared.example.com").body == appFile("/shared") })
        #expect(RawHTTP.status(try ServeWriteAPITests.call(first, "DELETE", "/sites/shared.example.com")) == 204)
        #expect(ServerProcess.waitFor(timeout: 5) { try ServeWriteAPITests.served(second, "shared.example.com").status == 404 })
    }
}

@Suite struct ServeAdminTLSTests {
    @Test func theAdminListenerSpeaksHTTPSWithTheNamedCertificateAndHTTP11Only() throws {
        let server = try ServeWriteAPITests.server(extra: ["--admin-tls", "sites", "--admin", "127.0.0.1:0"])
        func curl(_ extra: [String]) throws -> CommandResult {
            try Shell.run("/usr/bin/curl", ["-sS", "--max-time", "10", "--cacert", TestCertificates.caFile,
                                            "--resolve", "example.com:\(server.admin):127.0.0.1"] + extra)
        }
        let health = try curl(["-w", " %{http_version}", "https://example.com:\(server.admin)/healthz"])
        #expect(health.stdout == "ok\n 1.1", "\(health.stdout) \(health.stderr)")
        // curl offers h2 first; the admin listener answers in HTTP/1.1 all the same.
        let h2 = try curl(["--http2", "-w", " %{http_version}", "https://example.com:\(server.admin)/readyz"])
        #expect(h2.stdout == "ready\n 1.1", "\(h2.stdout) \(h2.stderr)")
        // The write API over it, token and all.
        let put = try curl(["-X", "PUT", "--data-binary", exampleCom, "-H", "Authorization: Bearer \(ServeWriteAPITests.token)",
                            "-w", " %{http_code}", "https://example.com:\(server.admin)/sites/tls.example.com/apple-app-site-association"])
        #expect(put.stdout.hasSuffix(" 201"), "\(put.stdout) \(put.stderr)")
        // Plain HTTP gets no answer of the admin listener's.
        let plain = try RawHTTP.exchange(port: server.admin, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(!plain.contains("\r\n\r\nok"), "\(plain)")
        #expect(!server.log.contains("bearer tokens cross the network in the clear"))
        // `aasa health` asks over HTTPS when told to (the image's HEALTHCHECK reads AASA_ADMIN_TLS).
        let health2 = try AASABinary.run(["health", "--admin", "127.0.0.1:\(server.admin)"], environment: ["AASA_ADMIN_TLS": "sites"])
        #expect(health2.status == 0 && health2.stdout == "healthy\n", "\(health2.stdout) \(health2.stderr)")
        let plainProbe = try AASABinary.run(["health", "--admin", "127.0.0.1:\(server.admin)"], environment: ["AASA_ADMIN_TLS": ""])
        #expect(plainProbe.status == 1, "\(plainProbe.stdout) \(plainProbe.stderr)")
    }

    @Test func anAdminCertificateThatDoesNotExistEndsTheStart() throws {
        let directory = try TemporaryDirectory()
        try directory.write("config/example.com/apple-app-site-association", exampleCom)
        let certs = directory.url.appendingPathComponent("certs")
        try FileManager.default.createDirectory(at: certs, withIntermediateDirectories: true)
        for file in ["sites.crt", "sites.key"] {
            try FileManager.default.copyItem(at: TestCertificates.directory.appendingPathComponent(file), to: certs.appendingPathComponent(file))
        }
        let r = try Shell.run(AASABinary.url.path, ["serve", "--config", directory.url.appendingPathComponent("config").path, "--certs", certs.path,
                                                     "--https", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--admin-tls", "nosuch", "--cdn-watch", "off"],
                              timeout: 20)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("--admin-tls nosuch: no certificate nosuch"), "\(r.stderr)")
    }
}

/// `aasa site` against a real server's write API, end to end.
@Suite struct SiteCommandAgainstTheServerTests {
    @Test func putGetLsAndRmGoThroughTheRealAPI() throws {
        let server = try ServeWriteAPITests.server()
        let dir = try TemporaryDirectory()
        let tokens = dir.url.appendingPathComponent("token")
        try "backend:\(ServeWriteAPITests.token)\n".write(to: tokens, atomically: true, encoding: .utf8)
        let good = dir.url.appendingPathComponent("apple-app-site-association")
        try appFile("/cli").write(to: good, atomically: true, encoding: .utf8)
        let common = ["--admin", "http://127.0.0.1:\(server.admin)", "--token-file", tokens.path]
        let put = try AASABinary.run(["site", "put", "cli.example.com", "--file", good.path] + common)
        #expect(put.status == 0 && put.stdout.contains("201"), "\(put.stdout) \(put.stderr)")
        #expect(try ServeWriteAPITests.served(server, "cli.example.com").body == appFile("/cli"))
        let get = try AASABinary.run(["site", "get", "cli.example.com"] + common)
        #expect(get.status == 0 && get.stdout == appFile("/cli"), "\(get.stdout) \(get.stderr)")
        // A refused file: the server's findings printed as `aasa validate` prints them, exit 1.
        let bad = dir.url.appendingPathComponent("bad.json")
        try #"{"applinks": {"details": [{"appIDs": ["nope"], "components": [{"/": "/x"}]}]}}"#.write(to: bad, atomically: true, encoding: .utf8)
        let refused = try AASABinary.run(["site", "put", "cli.example.com", "apple-app-site-association", "--file", bad.path] + common)
        let validate = try AASABinary.run(["validate", bad.path])
        #expect(refused.status == 1 && refused.stdout == validate.stdout, "\(refused.stdout) vs \(validate.stdout)")
        let ls = try AASABinary.run(["site", "ls"] + common)
        #expect(ls.status == 0 && ls.stdout.contains("cli.example.com serving"), "\(ls.stdout) \(ls.stderr)")
        let rm = try AASABinary.run(["site", "rm", "cli.example.com"] + common)
        #expect(rm.status == 0, "\(rm.stdout) \(rm.stderr)")
        #expect(try ServeWriteAPITests.served(server, "cli.example.com").status == 404)
        // The server unreachable: exit 2.
        let closed = try AASABinary.run(["site", "get", "cli.example.com", "--admin", "http://127.0.0.1:\(try freePort())", "--token-file", tokens.path])
        #expect(closed.status == 2, "\(closed.stderr)")
    }
}
