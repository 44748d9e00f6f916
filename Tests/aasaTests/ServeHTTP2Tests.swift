import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// HTTP/2 against the real server (docs/serving.md, "HTTP/2"): ALPN h2 over TLS, prior knowledge on
/// --http, the same responses as HTTP/1.1, and h2load with no failed request.
@Suite struct ServeHTTP2Tests {
    @Test func everyResponseOfHTTP1IsTheSameOverHTTP2WithTLS() throws {
        let server = try ServerProcess(workers: 1)
        let ok = try server.curlHTTPS(host: "example.com", ["--http2"])
        #expect(ok.stdout.hasPrefix("HTTP/2 200"), "\(ok.stdout.prefix(200)) \(ok.stderr)")
        #expect(RawHTTP.body(ok.stdout) == exampleCom)
        #expect(ok.stdout.contains("content-type: application/json\r\n"))
        #expect(ok.stdout.contains("cache-control: public, max-age=3600\r\n"))
        #expect(ok.stdout.contains("x-content-type-options: nosniff\r\n"))
        #expect(ok.stdout.contains("content-length: \(exampleCom.utf8.count)\r\n"))
        #expect(!ok.stdout.lowercased().contains("connection:"))
        let etag = try #require(ok.stdout.split(separator: "\r\n").first { $0.hasPrefix("etag: ") }).dropFirst(6)

        let head = try server.curlHTTPS(host: "example.com", ["--http2", "-I"])
        #expect(head.stdout.hasPrefix("HTTP/2 200"))
        let notModified = try server.curlHTTPS(host: "example.com", ["--http2", "-H", "If-None-Match: \(etag)"])
        #expect(notModified.stdout.hasPrefix("HTTP/2 304"), "\(notModified.stdout.prefix(200))")
        let other = try server.curlHTTPS(host: "example.com", path: "/index.html", ["--http2"])
        #expect(other.stdout.hasPrefix("HTTP/2 404"))
        let post = try server.curlHTTPS(host: "example.com", ["--http2", "-X", "POST"])
        #expect(post.stdout.hasPrefix("HTTP/2 405"))
        #expect(post.stdout.contains("allow: GET, HEAD\r\n"))
        // :authority plays Host's part, 421 included: this connection's certificate is example.com's.
        let misdirected = try server.curlHTTPS(host: "example.com", ["--http2", "-H", "Host: news.example.org"])
        #expect(misdirected.stdout.hasPrefix("HTTP/2 421"), "\(misdirected.stdout.prefix(200))")
        let unknown = try server.curlHTTPS(host: "example.com", ["--http2", "-H", "Host: nosuch.example.net"])
        #expect(unknown.stdout.hasPrefix("HTTP/2 404"))
        // One access-log line per stream, protocol HTTP/2.0.
        #expect(ServerProcess.waitFor { server.accessLog.contains("HTTP/2.0") })
        #expect(try server.admin("/metrics").body.contains(#"aasa_requests_total{site="example.com",file="apple-app-site-association",status="304"} 1"#))
    }

    @Test func priorKnowledgeOnThePlainListenerIsHTTP2() throws {
        let server = try ServerProcess(workers: 1)
        let r = try Shell.run("/usr/bin/curl", ["-sS", "-i", "--max-time", "10", "--http2-prior-knowledge", "-H", "Host: www.example.com",
                                                "http://127.0.0.1:\(server.http)/.well-known/apple-app-site-association"])
        #expect(r.stdout.hasPrefix("HTTP/2 200"), "\(r.stdout.prefix(200)) \(r.stderr)")
        #expect(RawHTTP.body(r.stdout) == wwwExampleCom)
        // HTTP/1.1 on the same listener is unchanged, POST included (it starts like the preface).
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")) == 200)
        let post = "POST /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"
        #expect(RawHTTP.status(try RawHTTP.exchange(port: server.http, post)) == 405)
        // Upgrade: h2c is ignored: the answer is HTTP/1.1.
        let upgrade = try Shell.run("/usr/bin/curl", ["-sS", "-i", "--max-time", "10", "--http2", "-H", "Host: www.example.com",
                                                      "http://127.0.0.1:\(server.http)/.well-known/apple-app-site-association"])
        #expect(upgrade.stdout.hasPrefix("HTTP/1.1 200"), "\(upgrade.stdout.prefix(120))")
    }

    @Test func theProxyProtocolWorksTheSameInFrontOfHTTP2() throws {
        let server = try ServerProcess(extraArguments: ["--proxy-protocol"], workers: 1)
        let tls = try server.curlHTTPS(host: "example.com", ["--http2", "--haproxy-protocol", "--interface", "127.0.0.2"])
        #expect(tls.stdout.hasPrefix("HTTP/2 200"), "\(tls.stdout.prefix(120)) \(tls.stderr)")
        let plain = try Shell.run("/usr/bin/curl", ["-sS", "-i", "--max-time", "10", "--http2-prior-knowledge", "--haproxy-protocol",
                                                    "--interface", "127.0.0.2", "-H", "Host: example.com",
                                                    "http://127.0.0.1:\(server.http)/.well-known/apple-app-site-association"])
        #expect(plain.stdout.hasPrefix("HTTP/2 200"), "\(plain.stdout.prefix(120)) \(plain.stderr)")
        // The client's address comes from the PROXY header, on HTTP/2 streams too.
        #expect(ServerProcess.waitFor { server.accessLog.components(separatedBy: " 127.0.0.2 example.com \"GET ").count - 1 >= 2 })
        #expect(server.accessLog.contains("HTTP/2.0\" 200"))
    }

    @Test func http2OffMeansHTTP11Everywhere() throws {
        let server = try ServerProcess(extraArguments: ["--http2", "off"], workers: 1)
        let r = try server.curlHTTPS(host: "example.com", ["--http2"])
        #expect(r.stdout.hasPrefix("HTTP/1.1 200"), "\(r.stdout.prefix(120))")
        let (text, closed) = try RawHTTP.exchange(port: server.http, Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8), timeout: 5)
        #expect(RawHTTP.status(text) == 505)
        #expect(closed)
    }

    @Test func h2loadGetsEveryResponseOverTLSAndPlain() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/h2load") else { return }
        let server = try ServerProcess(workers: 2)
        for url in ["https://127.0.0.1:\(server.https)/.well-known/apple-app-site-association",
                    "http://127.0.0.1:\(server.http)/.well-known/apple-app-site-association"] {
            let r = try Shell.run("/usr/bin/h2load", ["-n", "100000", "-c", "16", "-m", "10", "-H", "Host: example.com",
                                                      "--header=:authority: example.com", url])
            #expect(r.stdout.contains("100000 succeeded, 0 failed, 0 errored"), "\(url): \(r.stdout.suffix(600)) \(r.stderr)")
            #expect(r.stdout.contains("status codes: 100000 2xx"), "\(url)")
        }
        #expect(!server.process.hasExited)
    }
}
