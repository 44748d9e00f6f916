import Testing
@testable import AASACore

@Suite struct AssociatedDomainTests {
    @Test func readsServiceHostWildcardAndMode() throws {
        let d = try AssociatedDomain(parsing: "applinks:*.Example.com?mode=developer+managed")
        #expect(d.service == .appLinks)
        #expect(d.host == "example.com")
        #expect(d.isWildcard)
        #expect(d.hostPattern == "*.example.com")
        #expect(d.fileHost == "example.com")
        #expect(d.mode == "developer+managed")
        #expect(try AssociatedDomain(parsing: "webcredentials:login.example.com").mode == nil)
        #expect(try AssociatedDomain(parsing: "authsrv:sso.example.com").service == .authServices)
    }

    @Test func aPortIsAnErrorOnlyForApplinks() throws {
        #expect(throws: AssociatedDomain.ParseError.self) { try AssociatedDomain(parsing: "applinks:example.com:8443") }
        #expect(try AssociatedDomain(parsing: "webcredentials:example.com:8443").port == 8443)
    }

    @Test func eachMistakeIsNamed() {
        func message(_ text: String) -> String {
            do {
                _ = try AssociatedDomain(parsing: text)
                return "parsed"
            } catch {
                return error.message
            }
        }
        #expect(message("example.com").contains("expected SERVICE:HOST"))
        #expect(message("applink:example.com").contains("unknown service"))
        #expect(message("applinks:https://example.com").contains("no scheme: write applinks:example.com"))
        #expect(message("applinks:example.com/path").contains("no path: write applinks:example.com"))
        #expect(message("applinks:example.com.").contains("no trailing dot"))
        #expect(message("appclips:*.example.com").contains("appclips does not support wildcards"))
        #expect(message("applinks:example.com?mode=debug").contains("unknown query"))
        #expect(message("applinks:bücher.example").contains("punycode"))
        #expect(message("applinks:a.*.example.com").contains("only allowed as a leading *."))
        #expect(message("applinks:example.com:8443").contains("TN3155"))
    }
}
