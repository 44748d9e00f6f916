import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

let assetLinks = """
[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.app",
  "sha256_cert_fingerprints": ["14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"]}}]
"""
let webAuthn = #"{"origins": ["https://example.co.uk", "https://example.de"]}"#
let merchantID = "7B227073704964223A2239353742454139314138383637463645\n"

/// Every association file a site folder holds, served beside the AASA file (docs/serving.md,
/// "Responses").
@Suite struct ServeAssociationFilesTests {
    static func request(_ path: String, host: String = "example.com", method: String = "GET", extra: String = "") -> String {
        "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n\(extra)Connection: close\r\n\r\n"
    }

    @Test func eachKindIsServedOnItsPathWithItsTypeOverHTTPAndHTTPS() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom], workers: 1, prepare: { config in
            try assetLinks.write(to: config.appendingPathComponent("example.com/assetlinks.json"), atomically: true, encoding: .utf8)
            try webAuthn.write(to: config.appendingPathComponent("example.com/webauthn"), atomically: true, encoding: .utf8)
            try merchantID.write(to: config.appendingPathComponent("example.com/apple-developer-merchantid-domain-association"),
                                 atomically: true, encoding: .utf8)
        })
        let cases: [(path: String, body: String, type: String)] = [
            ("/.well-known/assetlinks.json", assetLinks, "application/json"),
            ("/.well-known/webauthn", webAuthn, "application/json"),
            ("/.well-known/apple-developer-merchantid-domain-association", merchantID, "text/plain"),
            ("/.well-known/apple-app-site-association", exampleCom, "application/json"),
        ]
        for c in cases {
            let plain = try RawHTTP.exchange(port: server.http, Self.request(c.path))
            #expect(RawHTTP.status(plain) == 200, "\(c.path): \(plain.prefix(100))")
            #expect(RawHTTP.body(plain) == c.body, "\(c.path)")
            #expect(RawHTTP.header("Content-Type", in: plain) == c.type, "\(c.path)")
            #expect(RawHTTP.header("Cache-Control", in: plain) == "public, max-age=3600")
            #expect(RawHTTP.header("X-Content-Type-Options", in: plain) == "nosniff")
            #expect(RawHTTP.header("Last-Modified", in: plain) != nil)
            let etag = try #require(RawHTTP.header("ETag", in: plain), "\(c.path)")
            let notModified = try RawHTTP.exchange(port: server.http, Self.request(c.path, extra: "If-None-Match: \(etag)\r\n"))
            #expect(RawHTTP.status(notModified) == 304, "\(c.path)")
            let head = try RawHTTP.exchange(port: server.http, Self.request(c.path, method: "HEAD"))
            #expect(RawHTTP.status(head) == 200 && RawHTTP.body(head).isEmpty, "\(c.path)")
            let post = try RawHTTP.exchange(port: server.http, Self.request(c.path, method: "POST"))
            #expect(RawHTTP.status(post) == 405 && RawHTTP.header("Allow", in: post) == "GET, HEAD", "\(c.path)")
            let tls = try server.curlHTTPS(host: "example.com", path: c.path)
            #expect(RawHTTP.status(tls.stdout) == 200 && RawHTTP.body(tls.stdout) == c.body, "\(c.path) over HTTPS")
        }
        // A site without the file: 404, never a redirect or a fallback.
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/assetlinks.json", host: "www.example.com"))) == 404)
        // /status lists every file of the site, AASA included.
        let files = try #require(try server.site("example.com")?["files"] as? [[String: Any]])
        #expect(Set(files.compactMap { $0["name"] as? String }) ==
                ["apple-app-site-association", "assetlinks.json", "webauthn", "apple-developer-merchantid-domain-association"])
        #expect(files.allSatisfy { $0["state"] as? String == "serving" && $0["version"] is String })
        // The access log names the file through its path.
        #expect(ServerProcess.waitFor { server.accessLog.contains("GET /.well-known/assetlinks.json HTTP/1.1\" 200") })
    }

    @Test func requestsAreCountedByTheFileAskedForAndOtherPathsAsOther() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom], workers: 1, prepare: { config in
            try assetLinks.write(to: config.appendingPathComponent("example.com/assetlinks.json"), atomically: true, encoding: .utf8)
        })
        for (path, host, method, status) in [
            ("/.well-known/assetlinks.json", "example.com", "GET", 200),
            ("/.well-known/assetlinks.json", "example.com", "GET", 200),
            ("/apple-app-site-association", "example.com", "GET", 200),
            ("/.well-known/apple-app-site-association", "example.com", "HEAD", 200),
            ("/.well-known/webauthn", "example.com", "POST", 405),
            ("/.well-known/webauthn", "example.com", "GET", 404),
            ("/index.html", "example.com", "GET", 404),
            ("/.well-known/assetlinks.json", "nosuch.example.net", "GET", 404),
        ] {
            let r = try RawHTTP.exchange(port: server.http, Self.request(path, host: host, method: method))
            #expect(RawHTTP.status(r) == status, "\(method) \(path) on \(host)")
        }
        let lines = try server.admin("/metrics").body.split(separator: "\n").filter { $0.hasPrefix("aasa_requests_total{") }
        #expect(lines == [
            #"aasa_requests_total{site="example.com",file="apple-app-site-association",status="200"} 2"#,
            #"aasa_requests_total{site="example.com",file="assetlinks.json",status="200"} 2"#,
            #"aasa_requests_total{site="example.com",file="webauthn",status="404"} 1"#,
            #"aasa_requests_total{site="example.com",file="other",status="404"} 1"#,
            #"aasa_requests_total{site="example.com",file="webauthn",status="405"} 1"#,
            #"aasa_requests_total{site="unknown",file="assetlinks.json",status="404"} 1"#,
        ])
    }

    @Test func aRejectedFileIsNotServedWhileItsSiblingsAre() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom], workers: 1, prepare: { config in
            // A path in a WebAuthn origin is an error.
            try #"{"origins": ["https://example.de/shop"]}"#.write(to: config.appendingPathComponent("example.com/webauthn"), atomically: true, encoding: .utf8)
        })
        let rejected = try RawHTTP.exchange(port: server.http, Self.request("/.well-known/webauthn"))
        #expect(RawHTTP.status(rejected) == 404)
        #expect(RawHTTP.body(rejected).contains("webauthn has errors"))
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/apple-app-site-association"))) == 200)
        let site = try #require(try server.site("example.com"))
        #expect(site["state"] as? String == "serving", "the site's own state is its AASA file's")
        let webauthn = try #require((site["files"] as? [[String: Any]])?.first { $0["name"] as? String == "webauthn" })
        #expect(webauthn["state"] as? String == "rejected")
        let error = try #require(webauthn["error"] as? [String: Any])
        #expect(error["code"] as? String == "webauthn-invalid-origin")
        #expect(error["line"] as? Int == 1)
        #expect(server.log.contains("webauthn-invalid-origin"))
    }

    @Test func eachKindReloadsOnItsOwnKeepingItsLastGoodVersion() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom], workers: 1, prepare: { config in
            try assetLinks.write(to: config.appendingPathComponent("example.com/assetlinks.json"), atomically: true, encoding: .utf8)
        })
        let path = "/.well-known/assetlinks.json"
        // A new valid version is served within a second or two.
        let updated = assetLinks.replacingOccurrences(of: "com.example.app", with: "com.example.other")
        _ = try server.directory.write("config/example.com/assetlinks.json", updated)
        #expect(ServerProcess.waitFor { RawHTTP.body(try RawHTTP.exchange(port: server.http, Self.request(path))) == updated })
        // A broken one is not: the last good version keeps serving, and /status says stale.
        _ = try server.directory.write("config/example.com/assetlinks.json", "[{\"relation\": }]")
        #expect(ServerProcess.waitFor {
            let files = try server.site("example.com")?["files"] as? [[String: Any]]
            return files?.first { $0["name"] as? String == "assetlinks.json" }?["state"] as? String == "stale"
        })
        #expect(RawHTTP.body(try RawHTTP.exchange(port: server.http, Self.request(path))) == updated)
        // A new file of another kind appears without a restart; removing one stops serving it.
        _ = try server.directory.write("config/example.com/webauthn", webAuthn)
        #expect(ServerProcess.waitFor { RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/webauthn"))) == 200 })
        try FileManager.default.removeItem(at: server.config.appendingPathComponent("example.com/webauthn"))
        #expect(ServerProcess.waitFor { RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/webauthn"))) == 404 })
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/apple-app-site-association"))) == 200)
    }

    @Test func aFolderWithOnlyAnAndroidFileIsASite() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom], workers: 1, prepare: { config in
            let folder = config.appendingPathComponent("android.example.net")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try assetLinks.write(to: folder.appendingPathComponent("assetlinks.json"), atomically: true, encoding: .utf8)
        })
        let host = "android.example.net"
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/assetlinks.json", host: host))) == 200)
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, Self.request("/.well-known/apple-app-site-association", host: host))) == 404)
        let site = try #require(try server.site(host))
        #expect(site["state"] as? String == "serving")
        #expect((site["files"] as? [[String: Any]])?.count == 1)
    }
}
