import Testing
@testable import AASAHTTP

/// Feeds `text` split once at `split`, then ends the input when `close` is set.
private func parsed(_ bytes: [UInt8], split: Int, close: Bool = false, head: Bool = false,
                    limits: ResponseParser.Limits = .init()) throws(ResponseParseError) -> ResponseParser {
    var parser = ResponseParser(limits: limits, isResponseToHEAD: head)
    try parser.parse(bytes[0..<split])
    try parser.parse(bytes[split...])
    if close { try parser.endOfInput() }
    return parser
}

/// The result of feeding the whole response split at every boundary, one and two pieces at a time.
private func everySplit(_ text: String, close: Bool = false, head: Bool = false,
                        check: (ResponseParser) -> Void) {
    let bytes = Array(text.utf8)
    for split in 0...bytes.count {
        do {
            check(try parsed(bytes, split: split, close: close, head: head))
        } catch {
            Issue.record("split at \(split): \(error)")
        }
    }
    // One byte at a time.
    var parser = ResponseParser(isResponseToHEAD: head)
    do {
        for b in bytes { try parser.parse([b]) }
        if close { try parser.endOfInput() }
        check(parser)
    } catch {
        Issue.record("byte by byte: \(error)")
    }
}

@Suite struct ResponseParserTests {
    @Test func readsAContentLengthBodyWhateverTheSplit() {
        let text = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\nX-Empty:\r\n\r\n{\"a\":1}"
        everySplit(text) { p in
            #expect(p.isComplete)
            #expect(p.head?.status == 200)
            #expect(p.head?.reason == "OK")
            #expect(p.head?["content-type"] == "application/json")
            #expect(p.head?["X-Empty"] == "")
            #expect(String(decoding: p.body, as: UTF8.self) == "{\"a\":1}")
        }
    }

    @Test func readsAChunkedBodyWithExtensionsAndTrailersWhateverTheSplit() {
        let text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\n{\"a\"\r\nA\r\n:12345678}\r\n0\r\nX-Trailer: t\r\n\r\n"
        everySplit(text) { p in
            #expect(p.isComplete)
            #expect(String(decoding: p.body, as: UTF8.self) == "{\"a\":12345678}")
        }
    }

    @Test func readsABodyThatEndsWithTheConnection() {
        let text = "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>hello</html>"
        everySplit(text, close: true) { p in
            #expect(p.isComplete)
            #expect(p.head?.version == "HTTP/1.0")
            #expect(String(decoding: p.body, as: UTF8.self) == "<html>hello</html>")
        }
    }

    @Test func aRedirectKeepsItsLocationAndEmptyBody() {
        let text = "HTTP/1.1 301 Moved Permanently\r\nLocation: https://www.example.com/.well-known/apple-app-site-association\r\nContent-Length: 0\r\n\r\n"
        everySplit(text) { p in
            #expect(p.isComplete)
            #expect(p.head?.status == 301)
            #expect(p.head?.statusText == "301 Moved Permanently")
            #expect(p.head?["Location"] == "https://www.example.com/.well-known/apple-app-site-association")
            #expect(p.body.isEmpty)
        }
    }

    @Test func interimResponsesAreSkipped() {
        let text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno"
        everySplit(text) { p in
            #expect(p.head?.status == 404)
            #expect(p.body == Array("no".utf8))
        }
    }

    @Test func aResponseToHEADOr304HasNoBody() {
        everySplit("HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n", head: true) { p in
            #expect(p.isComplete)
            #expect(p.body.isEmpty)
        }
        everySplit("HTTP/1.1 304 Not Modified\r\nETag: \"x\"\r\n\r\n") { p in
            #expect(p.isComplete)
            #expect(p.head?.status == 304)
        }
    }

    @Test func bareLineFeedsAndFoldedFieldsAreAccepted() throws {
        let p = try parsed(Array("HTTP/1.1 200 OK\nA: one\n  two\nContent-Length: 1\n\nx".utf8), split: 0)
        #expect(p.head?["a"] == "one two")
        #expect(p.body == [UInt8(ascii: "x")])
    }

    @Test func theBodyLimitStopsReadingWithAClearError() {
        let limits = ResponseParser.Limits(maxBodyBytes: 10)
        // Declared too large: refused as soon as the head arrives.
        #expect(throws: ResponseParseError.bodyTooLarge(limit: 10)) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n".utf8), split: 0, limits: limits)
        }
        // Exactly at the limit is fine.
        #expect(throws: Never.self) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789".utf8), split: 20, limits: limits)
        }
        // Chunked and close-delimited bodies trip it while they arrive; the head is kept.
        var chunked = ResponseParser(limits: limits)
        #expect(throws: ResponseParseError.bodyTooLarge(limit: 10)) {
            try chunked.parse(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\n012345\r\n5\r\n".utf8))
        }
        #expect(chunked.head?.status == 200)
        var open = ResponseParser(limits: limits)
        #expect(throws: ResponseParseError.bodyTooLarge(limit: 10)) {
            try open.parse(Array("HTTP/1.1 200 OK\r\n\r\n0123456789".utf8))
            try open.parse(Array("a".utf8))
        }
        #expect(ResponseParseError.bodyTooLarge(limit: 1_048_576).description.contains("1048576 bytes"))
    }

    @Test func theHeadLimitStopsAnEndlessHead() {
        var p = ResponseParser(limits: .init(maxHeadBytes: 64))
        #expect(throws: ResponseParseError.headTooLarge(limit: 64)) {
            try p.parse(Array("HTTP/1.1 200 OK\r\nX: \(String(repeating: "a", count: 100))".utf8))
        }
    }

    @Test func endlessInterimResponsesCountTowardTheHeadLimit() {
        var p = ResponseParser(limits: .init(maxHeadBytes: 1000))
        let interim = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
        #expect(throws: ResponseParseError.headTooLarge(limit: 1000)) {
            for _ in 0..<100 { try p.parse(interim) }
        }
        // A few interim responses before the real one are still fine.
        everySplit("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx") { p in
            #expect(p.head?.status == 200)
        }
    }

    @Test func theTrailerSectionIsBounded() {
        var p = ResponseParser(limits: .init(maxTrailerBytes: 1000))
        #expect(throws: ResponseParseError.trailersTooLarge(limit: 1000)) {
            try p.parse(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n".utf8))
            for _ in 0..<100 { try p.parse(Array("X-Trailer: tttttttttttttttttttt\r\n".utf8)) }
        }
        #expect(ResponseParseError.trailersTooLarge(limit: 65536).description == "the trailer section is larger than 65536 bytes")
    }

    @Test func aChunkSizeIsHexDigitsOnly() {
        for size in ["+5", "-0", " +5", "0x5", "5 5"] {
            #expect(throws: ResponseParseError.self, "\(size.debugDescription)") {
                _ = try parsed(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\(size)\r\nhello\r\n0\r\n\r\n".utf8), split: 0)
            }
        }
        everySplit("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000A\r\n0123456789\r\n0\r\n\r\n") { p in
            #expect(p.body.count == 10)
        }
    }

    @Test func malformedResponsesAreErrors() {
        #expect(throws: ResponseParseError.self) { _ = try parsed(Array("SSH-2.0-OpenSSH\r\n\r\n".utf8), split: 0) }
        #expect(throws: ResponseParseError.self) { _ = try parsed(Array("HTTP/1.1 20 OK\r\n\r\n".utf8), split: 0) }
        #expect(throws: ResponseParseError.self) { _ = try parsed(Array("HTTP/1.1 200 OK\r\nno colon\r\n\r\n".utf8), split: 0) }
        #expect(throws: ResponseParseError.invalidContentLength("1, 2")) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n".utf8), split: 0)
        }
        #expect(throws: ResponseParseError.invalidContentLength("-1")) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n".utf8), split: 0)
        }
        #expect(throws: ResponseParseError.unsupportedTransferEncoding("gzip")) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n".utf8), split: 0)
        }
        #expect(throws: ResponseParseError.self) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".utf8), split: 0)
        }
        #expect(throws: ResponseParseError.self) {
            _ = try parsed(Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n".utf8), split: 0)
        }
    }

    @Test func aResponseCutShortIsTruncated() {
        for text in ["HTTP/1.1 200 OK\r\nContent-Le", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
                     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", ""] {
            #expect(throws: ResponseParseError.truncated, "\(text.debugDescription)") {
                _ = try parsed(Array(text.utf8), split: 0, close: true)
            }
        }
    }

    @Test func bytesAfterACompleteResponseAreIgnored() throws {
        let p = try parsed(Array("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 500 Oops\r\n\r\n".utf8), split: 0)
        #expect(p.head?.status == 200)
        #expect(p.body == [UInt8(ascii: "x")])
    }
}
