import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let aasaPath = "apple-app-site-association"
private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// What the write API refuses and what a failed write leaves behind (docs/platforms.md,
/// docs/security.md): keys never stored where they are given back, a certificate pair never
/// half-replaced, the admin listener's own certificate never deleted, no site over a public
/// suffix or an IP address, token files read as their docs say.
@Suite struct ServeWriteAPIGuardTests {
    typealias API = ServeWriteAPITests
    typealias Certs = ServeWriteAPICertificateTests

    /// A server whose token file is at a path the test controls.
    static func server(tokens: String, extra: [String] = [], sites: [String: String] = ["example.com": exampleCom],
                       launcher: [String] = []) throws -> (ServerProcess, URL) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-tokens-\(UUID().uuidString)")
        try tokens.write(to: file, atomically: false, encoding: .utf8)
        let server = try ServerProcess(sites: sites, extraArguments: ["--admin-token-file", file.path] + extra, launcher: launcher)
        return (server, file)
    }

    @Test func aPrivateKeyInsideTheChainIsRefusedAndNothingIsStored() throws {
        let server = try API.server()
        let dir = try TemporaryDirectory()
        let (chain, key) = try Certs.leaf("k.example.com", in: dir.url)
        let pkcs1 = try Shell.run("/bin/bash", ["-c", "openssl ec -in '\(dir.url.path)/leaf.key' 2>/dev/null"]).stdout
        // HAProxy's combined PEM pasted as the chain, with the key in either form.
        for combined in [chain + key, key + chain, chain + pkcs1] {
            let r = try API.call(server, "PUT", "/certificates/k", body: try Certs.body(chain: combined, key: key))
            #expect(RawHTTP.status(r) == 422, "\(r)")
            #expect((try API.json(r)["error"] as? String)?.contains("PRIVATE KEY") == true, "\(r)")
            #expect(!FileManager.default.fileExists(atPath: server.certs.appendingPathComponent("k").path))
            #expect(RawHTTP.status(try API.call(server, "GET", "/certificates/k")) == 404)
        }
        #expect(RawHTTP.status(try API.call(server, "PUT", "/certificates/k", body: try Certs.body(chain: chain, key: key))) == 201)
    }

    /// The certs folder on a small tmpfs in the server's own mount namespace; the test fills it
    /// through /proc/PID/root, which shows that namespace's mounts.
    static let tmpfsCerts = #"c=""; p=""; for a in "$@"; do [ "$p" = --certs ] && c="$a"; p="$a"; done; "#
        + #"t=$(mktemp -d) && cp -a "$c"/. "$t"/ && mount -t tmpfs -o size=4m tmpfs "$c" && cp -a "$t"/. "$c"/ && exec "$0" "$@""#

    static func fill(_ server: ServerProcess, _ folder: URL, leavingPages pages: Int) throws {
        let path = "/proc/\(server.process.processIdentifier)/root\(folder.path)/.fill"
        let r = try Shell.run("/bin/bash", ["-c", "dd if=/dev/zero of='\(path)' bs=4096 2>/dev/null; truncate -s -\(pages * 4096) '\(path)'"])
        #expect(r.status == 0, "\(r.stderr)")
    }

    @Test func aCertificatePairIsReplacedWholeOrNotAtAllWhenTheDiskFills() throws {
        let (server, _) = try Self.server(tokens: "backend:\(API.token)\n", launcher: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", Self.tmpfsCerts])
        let dir = try TemporaryDirectory()
        let first = try Certs.leaf("pair.example.com", in: try Certs.folder("one", in: dir))
        #expect(RawHTTP.status(try API.call(server, "PUT", "/certificates/pair", body: try Certs.body(chain: first.chain, key: first.key))) == 201)
        let before = try Certs.presentedFingerprint(server, "pair.example.com")
        #expect(before == (try Certs.fingerprint(pem: first.chain)))
        // A larger chain (the leaf and the CA four times: over a page) and a new key, on a disk
        // with one page left: the key fits, the chain does not.
        let second = try Certs.leaf("pair.example.com", in: try Certs.folder("two", in: dir))
        let ca = try String(contentsOfFile: TestCertificates.caFile, encoding: .utf8)
        try Self.fill(server, server.certs, leavingPages: 1)
        let r = try API.call(server, "PUT", "/certificates/pair", body: try Certs.body(chain: second.chain + ca + ca + ca + ca, key: second.key))
        #expect(RawHTTP.status(r) == 507, "\(r)")
        // The old pair, whole, on disk and in handshakes; the API gives back the old chain.
        let inNamespace = "/proc/\(server.process.processIdentifier)/root\(server.certs.path)/pair"
        #expect((try? String(contentsOfFile: inNamespace + "/tls.key", encoding: .utf8)) == first.key)
        #expect((try? String(contentsOfFile: inNamespace + "/tls.crt", encoding: .utf8)) == first.chain)
        #expect(try Certs.presentedFingerprint(server, "pair.example.com") == before)
        #expect(try API.json(try API.call(server, "GET", "/certificates/pair"))["certificate"] as? String == first.chain)
        let stray = try FileManager.default.contentsOfDirectory(atPath: inNamespace).filter { $0.hasSuffix(".tmp") || $0.hasPrefix("..pair-") }
        #expect(stray.count == 1, "the current pair's folder only: \(stray)")
        // Room again: the same write succeeds and is served.
        unlink("/proc/\(server.process.processIdentifier)/root\(server.certs.path)/.fill")
        let again = try API.call(server, "PUT", "/certificates/pair", body: try Certs.body(chain: second.chain + ca, key: second.key))
        #expect(RawHTTP.status(again) == 200, "\(again)")
        #expect(try Certs.presentedFingerprint(server, "pair.example.com") == (try Certs.fingerprint(pem: second.chain)))
    }

    @Test func aNewSiteWhoseFileCannotBeWrittenLeavesNoFolder() throws {
        let script = Self.tmpfsCerts.replacingOccurrences(of: "--certs", with: "--config")
        let (server, _) = try Self.server(tokens: "backend:\(API.token)\n", launcher: ["/usr/bin/unshare", "-m", "/bin/sh", "-c", script])
        try Self.fill(server, server.config, leavingPages: 0)
        let r = try API.put(server, "new.example.com", appFile("/x"))
        #expect(RawHTTP.status(r) == 507, "\(r)")
        let folder = "/proc/\(server.process.processIdentifier)/root\(server.config.path)/new.example.com"
        #expect(!FileManager.default.fileExists(atPath: folder), "an empty site folder was left")
        #expect(try API.served(server, "example.com").status == 200)
    }

    @Test func theAdminListenersOwnCertificateCannotBeDeleted() throws {
        let (server, _) = try Self.server(tokens: "backend:\(API.token)\n", extra: ["--admin-tls", "sites"])
        func call(_ method: String, _ path: String) throws -> CommandResult {
            try Shell.run("/usr/bin/curl", ["-sS", "--max-time", "10", "--cacert", TestCertificates.caFile, "-X", method,
                                            "-H", "Authorization: Bearer \(API.token)", "-w", "\n%{http_code}",
                                            "--resolve", "example.com:\(server.admin):127.0.0.1", "https://example.com:\(server.admin)\(path)"])
        }
        let r = try call("DELETE", "/certificates/sites")
        #expect(r.stdout.hasSuffix("\n409"), "\(r.stdout) \(r.stderr)")
        #expect(r.stdout.contains("--admin-tls"), "\(r.stdout)")
        #expect(try call("GET", "/healthz").stdout == "ok\n\n200")
    }

    @Test func wildcardsOverAPublicSuffixAndIPAddressesAreNoSiteNames() throws {
        let server = try API.server()
        for host in ["%2A.com", "%2A.co.uk", "%2A.github.io", "%2A.localhost", "127.0.0.1", "%2A.1.2.3.4", "10.0.0.1"] {
            let r = try API.put(server, host, appFile("/x"))
            #expect(RawHTTP.status(r) == 400, "\(host): \(r)")
            #expect(try API.json(r)["error"] is String)
        }
        #expect(try API.served(server, "foo.com").status == 404)
        // Read and delete are not refused: a site from before (or written by SQL) can go.
        #expect(RawHTTP.status(try API.call(server, "GET", "/sites/%2A.com/\(aasaPath)")) == 404)
        #expect(RawHTTP.status(try API.call(server, "DELETE", "/sites/%2A.com")) == 404)
        // A customer's own wildcard is a site.
        #expect(RawHTTP.status(try API.put(server, "%2A.customer.co.uk", appFile("/w"))) == 201)
        #expect(try API.served(server, "a.customer.co.uk").status == 200)
    }

    @Test func suchAFolderIsRejectedReportedAndNeverServed() throws {
        let server = try ServerProcess(sites: ["example.com": exampleCom, "*.com": appFile("/all"), "192.0.2.7": appFile("/ip"),
                                               "*.example.org": wildcardOrg])
        #expect(try API.served(server, "foo.com").status == 404)
        #expect(try API.served(server, "192.0.2.7").status == 404)
        #expect(try API.served(server, "example.com").status == 200)
        #expect(try API.served(server, "a.example.org").status == 200)
        #expect(server.log.contains("*.com would answer for every domain under the public suffix com"), "\(server.log)")
        #expect(server.log.contains("192.0.2.7 is an IP address"), "\(server.log)")
        let entry = try #require(try server.site("*.com"))
        #expect(entry["state"] as? String == "rejected")
        #expect(((entry["error"] as? [String: Any])?["message"] as? String)?.contains("public suffix") == true, "\(entry)")
    }

    @Test func aTokenFileWithCRLFLineEndsWorks() throws {
        let (server, _) = try Self.server(tokens: "# the platform's backend\r\nbackend:\(API.token)\r\nother:second-token\r\n")
        #expect(RawHTTP.status(try API.put(server, "crlf.example.com", appFile("/x"))) == 201)
        #expect(RawHTTP.status(try API.call(server, "GET", "/sites/crlf.example.com/\(aasaPath)", token: "second-token")) == 200)
        #expect(server.log.contains("2 tokens from"), "\(server.log)")
    }

    @Test func aTokenFileThatCannotBeReadRevokesEveryTokenUntilItCan() throws {
        let (server, file) = try Self.server(tokens: "backend:\(API.token)\n")
        #expect(RawHTTP.status(try API.put(server, "a.example.com", appFile("/x"))) == 201)
        // Replaced by something that is not a readable regular file: no token works.
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        let r = try API.put(server, "a.example.com", appFile("/y"))
        #expect(RawHTTP.status(r) == 401, "\(r)")
        #expect(server.waitForLog("every API request is refused (401) until it can be read"), "\(server.log)")
        kill(server.process.processIdentifier, SIGHUP)
        #expect(server.waitForLog("SIGHUP: reloading"))
        #expect(RawHTTP.status(try API.put(server, "a.example.com", appFile("/y"))) == 401)
        // A file again: its tokens work.
        try FileManager.default.removeItem(at: file)
        try "backend:\(API.token)\n".write(to: file, atomically: false, encoding: .utf8)
        #expect(RawHTTP.status(try API.put(server, "a.example.com", appFile("/y"))) == 200)
    }

    @Test func atStartATokenFileThatIsNotARegularReadableFileIsBadUsage() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/example.com/apple-app-site-association", exampleCom)
        let config = dir.url.appendingPathComponent("config").path
        for (path, reason) in [(dir.url.path, "is a directory"), (dir.url.path + "/missing", "No such file")] {
            let r = try AASABinary.run(["serve", "--config", config, "--http", "127.0.0.1:0", "--admin", "127.0.0.1:0",
                                        "--admin-token-file", path], timeout: 20)
            #expect(r.status == 2, "\(r.stderr)")
            #expect(r.stderr.contains(reason) && r.stderr.contains("--admin-token-file"), "\(r.stderr)")
        }
    }

    @Test func tokenLinesThatNameNoUsableTokenAreReportedWithoutTheirText() throws {
        let (server, _) = try Self.server(tokens: "my app:tok-one\n:tok-two\nspaced: tok three\n  ok : tok-four  \nok:tok-five\n")
        #expect(RawHTTP.status(try API.call(server, "GET", "/sites/example.com/\(aasaPath)", token: "tok-four")) == 200)
        for token in ["tok-one", "tok-two", "tok three"] {
            #expect(RawHTTP.status(try API.call(server, "GET", "/sites/example.com/\(aasaPath)", token: token)) == 401, "\(token)")
        }
        #expect(server.log.contains("line 1: the name has a character other than visible ASCII"), "\(server.log)")
        #expect(server.log.contains("line 2: a ':' with no name before it"), "\(server.log)")
        #expect(server.log.contains("line 3: the token has a character other than visible ASCII"), "\(server.log)")
        #expect(server.log.contains("line 5: the name ok is used by an earlier line too"), "\(server.log)")
        for secret in ["tok-one", "tok-two", "tok three", "tok-four", "tok-five"] { #expect(!server.log.contains(secret), "\(secret)") }
    }

    @Test func twoAuthorizationFieldsAreRefused() throws {
        let server = try API.server()
        let r = try API.call(server, "GET", "/sites/example.com/\(aasaPath)", headers: ["Authorization: Bearer wrong"])
        #expect(RawHTTP.status(r) == 400, "\(r)")
    }

    @Test func ifMatchTakesTheVersionOfAnAnswerAsItIs() throws {
        let server = try API.server()
        let created = try API.put(server, "v.example.com", appFile("/one"))
        let version = try #require(try API.json(created)["version"] as? String)
        let replaced = try API.put(server, "v.example.com", appFile("/two"), headers: ["If-Match: \(version)"])
        #expect(RawHTTP.status(replaced) == 200, "\(replaced)")
        #expect(RawHTTP.status(try API.put(server, "v.example.com", appFile("/three"), headers: ["If-Match: \(version)"])) == 412)
    }

    @Test func expect100ContinueIsAnsweredAndARefusedRequestGetsItsAnswerFirst() throws {
        let server = try API.server()
        let body = Array(appFile("/continued").utf8)
        func head(_ token: String) -> [UInt8] {
            Array("PUT /sites/c.example.com/\(aasaPath) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(token)\r\nContent-Length: \(body.count)\r\nExpect: 100-continue\r\n\r\n".utf8)
        }
        let fd = try RawHTTP.connect(port: server.admin, timeout: 5)
        defer { close(fd) }
        RawHTTP.send(fd, head(API.token))
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        #expect(n > 0 && String(decoding: buffer[0..<max(n, 0)], as: UTF8.self) == "HTTP/1.1 100 Continue\r\n\r\n")
        RawHTTP.send(fd, body)
        let n2 = recv(fd, &buffer, buffer.count, 0)
        #expect(RawHTTP.status(String(decoding: buffer[0..<max(n2, 0)], as: UTF8.self)) == 201)
        // A wrong token: the 401 at once, the body never asked for.
        let refused = try RawHTTP.exchange(port: server.admin, head("wrong"), timeout: 5)
        #expect(RawHTTP.status(refused.text) == 401 && !refused.text.contains("100 Continue"), "\(refused.text)")
        // The API off: 403 at once.
        let off = try ServerProcess(sites: ["example.com": exampleCom])
        let forbidden = try RawHTTP.exchange(port: off.admin, head(API.token), timeout: 5)
        #expect(RawHTTP.status(forbidden.text) == 403 && !forbidden.text.contains("100 Continue"), "\(forbidden.text)")
        // A body over the limit: 413 at once, before any of it is sent.
        let tooLarge = Array("PUT /sites/c.example.com/\(aasaPath) HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(API.token)\r\nContent-Length: 2000000\r\nExpect: 100-continue\r\n\r\n".utf8)
        let large = try RawHTTP.exchange(port: server.admin, tooLarge, timeout: 5)
        #expect(RawHTTP.status(large.text) == 413, "\(large.text)")
        // curl waits a second for a 100 that does not come before it sends the body.
        let file = try TemporaryDirectory()
        let path = try file.write("aasa", appFile("/big") + String(repeating: " ", count: 100_000))
        let started = Date()
        let curl = try Shell.run("/usr/bin/curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "@" + path,
                                                   "-H", "Authorization: Bearer \(API.token)", "-H", "Expect: 100-continue",
                                                   "http://127.0.0.1:\(server.admin)/sites/c.example.com/\(aasaPath)"])
        #expect(curl.stdout == "200", "\(curl.stdout) \(curl.stderr)")
        #expect(Date().timeIntervalSince(started) < 0.9, "curl waited for a 100 that never came")
    }

    @Test func aChunkedBodyIsAccepted() throws {
        let server = try API.server()
        let file = try TemporaryDirectory()
        let path = try file.write("aasa", appFile("/chunked"))
        let r = try Shell.run("/usr/bin/curl", ["-sS", "-w", "\n%{http_code}", "-X", "PUT", "-T", path, "-H", "Transfer-Encoding: chunked",
                                                "-H", "Authorization: Bearer \(API.token)",
                                                "http://127.0.0.1:\(server.admin)/sites/chunked.example.com/\(aasaPath)"])
        #expect(r.stdout.hasSuffix("\n201"), "\(r.stdout) \(r.stderr)")
        #expect(try API.served(server, "chunked.example.com").body == appFile("/chunked"))
    }

    @Test func aCertificateNameThatIsAnOperatorsFileIsRefused() throws {
        // The harness's own pair is `sites.crt` + `sites.key`, put there by hand.
        let server = try API.server()
        let dir = try TemporaryDirectory()
        let (chain, key) = try Certs.leaf("x.example.com", in: dir.url)
        let before = try Certs.presentedFingerprint(server, "example.com")
        let r = try API.call(server, "PUT", "/certificates/sites", body: try Certs.body(chain: chain, key: key))
        #expect(RawHTTP.status(r) == 409, "\(r)")
        #expect((try API.json(r)["error"] as? String)?.contains("sites.crt") == true, "\(r)")
        #expect(!FileManager.default.fileExists(atPath: server.certs.appendingPathComponent("sites").path))
        #expect(try Certs.presentedFingerprint(server, "example.com") == before)
        // A folder with someone else's files (ACME's account, a person's notes) is not written into.
        try FileManager.default.createDirectory(at: server.certs.appendingPathComponent("notes"), withIntermediateDirectories: true)
        try "account".write(to: server.certs.appendingPathComponent("notes/account.key"), atomically: false, encoding: .utf8)
        let intoFolder = try API.call(server, "PUT", "/certificates/notes", body: try Certs.body(chain: chain, key: key))
        #expect(RawHTTP.status(intoFolder) == 409, "\(intoFolder)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: server.certs.appendingPathComponent("notes").path) == ["account.key"])
    }

    @Test func aCAFileAloneInCertsIsNamedWhenTheStartFails() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/example.com/apple-app-site-association", exampleCom)
        try dir.write("certs/ca.pem", try String(contentsOfFile: TestCertificates.caFile, encoding: .utf8))
        let r = try AASABinary.run(["serve", "--config", dir.url.appendingPathComponent("config").path,
                                    "--certs", dir.url.appendingPathComponent("certs").path, "--https", "127.0.0.1:0",
                                    "--admin", "127.0.0.1:0", "--cdn-watch", "off"], timeout: 20)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("ca.pem has no ca.key beside it"), "\(r.stderr)")
    }

    @Test func aasaCertPutsGetsListsAndRemovesThroughTheRealAPI() throws {
        let server = try API.server()
        let dir = try TemporaryDirectory()
        let (chain, key) = try Certs.leaf("cli.example.com", in: dir.url)
        let chainFile = try dir.write("chain.pem", chain)
        let keyFile = try dir.write("key.pem", key)
        let tokens = try dir.write("token", "# for aasa cert\r\nbackend:\(API.token)\r\n")
        let admin = ["--admin", "http://127.0.0.1:\(server.admin)", "--token-file", tokens]
        let put = try AASABinary.run(["cert", "put", "cli", "--chain", chainFile, "--key", keyFile] + admin)
        #expect(put.status == 0 && put.stdout.hasPrefix("cli: 201 created, cli.example.com, until "), "\(put.stdout) \(put.stderr)")
        #expect((try Certs.presented(server, "cli.example.com")).contains("CN = cli.example.com"))
        let got = try AASABinary.run(["cert", "get", "cli"] + admin)
        let json = try JSONSerialization.jsonObject(with: Data(got.stdout.utf8)) as? [String: Any]
        #expect(got.status == 0 && json?["certificate"] as? String == chain && !got.stdout.contains("PRIVATE KEY"), "\(got.stdout)")
        let listed = try AASABinary.run(["cert", "ls"] + admin)
        #expect(listed.status == 0 && listed.stdout.split(separator: "\n").contains { $0.hasPrefix("cli ") && $0.contains(" cli.example.com") },
                "\(listed.stdout) \(listed.stderr)")
        #expect(listed.stdout.split(separator: "\n").contains { $0.hasPrefix("sites ") }, "\(listed.stdout)")
        // Refused: the server's reason, exit 1; nothing stored.
        let combined = try dir.write("combined.pem", chain + key)
        let refused = try AASABinary.run(["cert", "put", "bad", "--chain", combined, "--key", keyFile] + admin)
        #expect(refused.status == 1 && refused.stderr.contains("PRIVATE KEY"), "\(refused.stderr)")
        let rm = try AASABinary.run(["cert", "rm", "cli"] + admin)
        #expect(rm.status == 0 && rm.stdout == "cli: 204 deleted\n", "\(rm.stdout) \(rm.stderr)")
        let gone = try AASABinary.run(["cert", "get", "cli"] + admin)
        #expect(gone.status == 1 && gone.stderr.contains("404"), "\(gone.stderr)")
        let badName = try AASABinary.run(["cert", "get", "../x"] + admin)
        #expect(badName.status == 2, "\(badName.stderr)")
        let unreachable = try AASABinary.run(["cert", "ls", "--admin", "http://127.0.0.1:1"])
        #expect(unreachable.status == 2, "\(unreachable.stderr)")
    }
}
