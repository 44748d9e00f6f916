import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"

@Suite(.serialized) struct ServeResponseTests {
    let server: ServerProcess

    init() throws {
        server = try ServerProcess()
    }

    @Test func eachHostGetsItsOwnFileOverHTTPS() throws {
        let a = try server.curlHTTPS(host: "example.com")
        #expect(a.status == 0, "\(a.stderr)")
        #expect(RawHTTP.status(a.stdout) == 200)
        #expect(RawHTTP.body(a.stdout) == exampleCom)
        let b = try server.curlHTTPS(host: "www.example.com", path: "/apple-app-site-association")
        #expect(RawHTTP.body(b.stdout) == wwwExampleCom)
        let c = try server.curlHTTPS(host: "news.example.org")
        #expect(RawHTTP.body(c.stdout) == wildcardOrg, "\(c.stderr)")
    }

    @Test func theRightCertificateForEachServerName() throws {
        func subject(_ serverName: String?) throws -> String {
            var args = ["s_client", "-connect", "127.0.0.1:\(server.https)", "-CAfile", TestCertificates.caFile]
            if let serverName { args += ["-servername", serverName] } else { args.append("-noservername") }
            let r = try Shell.run("/usr/bin/openssl", args, input: "")
            return r.stdout.components(separatedBy: "\n").first { $0.hasPrefix("subject=") } ?? r.stderr
        }
        #expect(try subject("example.com").contains("CN = example.com"))
        #expect(try subject("www.example.com").contains("CN = example.com"))
        #expect(try subject("deep.example.org").contains("CN = *.example.org"))
        // No SNI, or an unknown name: the default certificate, the first name in byte order.
        #expect(try subject(nil).contains("CN = example.com"))
        #expect(try subject("unknown.test").contains("CN = example.com"))
    }

    @Test func onlyTLS12And13WithALPN() throws {
        let old = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com", "-tls1_1"], input: "")
        // The handshake fails: no cipher was agreed.
        #expect(old.stdout.contains("Cipher is (NONE)"))
        let alpn = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com", "-alpn", "h2,http/1.1"], input: "")
        #expect(alpn.stdout.contains("ALPN protocol: h2"))
        let http11 = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com", "-alpn", "http/1.1"], input: "")
        #expect(http11.stdout.contains("ALPN protocol: http/1.1"))
        let tls12 = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com", "-tls1_2"], input: "")
        // s_client prints the protocol it asked for even when the handshake fails: check the cipher.
        #expect(tls12.stdout.contains("Protocol  : TLSv1.2"))
        #expect(tls12.stdout.contains("Cipher is ECDHE-"), "an ECDHE AEAD suite was agreed")
        #expect(!tls12.stdout.contains("Cipher is (NONE)"))
        // The server's order picks AES-128-GCM though OpenSSL's client lists AES-256 first.
        #expect(tls12.stdout.contains("Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"), "\(tls12.stdout)")
        #expect(alpn.stdout.contains("Cipher is TLS_AES_128_GCM_SHA256"), "\(alpn.stdout)")
    }

