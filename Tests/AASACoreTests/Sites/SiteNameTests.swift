import Testing
@testable import AASACore

@Suite struct SiteNameTests {
    @Test func parsesHostsAndWildcards() {
        #expect(SiteName("example.com")?.isWildcard == false)
        #expect(SiteName("*.example.org") == SiteName("*.example.org"))
        #expect(SiteName("*.example.org")?.host == "example.org")
        #expect(SiteName("xn--bcher-kva.example")?.host == "xn--bcher-kva.example")
    }

    @Test(arguments: ["Example.com", "example.com.", "example.com:443", "*example.com", "a..b", "-a.com", "", "*.", "a b.com", "bücher.de"])
    func rejectsNamesThatAreNotNormalizedHosts(name: String) {
        #expect(SiteName(name) == nil)
    }

    @Test func aWildcardServesSubdomainsOfAnyDepthButNotItsBase() {
        let w = SiteName("*.example.org")!
        #expect(w.serves("a.example.org"))
        #expect(w.serves("a.b.example.org"))
        #expect(!w.serves("example.org"))
        #expect(!w.serves("badexample.org"))
    }

    @Test func lookupPrefersExactThenTheMostSpecificWildcard() {
        let index = SiteIndex([(SiteName("*.example.org")!, 1), (SiteName("*.b.example.org")!, 2), (SiteName("x.b.example.org")!, 3)])
        #expect(index.lookup("a.b.example.org")?.value == 2)
        #expect(index.lookup("a.c.example.org")?.value == 1)
        #expect(index.lookup("x.b.example.org")?.value == 3)
        #expect(index.lookup("other.com") == nil)
        #expect(index.lookup("org") == nil)
    }

    @Test func aWildcardFolderServesItsBaseNameWhenThatHasNoFolder() {
        let wildcardOnly = SiteIndex([(SiteName("*.example.org")!, 1)])
        #expect(wildcardOnly.lookup("example.org")?.value == 1)
        #expect(wildcardOnly.lookup("example.org")?.name == SiteName("*.example.org"))
        #expect(wildcardOnly.lookup("a.example.org")?.value == 1)
        #expect(wildcardOnly.lookup("badexample.org") == nil)

        let withBase = SiteIndex([(SiteName("*.example.org")!, 1), (SiteName("example.org")!, 2)])
        #expect(withBase.lookup("example.org")?.value == 2, "an exact folder wins over the wildcard's base")
        #expect(withBase.lookup("a.example.org")?.value == 1)
    }

    @Test func theBaseOfADeeperWildcardIsMoreSpecificThanAShallowerWildcard() {
        let index = SiteIndex([(SiteName("*.example.org")!, 1), (SiteName("*.b.example.org")!, 2)])
        #expect(index.lookup("b.example.org")?.value == 2)
        #expect(index.lookup("c.example.org")?.value == 1)
    }
}
