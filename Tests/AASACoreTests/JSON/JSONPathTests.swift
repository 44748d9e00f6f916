import Testing
@testable import AASACore

@Suite struct JSONPathTests {
    @Test func writesIdentifiersWithDotsAndOtherKeysInBrackets() {
        let path = JSONPath.root.appending("applinks").appending("details").appending(0)
            .appending("components").appending(2).appending("/")
        #expect(path.description == "$.applinks.details[0].components[2][\"/\"]")
        #expect(JSONPath.root.appending("a b").appending("\"").description == "$[\"a b\"][\"\\\"\"]")
        #expect(JSONPath.root.description == "$")
    }
}
