import Foundation
import Testing

private let token = "s3cr3t-Token_1"
private let aasaName = "apple-app-site-association"

/// A request as the scripted admin listener received it.
private struct AdminRequest: Sendable {
    var method = ""
    var target = ""
    /// Field names in lower case.
    var fields: [String: String] = [:]
    var body = ""

    init(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return }
        body = String(text[end.upperBound...])
        let lines = text[..<end.lowerBound].components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        method = parts.first.map(String.init) ?? ""
        target = parts.dropFirst().first.map(String.init) ?? ""
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
    }

    /// What the write API checks first: the token.
    var isAuthorized: Bool { fields["authorization"] == "Bearer \(token)" }
}

/// A JSON answer as the admin listener sends it.
private func answer(_ status: String, _ json: String, _ headers: [String] = []) -> [UInt8] {
    ScriptedServer.response(status, ["Content-Type: application/json"] + headers, body: json)
}

private let unauthorized = answer("401 Unauthorized", #"{"error":"a valid Authorization: Bearer token is required"}"#, ["WWW-Authenticate: Bearer"])

/// `aasa site` against a scripted admin listener on loopback that checks each request (method,
/// path, token, body) and answers as the write API and `/status` do.
@Suite struct SiteCommandTests {
    /// A token file as an operator writes it: a comment, a blank line, then `NAME:TOKEN`.
    private func tokenFile(_ dir: TemporaryDirectory) throws -> String {
        try dir.write("admin.token", "# the CI's token\n\nci:\(token)\r\n")
    }

    private func site(_ arguments: [String], _ api: ScriptedServer, tokenFile: String?, input: String? = nil,
                      environment: [String: String] = [:]) throws -> CommandResult {
        var args = ["site"] + arguments + ["--admin", "http://127.0.0.1:\(api.port)"]
        if let tokenFile { args += ["--token-file", tokenFile] }
        // The runner's own AASA_* variables must not reach the command.
        return try AASABinary.run(args, environment: ["AASA_ADMIN": "", "AASA_TOKEN_FILE": ""].merging(environment) { $1 },
                                  input: input, timeout: 60)
    }

    @Test func putSendsTheFileWithTheBearerTokenAndPrintsTheNewVersion() throws {
        let dir = try TemporaryDirectory()
        let file = try dir.write("example.aasa", exampleCom)
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized else { return unauthorized }
            guard r.method == "PUT", r.target == "/sites/example.com/\(aasaName)", r.body == exampleCom,
                  r.fields["content-type"] == "application/json", r.fields["if-match"] == nil
            else { return answer("400 Bad Request", #"{"error":"unexpected request"}"#) }
            return answer("201 Created", #"{"host":"example.com","file":"\#(aasaName)","version":"3f5a9c"}"#, [#"ETag: "3f5a9c""#])
        }
        let r = try site(["put", "example.com", "--file", file], api, tokenFile: try tokenFile(dir))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "example.com/\(aasaName): 201 created, version 3f5a9c\n")
        #expect(r.stderr.isEmpty)
        #expect(api.requests.count == 1)
    }

    @Test func aWildcardSiteIsWrittenAsPercent2AAndTheFileKindFollowsTheLocalFileName() throws {
        let dir = try TemporaryDirectory()
        let links = #"[{"relation":["delegate_permission/common.handle_all_urls"],"target":{"namespace":"web","site":"https://example.org"}}]"#
        let file = try dir.write("site/assetlinks.json", links)
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized, r.method == "PUT", r.target == "/sites/%2A.example.org/assetlinks.json", r.body == links
            else { return answer("400 Bad Request", #"{"error":"unexpected request \#(AdminRequest(bytes).target)"}"#) }
            return answer("200 OK", #"{"host":"*.example.org","file":"assetlinks.json","version":"77aa"}"#, [#"ETag: "77aa""#])
        }
        let r = try site(["put", "*.example.org", "--file", file], api, tokenFile: try tokenFile(dir))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "*.example.org/assetlinks.json: 200 replaced, version 77aa\n")
    }

    @Test func putReadsStandardInputAndSendsIfMatchAsAQuotedEntityTag() throws {
        let dir = try TemporaryDirectory()
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized, r.method == "PUT", r.target == "/sites/www.example.com/\(aasaName)", r.body == wwwExampleCom
            else { return answer("400 Bad Request", #"{"error":"unexpected request"}"#) }
            guard r.fields["if-match"] == #""3f5a9c""# else { return answer("412 Precondition Failed", #"{"error":"the stored version is \"0000\""}"#) }
            return answer("200 OK", #"{"host":"www.example.com","file":"\#(aasaName)","version":"4b6b"}"#)
        }
        let token = try tokenFile(dir)
        let r = try site(["put", "www.example.com", aasaName, "--if-match", "3f5a9c"], api, tokenFile: token, input: wwwExampleCom)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == "www.example.com/\(aasaName): 200 replaced, version 4b6b\n")
        // `--file -` is standard input too; a version the server does not hold is its 412.
        let stale = try site(["put", "www.example.com", "aasa", "--file", "-", "--if-match", "\"0001\""], api, tokenFile: token, input: wwwExampleCom)
        #expect(stale.status == 1)
        #expect(stale.stdout.isEmpty)
        #expect(stale.stderr == "aasa site put: www.example.com/\(aasaName): 412 Precondition Failed: the stored version is \"0000\"\n")
    }

    @Test func aRefusedFileIsPrintedExactlyAsValidatePrintsItAndExitsOne() throws {
        let dir = try TemporaryDirectory()
        // A missing comma, a bad app ID and an unknown key: an error and warnings, each with its position.
        let broken = """
        {"applinks": {"details": [{"appIDs": ["not-an-app-id"], "components": [{"/": "/a"}] "extra": 1}]},
         "unknown": true}
        """
        let file = try dir.write("broken.json", broken)
        let validate = try AASABinary.run(["validate", file])
        #expect(validate.status == 1)
        #expect(validate.stdout.contains(": error: ") && validate.stdout.contains(": warning: ") && validate.stdout.hasSuffix(" in 1 file\n"))
        let validateJSON = try AASABinary.run(["validate", "--format", "json", file])
        let files = try #require(try validateJSON.json()["files"] as? [[String: Any]])
        let diagnostics = try JSONSerialization.data(withJSONObject: try #require(files.first?["diagnostics"]))
        let refusal = #"{"error":"invalid","diagnostics":"# + String(decoding: diagnostics, as: UTF8.self) + "}"
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized, r.method == "PUT", r.body == broken else { return answer("400 Bad Request", #"{"error":"unexpected request"}"#) }
            return answer("422 Unprocessable Content", refusal)
        }
        let token = try tokenFile(dir)
        let r = try site(["put", "example.com", "--file", file], api, tokenFile: token)
        #expect(r.status == 1)
        #expect(r.stdout == validate.stdout, "findings and summary line as validate prints them")
        #expect(r.stdout.hasPrefix("\(file):"))
        #expect(r.stderr == "aasa site put: example.com/\(aasaName): the server refused the file (422); nothing was stored\n")
        // From standard input, the findings are named by the site and file.
        let piped = try site(["put", "example.com"], api, tokenFile: token, input: broken)
        #expect(piped.status == 1)
        #expect(piped.stdout == validate.stdout.replacingOccurrences(of: file, with: "example.com/\(aasaName)"))
    }

    @Test func getPrintsTheStoredBytesAndAMissingFileIsExitOne() throws {
        let dir = try TemporaryDirectory()
        let stored = "{\"webauthn\":true}\n\u{0}raw bytes stay raw"
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized else { return unauthorized }
            switch (r.method, r.target) {
            case ("GET", "/sites/example.com/webauthn"):
                return ScriptedServer.response("200 OK", ["Content-Type: application/json", #"ETag: "9e""#], body: stored)
            case ("GET", "/sites/%2A.example.org/\(aasaName)"):
                return answer("404 Not Found", #"{"error":"*.example.org has no apple-app-site-association"}"#)
            default:
                return answer("400 Bad Request", #"{"error":"unexpected request"}"#)
            }
        }
        let token = try tokenFile(dir)
        let r = try site(["get", "example.com", "webauthn"], api, tokenFile: token)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == stored)
        let missing = try site(["get", "%2A.example.org"], api, tokenFile: token)
        #expect(missing.status == 1)
        #expect(missing.stdout.isEmpty)
        #expect(missing.stderr == "aasa site get: *.example.org/\(aasaName): 404 Not Found: *.example.org has no apple-app-site-association\n")
    }

    @Test func rmDeletesOneFileOrWithoutAFileTheWholeSite() throws {
        let dir = try TemporaryDirectory()
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized, r.method == "DELETE" else { return answer("400 Bad Request", #"{"error":"unexpected request"}"#) }
            switch r.target {
            case "/sites/example.com/assetlinks.json":
                return r.fields["if-match"] == #""5c""# ? ScriptedServer.response("204 No Content") : answer("412 Precondition Failed", #"{"error":"version differs"}"#)
            case "/sites/%2A.example.org": return ScriptedServer.response("204 No Content")
            default: return answer("404 Not Found", #"{"error":"no such site"}"#)
            }
        }
        let token = try tokenFile(dir)
        let file = try site(["rm", "example.com", "assetlinks.json", "--if-match", "5c"], api, tokenFile: token)
        #expect(file.status == 0, "\(file.stderr)")
        #expect(file.stdout == "example.com/assetlinks.json: 204 deleted\n")
        let whole = try site(["rm", "*.example.org"], api, tokenFile: token)
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(whole.stdout == "*.example.org: 204 deleted (the site and all its files)\n")
        let missing = try site(["rm", "gone.example.com"], api, tokenFile: token)
        #expect(missing.status == 1)
        #expect(missing.stderr == "aasa site rm: gone.example.com: 404 Not Found: no such site\n")
        #expect(api.requests.map { AdminRequest(Array($0.utf8)).target } == ["/sites/example.com/assetlinks.json", "/sites/%2A.example.org", "/sites/gone.example.com"])
    }

    @Test func aRefusedTokenOrAnAPIThatIsOffPrintsTheServersMessageAndExitsOne() throws {
        let dir = try TemporaryDirectory()
        let api = try ScriptedServer { bytes in AdminRequest(bytes).fields["authorization"] == nil ? unauthorized : answer("403 Forbidden", #"{"error":"the write API is off: start serve with --admin-token-file"}"#) }
        let none = try site(["get", "example.com"], api, tokenFile: nil)
        #expect(none.status == 1)
        #expect(none.stderr == "aasa site get: example.com/\(aasaName): 401 Unauthorized: a valid Authorization: Bearer token is required (no token was sent: give --token-file FILE or set AASA_TOKEN_FILE)\n")
        let off = try site(["rm", "example.com"], api, tokenFile: try tokenFile(dir))
        #expect(off.status == 1)
        #expect(off.stderr == "aasa site rm: example.com: 403 Forbidden: the write API is off: start serve with --admin-token-file\n")
        // A body that is not JSON is quoted, control characters escaped.
        let proxy = try ScriptedServer(fallback: ScriptedServer.response("503 Service Unavailable", body: "upstream\u{1b}[31m down"))
        let r = try site(["get", "example.com"], proxy, tokenFile: nil)
        #expect(r.status == 1)
        #expect(r.stderr == "aasa site get: example.com/\(aasaName): 503 Service Unavailable: upstream\\u{1b}[31m down\n")
    }

    @Test func lsFollowsNextUntilNullAndPrintsOneLinePerSite() throws {
        let pages: [String: String] = [
            "": #"{"summary":{"sites":3,"serving":2,"rejected":0,"stale":1},"sites":[{"host":"*.example.org","state":"serving","version":"a1","files":[{"name":"apple-app-site-association","state":"serving","version":"a1","error":null}]}],"next":"*.example.org","certificates":[]}"#,
            "%2A.example.org": #"{"summary":{"sites":3,"serving":2,"rejected":0,"stale":1},"sites":[{"host":"example.com","state":"stale","version":"b2","files":[{"name":"apple-app-site-association","state":"stale","version":"b2","error":{"message":"x","line":1,"column":2}},{"name":"assetlinks.json","state":"serving","version":"c3","error":null}]},{"host":"www.example.com","state":"serving","version":null,"files":[{"name":"webauthn","state":"serving","version":"d4","error":null}]}],"next":null,"certificates":[]}"#,
        ]
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.method == "GET", r.target.hasPrefix("/status?"), r.fields["authorization"] == nil else { return answer("400 Bad Request", #"{"error":"unexpected"}"#) }
            let query = r.target.dropFirst("/status?".count).split(separator: "&")
            let after = query.first { $0.hasPrefix("after=") }.map { String($0.dropFirst(6)) } ?? ""
            guard query.contains("limit=250"), let page = pages[after] else { return answer("400 Bad Request", #"{"error":"no page"}"#) }
            return answer("200 OK", page)
        }
        let dir = try TemporaryDirectory()
        let r = try site(["ls"], api, tokenFile: try tokenFile(dir))
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout == """
        *.example.org serving apple-app-site-association=serving
        example.com stale apple-app-site-association=stale assetlinks.json=serving
        www.example.com serving webauthn=serving

        """)
        #expect(api.requests.count == 2)
        #expect(api.requests.last?.hasPrefix("GET /status?limit=250&after=%2A.example.org HTTP/1.1\r\n") == true)
    }

    @Test func lsListsARealServersSitesAcrossPagesWithEachFilesState() throws {
        var sites: [String: String] = ["*.example.org": wildcardOrg, "bad.example.com": #"{"applinks": "#]
        for i in 0..<300 { sites["s\(String(format: "%03d", i)).example.net"] = exampleCom }
        let server = try ServerProcess(sites: sites) { config in
            try #"[{"relation": "#.write(to: config.appendingPathComponent("s007.example.net/assetlinks.json"), atomically: true, encoding: .utf8)
        }
        let r = try AASABinary.run(["site", "ls", "--admin", "127.0.0.1:\(server.admin)"], environment: ["AASA_TOKEN_FILE": ""], timeout: 60)
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 302)
        #expect(lines.first == "*.example.org serving apple-app-site-association=serving")
        #expect(lines.contains("bad.example.com rejected apple-app-site-association=rejected"))
        #expect(lines.contains("s007.example.net serving apple-app-site-association=serving assetlinks.json=rejected"))
        #expect(lines.last == "s299.example.net serving apple-app-site-association=serving")
        let rejected = try AASABinary.run(["site", "ls", "--state", "rejected", "--admin", "127.0.0.1:\(server.admin)"], timeout: 60)
        #expect(rejected.stdout == "bad.example.com rejected apple-app-site-association=rejected\n")
    }

    @Test func aServerThatCannotBeReachedIsExitTwo() throws {
        let dir = try TemporaryDirectory()
        let token = try tokenFile(dir)
        let file = try dir.write("aasa.json", exampleCom)
        let closed = try freePort()
        for args in [["put", "example.com", "--file", file], ["get", "example.com"], ["rm", "example.com"], ["ls"]] {
            let r = try AASABinary.run(["site"] + args + ["--admin", "127.0.0.1:\(closed)", "--token-file", token], timeout: 60)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(r.stderr.hasPrefix("aasa site \(args[0]): cannot reach the admin listener at http://127.0.0.1:\(closed): "), "\(r.stderr)")
            #expect(r.stderr.contains("Connection refused"))
        }
        // A server that accepts and never answers: the time-out, then the same exit status.
        let silent = try ScriptedServer(silent: true)
        let hung = try AASABinary.run(["site", "get", "example.com", "--admin", "127.0.0.1:\(silent.port)", "--timeout", "0.5"], timeout: 60)
        #expect(hung.status == 2)
        #expect(hung.stderr.contains("cannot reach the admin listener at http://127.0.0.1:\(silent.port): no response within 0.5 s"), "\(hung.stderr)")
        // An answer cut short is no answer either.
        let cut = try ScriptedServer(fallback: Array("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"ab".utf8))
        let broken = try AASABinary.run(["site", "get", "example.com", "--admin", "127.0.0.1:\(cut.port)"], timeout: 60)
        #expect(broken.status == 2)
        #expect(broken.stdout.isEmpty)
        #expect(broken.stderr.hasPrefix("aasa site get: no complete answer from the admin listener at http://127.0.0.1:\(cut.port): "), "\(broken.stderr)")
    }

    @Test func badUsageIsExitTwoAndSendsNothing() throws {
        let dir = try TemporaryDirectory()
        let token = try tokenFile(dir)
        let blank = try dir.write("blank.token", "# nothing yet\n\n")
        let api = try ScriptedServer(fallback: answer("200 OK", "{}"))
        let cases: [([String], [String: String], String)] = [
            (["get", "https://example.com/", "--token-file", token], [:], "is not a site name"),
            (["get", "example.com", "robots.txt", "--token-file", token], [:], "robots.txt is not an association file"),
            (["get", "example.com", "--token-file", dir.url.appendingPathComponent("missing").path], [:], "--token-file: "),
            (["get", "example.com", "--token-file", blank], [:], "no token in the file"),
            (["get", "example.com"], ["AASA_TOKEN_FILE": blank], "AASA_TOKEN_FILE \(blank): no token in the file"),
            (["rm", "example.com", "--if-match", "a b", "--token-file", token], [:], "--if-match"),
            (["ls", "--state", "broken"], [:], "--state: expected serving, rejected or stale"),
            (["put", "example.com", "--file", dir.url.appendingPathComponent("absent.json").path, "--token-file", token], [:], "--file: "),
        ]
        for (args, environment, message) in cases {
            let r = try site(args, api, tokenFile: nil, environment: environment)
            #expect(r.status == 2, "\(args)")
            #expect(r.stderr.contains(message), "\(args): \(r.stderr)")
            #expect(r.stderr.contains("Usage: aasa site \(args[0])"), "\(r.stderr)")
            #expect(!r.stderr.contains(token), "a token never appears in a message")
        }
        let off = try AASABinary.run(["site", "ls"], environment: ["AASA_ADMIN": "off"])
        #expect(off.status == 2)
        #expect(off.stderr.contains("the admin listener is off (AASA_ADMIN=off)"), "\(off.stderr)")
        #expect(api.requests.isEmpty)
    }

    @Test func theAdminAddressAndTokenFileComeFromTheEnvironmentAndAURLPathIsAPrefix() throws {
        let dir = try TemporaryDirectory()
        let api = try ScriptedServer { bytes in
            let r = AdminRequest(bytes)
            guard r.isAuthorized, r.target == "/aasa/sites/example.com/\(aasaName)" else { return answer("404 Not Found", #"{"error":"wrong path \#(r.target)"}"#) }
            return ScriptedServer.response("200 OK", body: exampleCom)
        }
        let token = try tokenFile(dir)
        let plain = try AASABinary.run(["site", "get", "example.com", "--admin", "http://127.0.0.1:\(api.port)/aasa/"], environment: ["AASA_TOKEN_FILE": token])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stdout == exampleCom)
        let bare = try AASABinary.run(["site", "get", "example.com"], environment: ["AASA_ADMIN": "127.0.0.1:\(api.port)", "AASA_TOKEN_FILE": token])
        #expect(bare.status == 1, "ADDR:PORT is the listener itself, with no prefix")
        #expect(bare.stderr.contains("wrong path /sites/example.com/\(aasaName)"), "\(bare.stderr)")
    }

    @Test func anHTTPSAdminListenerIsTrustedThroughCacert() throws {
        let dir = try TemporaryDirectory()
        let api = try ScriptedServer { bytes in
            AdminRequest(bytes).isAuthorized ? ScriptedServer.response("200 OK", body: exampleCom) : unauthorized
        }
        let front = try TLSFront(backend: api.port, certificatePEM: try TestCertificates.issue(commonName: "localhost", names: "DNS:localhost", days: 30))
        let token = try tokenFile(dir)
        let url = "https://localhost:\(front.port)"
        let trusted = try AASABinary.run(["site", "get", "example.com", "--admin", url, "--cacert", TestCertificates.caFile, "--token-file", token])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(trusted.stdout == exampleCom)
        // Without the private CA the certificate does not verify: no answer, exit 2.
        let untrusted = try AASABinary.run(["site", "get", "example.com", "--admin", url, "--token-file", token])
        #expect(untrusted.status == 2)
        #expect(untrusted.stderr.contains("the certificate does not verify for localhost"), "\(untrusted.stderr)")
    }
}
