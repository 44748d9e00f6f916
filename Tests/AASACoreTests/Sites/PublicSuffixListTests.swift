import Testing
@testable import AASACore

/// The Public Suffix List's own algorithm (https://publicsuffix.org/list/), on a few rules of
/// its forms, and the names a site folder may not have.
@Suite struct PublicSuffixListTests {
    let list = PublicSuffixList(text: """
        // a comment
        com
        co.uk
        *.ck
        !www.ck
        github.io
        公司.cn
        """)

    @Test func rulesExceptionsWildcardsAndTheDefaultRule() {
        for suffix in ["com", "co.uk", "any.ck", "github.io", "xn--55qx5d.cn", "localhost", "cn"] {
            #expect(list.isPublicSuffix(suffix), "\(suffix)")
        }
        for name in ["example.com", "uk", "www.ck", "a.any.ck", "pages.github.io", "example.co.uk"] {
            if name == "uk" { #expect(list.isPublicSuffix(name), "a single label: the default rule"); continue }
            #expect(!list.isPublicSuffix(name), "\(name)")
        }
        #expect(list.count == 6)
    }

    @Test func wildcardsOverASuffixAndIPAddressesAreNoSiteNames() throws {
        for name in ["*.com", "*.co.uk", "*.github.io", "*.localhost", "*.any.ck", "127.0.0.1", "*.10.0.0.1", "1.2.3.0x1f"] {
            #expect(list.refusal(of: try #require(SiteName(name))) != nil, "\(name)")
        }
        for name in ["*.example.com", "*.customer.co.uk", "*.www.ck", "example.com", "com", "a1.example", "1password.com"] {
            #expect(list.refusal(of: try #require(SiteName(name))) == nil, "\(name)")
        }
    }
}
