import Testing
@testable import AASAHTTP

/// Parses `text` in one piece.
func parse(_ text: String, limits: HTTPLimits = HTTPLimits()) -> RequestParser.Result {
    var parser = RequestParser(limits: limits)
    return Array(text.utf8).withUnsafeBytes { parser.parse($0) }
}

func request(_ text: String) throws -> HTTPRequest {
    guard case .request(let r, _) = parse(text) else {
        Issue.record("not a request: \(parse(text))")
        throw HTTPError(.badRequest, "test")
    }
    return r
}

func status(_ text: String) -> Int? {
    if case .error(let e) = parse(text) { return e.status.rawValue }
    return nil
}

@Suite struct RequestParserTests {
    @Test func parsesAnOriginFormRequest() throws {
        let text = "GET /.well-known/apple-app-site-association?x=1 HTTP/1.1\r\nHost: Example.COM.:8443\r\nUser-Agent: AASA-Bot/1.0.0\r\nIf-None-Match: \"abc\"\r\n\r\n"
        guard case .request(let r, let length) = parse(text) else { Issue.record("no request"); return }
        #expect(length == text.utf8.count)
        #expect(r.method == .get)
        #expect(r.path == "/.well-known/apple-app-site-association")
        #expect(r.host == "example.com")
        #expect(r.version == .http11)
        #expect(r.keepAlive)
        #expect(r.userAgent == "AASA-Bot/1.0.0")
        #expect(r.ifNoneMatch == "\"abc\"")
    }

    @Test func oneParserGivesEachRequestOfAConnectionItsOwnHostAndAgent() throws {
        // The parser remembers the last Host and User-Agent; a change must never be missed.
        var parser = RequestParser()
        func next(_ text: String) -> RequestParser.Result {
            defer { parser.reset() }
            return Array(text.utf8).withUnsafeBytes { parser.parse($0) }
        }
        let heads = [("A.example.com", "a.example.com", "one"), ("A.example.com", "a.example.com", "one"),
                     ("b.example.com:443", "b.example.com", "two"), ("A.example.com", "a.example.com", "one")]
        for (sent, host, agent) in heads {
            guard case .request(let r, _) = next("GET / HTTP/1.1\r\nHost: \(sent)\r\nUser-Agent: \(agent)\r\n\r\n") else {
                Issue.record("no request for \(sent)")
                return
            }
            #expect(r.host == host && r.userAgent == agent)
        }
        guard case .error(let e) = next("GET / HTTP/1.1\r\nHost: a..example.com\r\n\r\n") else {
            Issue.record("an invalid Host after valid ones was accepted")
            return
        }
        #expect(e.status == .badRequest)
        guard case .request(let r, _) = next("GET / HTTP/1.1\r\nHost: a.example.com\r\n\r\n") else { return }
        #expect(r.host == "a.example.com" && r.userAgent == nil)
    }

    @Test func aRequestParsedIntoTheLastOneKeepsNothingOfIt() throws {
        // The server's session parses each request into the one before it (parse(_:into:)):
        // every field must be written, a field not sent as the empty value.
        var parser = RequestParser()
        var request = HTTPRequest()
        let first = "POST /a?b HTTP/1.1\r\nHost: a.example.com\r\nUser-Agent: one\r\nIf-None-Match: \"x\"\r\n"
            + "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\nAuthorization: Bearer t\r\nIf-Match: \"y\"\r\n"
            + "AASA-Check: 1\r\nContent-Length: 3\r\nConnection: close\r\n\r\n"
        guard case .complete = Array(first.utf8).withUnsafeBytes({ parser.parse($0, into: &request) }) else {
            Issue.record("no first request")
            return
        }
        request.body = [1, 2, 3]
        parser.reset()
        let second = "HEAD / HTTP/1.0\r\n\r\n"
        guard case .complete = Array(second.utf8).withUnsafeBytes({ parser.parse($0, into: &request) }) else {
            Issue.record("no second request")
            return
        }
        #expect(request == HTTPRequest(method: .head, target: "/", path: "/", host: nil, version: .http10, keepAlive: false))
    }

    @Test func aKnownTargetIsHandedOutAsItsOwnStringAndAnyOtherIsMade() throws {
        let known = "/.well-known/apple-app-site-association", other = "/.well-known/apple-app-site-associatioN"
        let targets = InternedTargets(["/x", known])
        var parser = RequestParser(targets: targets)
        func next(_ target: String) -> HTTPRequest? {
            defer { parser.reset() }
            guard case .request(let r, _) = Array("GET \(target) HTTP/1.1\r\nHost: a.example\r\n\r\n".utf8).withUnsafeBytes({ parser.parse($0) })
            else { return nil }
            return r
        }
        /// Where a String's bytes are: the same address is the same String.
        func storage(_ s: String) -> UnsafePointer<UInt8>? {
            var s = s
            return s.withUTF8 { $0.baseAddress }
        }
        let interned = try #require(Array(known.utf8).withUnsafeBufferPointer { targets.text(for: $0) })
        let hit = try #require(next(known))
        #expect(hit.path == known && hit.target == known)
        #expect(storage(hit.path) == storage(interned) && storage(hit.target) == storage(interned))
        // Same length, one byte different; a query; a prefix: each made from its bytes.
        for target in [other, known + "?x=1", "/.well-known/apple-app-site-associatio"] {
            let r = try #require(next(target))
            #expect(r.target == target)
            #expect(storage(r.target) != storage(interned))
        }
        #expect(next(known + "?x=1")?.path == known)
        #expect(next("http://a.example\(known)")?.path == known)
    }

