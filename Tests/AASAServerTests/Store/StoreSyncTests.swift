import Testing
@testable import AASAServer

@Suite struct StoreSyncTests {
    @Test func anArrayLiteralQuotesEveryValueAndEscapesQuotesAndBackslashes() {
        #expect(StoreSync.arrayLiteral([]) == "{}")
        #expect(StoreSync.arrayLiteral(["example.com", "*.example.org"]) == #"{"example.com","*.example.org"}"#)
        #expect(StoreSync.arrayLiteral([#"a"b"#, #"c\d"#, "e,f", "NULL"]) == #"{"a\"b","c\\d","e,f","NULL"}"#)
    }
}