    /// Session tickets are on (docs/serving.md, "Certificates"): one TLS 1.3 ticket per full
    /// handshake, and a session resumes under TLS 1.3 and TLS 1.2.
    @Test func sessionsResumeFromOneTicket() throws {
        let directory = try TemporaryDirectory()
        let request = "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"
        for version in ["-tls1_3", "-tls1_2"] {
            let session = directory.url.appendingPathComponent("session\(version)").path
            // -ign_eof reads until the server closes, so the tickets sent after the handshake arrive.
            let first = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com",
                                                           version, "-msg", "-ign_eof", "-sess_out", session], input: request)
            #expect(first.stdout.contains("HTTP/1.1 200 OK"), "\(first.stdout.suffix(600))")
            #expect(first.stdout.contains("New, TLSv1.\(version.last!)"))
            #expect(first.stdout.components(separatedBy: "NewSessionTicket").count - 1 == 1, "one ticket per handshake")
            let again = try Shell.run("/usr/bin/openssl", ["s_client", "-connect", "127.0.0.1:\(server.https)", "-servername", "example.com",
                                                           version, "-ign_eof", "-sess_in", session], input: request)
            #expect(again.stdout.contains("Reused, TLSv1.\(version.last!)"), "\(again.stdout.prefix(1200))")
            #expect(again.stdout.contains("HTTP/1.1 200 OK"))
        }
    }

    @Test func aHostTheConnectionsCertificateDoesNotCoverIs421() throws {
        let r = try server.curlHTTPS(host: "news.example.org", ["-H", "Host: example.com"])
        #expect(RawHTTP.status(r.stdout) == 421, "\(r.stdout)")
    }

    @Test func aSuccessfulResponseHasEveryHeader() throws {
        let r = try RawHTTP.exchange(port: server.http, "GET \(wellKnown)?cache=bust HTTP/1.1\r\nHost: EXAMPLE.com.:443\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(r) == 200)
        #expect(RawHTTP.header("Content-Type", in: r) == "application/json")
        #expect(RawHTTP.header("Content-Length", in: r) == "\(exampleCom.utf8.count)")
        #expect(RawHTTP.header("Cache-Control", in: r) == "public, max-age=3600")
        #expect(RawHTTP.header("X-Content-Type-Options", in: r) == "nosniff")
        #expect(RawHTTP.header("ETag", in: r)?.range(of: #"^"[0-9a-f]{16}"$"#, options: .regularExpression) != nil)
        #expect(RawHTTP.header("Last-Modified", in: r)?.hasSuffix(" GMT") == true)
        #expect(RawHTTP.header("Date", in: r)?.hasSuffix(" GMT") == true)
        #expect(RawHTTP.body(r) == exampleCom)
    }

    @Test func conditionalRequestsGet304() throws {
        let first = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        let etag = try #require(RawHTTP.header("ETag", in: first))
        let lastModified = try #require(RawHTTP.header("Last-Modified", in: first))
        let byTag = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nIf-None-Match: \"x\", \(etag)\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(byTag) == 304)
        #expect(RawHTTP.body(byTag).isEmpty)
        #expect(RawHTTP.header("ETag", in: byTag) == etag)
        let byDate = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nIf-Modified-Since: \(lastModified)\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(byDate) == 304)
        let stale = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nIf-None-Match: \"other\"\r\nIf-Modified-Since: \(lastModified)\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(stale) == 200, "If-None-Match decides when present")
    }

    @Test func headHasTheHeadersButNoBody() throws {
        let r = try RawHTTP.exchange(port: server.http, "HEAD \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(r) == 200)
        #expect(RawHTTP.header("Content-Length", in: r) == "\(exampleCom.utf8.count)")
        #expect(RawHTTP.body(r).isEmpty)
    }

    @Test func otherPathsMethodsAndHosts() throws {
        func exchange(_ head: String) throws -> String {
            try RawHTTP.exchange(port: server.http, head + "\r\nConnection: close\r\n\r\n")
        }
        #expect(RawHTTP.status(try exchange("GET /index.html HTTP/1.1\r\nHost: example.com")) == 404)
        #expect(RawHTTP.status(try exchange("GET \(wellKnown) HTTP/1.1\r\nHost: unknown.test")) == 404)
        #expect(RawHTTP.status(try exchange("GET \(wellKnown) HTTP/1.1\r\nHost: example.org")) == 200, "a wildcard folder serves its base name (TN3155)")
        let post = try exchange("POST \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0")
        #expect(RawHTTP.status(post) == 405)
        #expect(RawHTTP.header("Allow", in: post) == "GET, HEAD")
        for path in ["/", "/.well-known/", "/.well-known/apple-app-site-association/", "/.well-known/apple-app-site-association.json"] {
            let r = try exchange("GET \(path) HTTP/1.1\r\nHost: example.com")
            #expect(!(300..<400).contains(RawHTTP.status(r) ?? 0), "never a redirect: \(path)")
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let request = "GET \(wellKnown) HTTP/1.1\r\nHost: www.example.com\r\n\r\n"
            + "GET /nope HTTP/1.1\r\nHost: example.com\r\n\r\n"
            + "HEAD \(wellKnown) HTTP/1.1\r\nHost: example.com\r\n\r\n"
            + "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"
        let r = try RawHTTP.exchange(port: server.http, request)
        #expect(RawHTTP.statuses(r) == [200, 404, 200, 200])
        #expect(r.hasSuffix(exampleCom))
        #expect(r.components(separatedBy: "Connection: close").count == 2, "only the last response closes")
    }

    /// Four requests in four TLS records that reach the server in one TCP segment: the server
    /// reads them in one go (read-ahead) and must answer all four, though the socket has
    /// nothing more to report once the first is read.
    @Test func tlsRecordsArrivingTogetherAreAllAnswered() throws {
        let script = """
        import socket, ssl, sys
        ctx = ssl.create_default_context(cafile=sys.argv[2])
        ctx.set_alpn_protocols(["http/1.1"])
        raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
        s = ctx.wrap_socket(raw, server_hostname="example.com")
        get = b"GET \(wellKnown) HTTP/1.1\\r\\nHost: example.com\\r\\n\\r\\n"
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        for last in [False, False, False, True]:
            s.sendall(get.replace(b"\\r\\n\\r\\n", b"\\r\\nConnection: close\\r\\n\\r\\n") if last else get)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
        s.settimeout(10)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        sys.stdout.write(data.decode())
        """
        let r = try Shell.run("/usr/bin/python3", ["-c", script, "\(server.https)", TestCertificates.caFile], timeout: 30)
        #expect(RawHTTP.statuses(r.stdout) == [200, 200, 200, 200], "\(r.stdout.suffix(300))\(r.stderr)")
        #expect(r.stdout.components(separatedBy: exampleCom).count == 5)
    }

    @Test func aLargeFileIsServedWholeAlsoWhenPipelined() throws {
        let components = (0..<1500).map { #"{"/": "/products/category-\#($0)/*", "comment": "category \#($0)"}"# }.joined(separator: ", ")
        let big = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["# + components + "]}]}}"
        #expect(big.utf8.count > 64 * 1024 && big.utf8.count < 131_072)
        let server = try ServerProcess(sites: ["www.example.com": big, "example.com": exampleCom])
        let get = "GET \(wellKnown) HTTP/1.1\r\nHost: www.example.com\r\n\r\n"
        let r = try RawHTTP.exchange(port: server.http, get + get + "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.statuses(r) == [200, 200, 200])
        #expect(r.components(separatedBy: big).count == 3, "the large body twice, whole")
        #expect(r.hasSuffix(exampleCom))
        let tls = try Shell.run("/usr/bin/curl", ["-sS", "--cacert", TestCertificates.caFile, "--resolve", "www.example.com:\(server.https):127.0.0.1",
                                                  "https://www.example.com:\(server.https)\(wellKnown)"])
        #expect(tls.status == 0, "\(tls.stderr)")
        #expect(tls.stdout.utf8.count == big.utf8.count && tls.stdout == big, "the large body over TLS, whole")
    }

    @Test func http10AbsoluteFormAndKeepAlive() throws {
        let ten = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.0\r\nHost: example.com\r\n\r\n")
        #expect(RawHTTP.status(ten) == 200)
        #expect(RawHTTP.header("Connection", in: ten) == "close")
        let absolute = try RawHTTP.exchange(port: server.http, "GET http://www.example.com\(wellKnown) HTTP/1.1\r\nHost: ignored.test\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.body(absolute) == wwwExampleCom)
        // A keep-alive connection stays open after a response.
        let fd = try RawHTTP.connect(port: server.http, timeout: 1)
        defer { close(fd) }
        RawHTTP.send(fd, Array("GET \(wellKnown) HTTP/1.0\r\nHost: example.com\r\nConnection: keep-alive\r\n\r\n".utf8))
        let (bytes, closed) = RawHTTP.readToEnd(fd)
        #expect(!closed)
        #expect(String(decoding: bytes, as: UTF8.self).contains("Connection: keep-alive"))
    }

    @Test func aSmallBodyIsReadAndDiscarded() throws {
        let body = String(repeating: "x", count: 1000)
        let r = try RawHTTP.exchange(port: server.http, "POST /x HTTP/1.1\r\nHost: example.com\r\nContent-Length: 1000\r\n\r\n\(body)GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.statuses(r) == [404, 200])
    }

    @Test func plainHTTPToTheTLSPortGetsA400() throws {
        let r = try RawHTTP.exchange(port: server.https, "GET \(wellKnown) HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(RawHTTP.status(r) == 400)
    }

    @Test func adminEndpoints() throws {
        #expect(try server.admin("/healthz").status == 200)
        #expect(try server.admin("/readyz").status == 200)
        _ = try server.curlHTTPS(host: "example.com")
        let metrics = try server.admin("/metrics").body
        #expect(metrics.contains("aasa_requests_total{site=\"example.com\",file=\"apple-app-site-association\",status=\"200\"}"))
        #expect(metrics.contains("aasa_tls_handshakes_total "))
        #expect(metrics.contains("aasa_certificate_expiry_timestamp_seconds{name=\"sites\"}"))
        #expect(metrics.contains("aasa_open_connections "))
        #expect(metrics.contains("aasa_reloads_total 0"))
        let status = try server.status()
        let sites = try #require(status["sites"] as? [[String: Any]])
        #expect(sites.map { $0["host"] as? String } == ["*.example.org", "example.com", "www.example.com"])
        #expect(sites.allSatisfy { $0["state"] as? String == "serving" && $0["error"] is NSNull })
        // The test certificate `wild` names only *.example.org: the note says the base is not covered.
        let note = try #require(sites.first?["certificateNote"] as? String)
        #expect(note.contains("*.example.org also serves example.org"))
        #expect(note.hasSuffix("; no certificate covers example.org"))
        #expect(sites.dropFirst().allSatisfy { $0["certificateNote"] == nil }, "only wildcard sites have a note")
        let certs = try #require(status["certificates"] as? [[String: Any]])
        #expect(certs.map { $0["name"] as? String } == ["sites", "wild"])
        #expect(certs.first?["dnsNames"] as? [String] == ["example.com", "www.example.com"])
    }

    @Test func theAccessLogNamesTheFetcher() throws {
        _ = try server.curlHTTPS(host: "example.com", ["-A", "AASA-Bot/1.0.0"])
        #expect(ServerProcess.waitFor { server.accessLog.contains("\"AASA-Bot/1.0.0\" fetcher=apple-cdn") })
        let line = server.accessLog.split(separator: "\n").first { $0.contains("AASA-Bot") } ?? ""
        #expect(line.contains("127.0.0.1 example.com \"GET \(wellKnown) HTTP/1.1\" 200 \(exampleCom.utf8.count) "))
    }
}

extension ServerProcess {
    static func waitFor(timeout: Double = 5, _ condition: () throws -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? condition()) == true { return true }
            usleep(20_000)
        }
        return (try? condition()) == true
    }
}