    @Test func fieldNamesAreFoundInAnyCaseAndNearMissesAreNot() throws {
        let r = try request("GET / HTTP/1.1\r\nhOsT: a.example\r\nUSER-AGENT: x/1\r\nIF-none-MATCH: \"v\"\r\n"
            + "If-Modified-Since: then\r\nCONTENT-length: 3\r\nCONNECTION: Close\r\n\r\nabc")
        #expect(r.host == "a.example" && r.userAgent == "x/1" && r.ifNoneMatch == "\"v\"" && r.ifModifiedSince == "then")
        #expect(r.contentLength == 3 && !r.keepAlive)
        #expect(try request("GET / HTTP/1.1\r\nHost: a.example\r\nTransfer-ENCODING: chunked\r\n\r\n").hasUnframedBody)
        // One character off, or `_` for `-`: other fields.
        #expect(status("GET / HTTP/1.1\r\nHosx: a.example\r\n\r\n") == 400)
        let near = try request("GET / HTTP/1.1\r\nHost: a.example\r\nuser_agent: x\r\nuser-agenT: y\r\ncontent-lengtx: 9\r\n\r\n")
        #expect(near.userAgent == "y" && near.contentLength == 0)
    }

    @Test func theAbsoluteFormHostWinsOverTheHostField() throws {
        let r = try request("GET https://WWW.example.com/apple-app-site-association HTTP/1.1\r\nHost: other.com\r\n\r\n")
        #expect(r.host == "www.example.com")
        #expect(r.path == "/apple-app-site-association")
        #expect(try request("GET http://example.com HTTP/1.1\r\nHost: x\r\n\r\n").path == "/")
    }

    @Test func keepAliveFollowsTheVersionAndConnectionField() throws {
        #expect(try request("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keepAlive == false)
        #expect(try request("GET / HTTP/1.0\r\n\r\n").keepAlive == false)
        #expect(try request("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").keepAlive == true)
        #expect(try request("GET / HTTP/1.0\r\n\r\n").host == nil)
        #expect(try request("GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, close\r\n\r\n").keepAlive == false)
    }

    @Test func needsMoreUntilTheHeadIsCompleteWhateverTheSplit() {
        let text = Array("\r\nGET /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n".utf8)
        for split in 0..<text.count {
            var parser = RequestParser()
            let first = Array(text[0..<split]).withUnsafeBytes { parser.parse($0) }
            #expect(first == .needMore, "split at \(split)")
            let second = text.withUnsafeBytes { parser.parse($0) }
            guard case .request(let r, let length) = second else { Issue.record("split \(split): \(second)"); continue }
            #expect(length == text.count)
            #expect(r.contentLength == 3)
        }
    }

    @Test func aBareLFIsFoundWhereverTheInputIsSplitAndACRLFSplitInTwoIsNot() {
        for text in ["GET / HTTP/1.1\nHost: a\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", "GET / HTTP/1.1\r\nHost: a\r\n\n",
                     "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"].map({ Array($0.utf8) }) {
            for split in 1..<text.count {
                var parser = RequestParser()
                var result = Array(text[0..<split]).withUnsafeBytes { parser.parse($0) }
                if result == .needMore { result = text.withUnsafeBytes { parser.parse($0) } }
                #expect(result == .error(HTTPError(.badRequest, "bare LF as a line ending")), "split at \(split)")
            }
        }
        let good = Array("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        for split in 1..<good.count {
            var parser = RequestParser()
            var result = Array(good[0..<split]).withUnsafeBytes { parser.parse($0) }
            if result == .needMore { result = good.withUnsafeBytes { parser.parse($0) } }
            guard case .request(let r, let length) = result else { Issue.record("split at \(split): \(result)"); continue }
            #expect(r.host == "a" && length == good.count)
        }
    }

    @Test func aBareCRIsFoundWhereverTheInputIsSplit() {
        let text = Array("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n".utf8)
        for split in 1..<text.count {
            var parser = RequestParser()
            var result = Array(text[0..<split]).withUnsafeBytes { parser.parse($0) }
            if result == .needMore { result = text.withUnsafeBytes { parser.parse($0) } }
            #expect(result == .error(HTTPError(.badRequest, "bare CR in the request head")), "split at \(split)")
        }
    }

