import Testing
@testable import AASACore

@Suite struct WebOriginTests {
    @Test(arguments: ["https://example.com", "https://example.com:8443", "https://EXAMPLE.com", "https://a-b.c_d.example",
                      "https://[::1]:8443", "https://127.0.0.1", "https://xn--bcher-kva.example", "https://localhost"])
    func anOriginIsSchemeHostAndPort(origin: String) {
        #expect(WebOrigin.check(origin, schemes: ["https"]) == .valid)
    }

    @Test(arguments: [
        ("http://example.com", "scheme"), ("HTTPS://example.com", "lower case"), ("example.com", "expected"),
        ("https://", "no host"), ("https://user@example.com", "user info"), ("https://example.com/a", "path"),
        ("https://example.com?x=1", "query"), ("https://example.com/?x=1", "query"), ("https://example.com#f", "fragment"),
        ("https://example.com:0", "port"), ("https://example.com:65536", "port"), ("https://example.com:", "port"),
        ("https://bücher.example", "punycode"), ("https://example.com.", "dot"), ("https://-a.example", "valid host"),
        ("https://a..example", "valid host"), ("https://[::1", "']'"), (" https://example.com", "white space"),
    ])
    func anythingElseIsRefusedWithTheReason(origin: String, reason: String) {
        guard case .invalid(let why) = WebOrigin.check(origin, schemes: ["https"]) else {
            Issue.record("\(origin) was accepted")
            return
        }
        #expect(why.contains(reason), "\(why)")
    }

    @Test func aTrailingSlashIsReportedApart() {
        #expect(WebOrigin.check("https://example.com/", schemes: ["https"]) == .trailingSlash)
        #expect(WebOrigin.check("http://example.com:8080/", schemes: ["https", "http"]) == .trailingSlash)
    }
}
