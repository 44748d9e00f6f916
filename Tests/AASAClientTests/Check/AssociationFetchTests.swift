import Testing
@testable import AASAClient

@Suite struct AssociationFetchTests {
    private let base = HTTPURL(isSecure: true, host: "example.com", target: "/.well-known/assetlinks.json?x=1")

    /// A `Location` is a URI reference (RFC 9110 §10.2.2), resolved as RFC 3986 §5.2 says.
    @Test func aLocationIsResolvedAgainstTheURLAsked() {
        #expect(AssociationFetch.resolve("https://www.example.com/a", against: base)?.description == "https://www.example.com/a")
        #expect(AssociationFetch.resolve("//cdn.example.net/b", against: base)?.description == "https://cdn.example.net/b")
        #expect(AssociationFetch.resolve("/c?d", against: base)?.description == "https://example.com/c?d")
        #expect(AssociationFetch.resolve("e.json#f", against: base)?.description == "https://example.com/.well-known/e.json")
        #expect(AssociationFetch.resolve("http://example.com/g", against: base)?.isSecure == false)
        #expect(AssociationFetch.resolve("https://example.com:8443/h", against: base)?.port == 8443)
    }

    @Test func aLocationThatIsNoURLIsRefused() {
        #expect(AssociationFetch.resolve("", against: base) == nil)
        #expect(AssociationFetch.resolve("mailto:a@example.com", against: base) == nil)
        #expect(AssociationFetch.resolve("/a b", against: base) == nil)
        #expect(AssociationFetch.resolve("/a\u{1b}[2J", against: base) == nil)
    }
}