    /// A head that arrives a byte at a time is scanned once (the parser resumes where it
    /// stopped), and the 16 KiB limit trips on the byte that crosses it, before any CRLF.
    @Test func byteAtATimeTripsTheLimitExactlyWhenItIsCrossed() {
        var parser = RequestParser()
        let prefix = Array("GET / HTTP/1.1\r\n".utf8)
        var buffer = prefix
        var result = RequestParser.Result.needMore
        while result == .needMore, buffer.count < 40_000 {
            buffer.append(UInt8(ascii: "a"))
            result = buffer.withUnsafeBytes { parser.parse($0) }
        }
        #expect(result == .error(HTTPError(.requestHeaderFieldsTooLarge, "header section longer than 16384 bytes")))
        // The head (request line and fields) reached exactly 16 KiB when it was refused.
        #expect(buffer.count == HTTPLimits().maxHeaderBytes + 1)
    }

    @Test func aRequestLineOfExactlyTheLimitIsAllowed() throws {
        let path = "/" + String(repeating: "a", count: HTTPLimits().maxRequestLine - "GET  HTTP/1.1".utf8.count - 1)
        let line = "GET \(path) HTTP/1.1"
        #expect(line.utf8.count == HTTPLimits().maxRequestLine)
        #expect(try request(line + "\r\nHost: a\r\n\r\n").path == path)
        #expect(status("GET \(path)a HTTP/1.1\r\nHost: a\r\n\r\n") == 414)
    }

    @Test func leavesPipelinedBytesForTheNextRequest() {
        let text = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n"
        guard case .request(let r, let length) = parse(text) else { Issue.record("no request"); return }
        #expect(r.path == "/a")
        #expect(length == text.utf8.count / 2)
    }

    @Test func discardsABodyWithinTheLimitAndMarksUnframedBodies() throws {
        #expect(try request("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 65536\r\n\r\n").contentLength == 65536)
        let chunked = try request("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(chunked.hasUnframedBody)
        #expect(!chunked.keepAlive)
        let mixedCase = try request("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n")
        #expect(mixedCase.hasUnframedBody)
    }

    @Test func answersAnyOtherTransferCodingWith501() {
        for coding in ["identity", "xchunked", "chunked, identity", "gzip, chunked", "chunked, chunked", ""] {
            guard case .error(let e) = parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \(coding)\r\n\r\n") else {
                Issue.record("\(coding): not refused")
                continue
            }
            #expect(e.status == .notImplemented, "\(coding)")
        }
    }

    @Test func userinfoInTheHostOrTheTargetIsRefused() {
        // RFC 9110 §4.2.4: userinfo is an error, not something to strip.
        #expect(status("GET / HTTP/1.1\r\nHost: evil@example.com\r\n\r\n") == 400)
        #expect(status("GET / HTTP/1.1\r\nHost: @example.com\r\n\r\n") == 400)
        #expect(status("GET http://evil@example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n") == 400)
        #expect(status("GET https://user:pass@example.com/x HTTP/1.1\r\n\r\n") == 400)
        #expect(RequestParser.normalizeHost("evil@example.com") == nil)
    }

    @Test func emptyLabelsAreRefusedButOneTrailingDotIsRemoved() {
        #expect(status("GET / HTTP/1.1\r\nHost: example.com..\r\n\r\n") == 400)
        for bad in ["example.com..", "example..com", ".example.com", ".", "..", "example.com..:443"] {
            #expect(RequestParser.normalizeHost(bad) == nil, "\(bad)")
        }
        #expect(RequestParser.normalizeHost("Example.COM.") == "example.com")
        #expect(RequestParser.normalizeHost("example.com.:8443") == "example.com")
        #expect(RequestParser.normalizeHost("a.:") == "a")
    }

    @Test func hostsAreRegNamesIPv4OrBracketedIPv6WithAnOptionalPort() {
        #expect(RequestParser.normalizeHost("www.example.com:443") == "www.example.com")
        #expect(RequestParser.normalizeHost("127.0.0.1:8080") == "127.0.0.1")
        #expect(RequestParser.normalizeHost("[::1]:8443") == "[::1]")
        #expect(RequestParser.normalizeHost("[2001:DB8::1]") == "[2001:db8::1]")
        #expect(RequestParser.normalizeHost("xn--bcher-kva.example") == "xn--bcher-kva.example")
        #expect(RequestParser.normalizeHost("a_b.example") == "a_b.example")
        // Characters outside reg-name (RFC 3986 §3.2.2), ports that are not digits, and IPv6
        // without brackets.
        for bad in ["exa#mple.com", "exa^mple.com", "exa|mple.com", "exa`mple.com", "a b", "a/b", "a:x", "a:1:2",
                    "::1", "[::1", "[::1]x", "[]", "[::g]", "%zz.example", ""] {
            #expect(RequestParser.normalizeHost(bad) == nil, "\(bad)")
        }
    }
}
