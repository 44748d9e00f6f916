import Testing
@testable import AASACore

@Suite struct URLPartsTests {
    @Test func splitsAURLIntoItsRawParts() throws {
        let u = try URLParts("HTTPS://user:pw@Example.COM.:8443/a%20b/c?x=1&y#frag?x")
        #expect(u.scheme == "https")
        #expect(u.host == "example.com")
        #expect(u.port == 8443)
        #expect(u.path == "/a%20b/c")
        #expect(u.query == "x=1&y")
        #expect(u.fragment == "frag?x")
    }

    @Test func distinguishesAnEmptyQueryFromNone() throws {
        #expect(try URLParts("https://a.com/x?").query == "")
        #expect(try URLParts("https://a.com/x").query == nil)
        #expect(try URLParts("https://a.com").path == "")
        #expect(try URLParts("https://[::1]:8443/x").host == "[::1]")
    }

    @Test func writesInternationalHostsInPunycode() throws {
        #expect(try URLParts("https://Bücher.example/caf\u{e9}").host == "xn--bcher-kva.example")
        #expect(try URLParts("https://Bücher.example/caf\u{e9}").path == "/caf%C3%A9")
        #expect(try URLParts("https://user@münchen.de:8443/x").host == "xn--mnchen-3ya.de")
        #expect(try URLParts("https://例え.jp/").host == "xn--r8jz45g.jp")
        #expect(Punycode.host("example.com") == "example.com")
    }

    @Test func encodesCharactersABrowserWouldEncode() throws {
        #expect(try URLParts("https://a.com/caf\u{e9} x").path == "/caf%C3%A9%20x")
    }

    @Test(arguments: ["example.com/x", "https:/x", "https://", "://a", "https://a.com:99999/", "https://[::1/"])
    func rejectsWhatIsNotAnAbsoluteURL(text: String) {
        #expect(throws: URLParts.ParseError.self) { try URLParts(text) }
    }

    @Test func decodesValidEscapesAndKeepsInvalidOnes() {
        #expect(URLParts.percentDecoded("a%20b%2Fc%zz%4") == "a b/c%zz%4")
        #expect(URLParts.percentDecoded("%FF") == "\u{FFFD}")
    }
}
