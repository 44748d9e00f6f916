import Testing
@testable import AASAHTTP

@Suite struct ConditionalTests {
    @Test func ifNoneMatchUsesWeakComparisonAndLists() {
        #expect(Conditional.ifNoneMatch("\"a\"", matches: "\"a\""))
        #expect(Conditional.ifNoneMatch("\"x\", W/\"a\"", matches: "\"a\""))
        #expect(Conditional.ifNoneMatch("*", matches: "\"a\""))
        #expect(!Conditional.ifNoneMatch("\"b\"", matches: "\"a\""))
        #expect(!Conditional.ifNoneMatch("a", matches: "\"a\""))
    }

    @Test func ifModifiedSinceComparesSecondsAndIgnoresBadDates() {
        let t = 784_111_777
        #expect(Conditional.notModifiedSince(HTTPDate.format(t), lastModified: t))
        #expect(Conditional.notModifiedSince(HTTPDate.format(t + 1), lastModified: t))
        #expect(!Conditional.notModifiedSince(HTTPDate.format(t - 1), lastModified: t))
        #expect(!Conditional.notModifiedSince("yesterday", lastModified: t))
    }
}
