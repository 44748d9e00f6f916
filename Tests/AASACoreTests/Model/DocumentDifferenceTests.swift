import Testing
@testable import AASACore

@Suite struct DocumentDifferenceTests {
    @Test func namesAppsAddedAndRemovedPerService() throws {
        let new = try #require(AASAFile(#"{"applinks": {"details": [{"appIDs": ["A.new", "A.kept"], "components": [{"/": "/x"}]}]}, "webcredentials": {"apps": ["A.kept"]}}"#).document)
        let old = try #require(AASAFile(#"{"applinks": {"details": [{"appIDs": ["A.gone", "A.kept"], "components": [{"/": "/x"}]}]}, "appclips": {"apps": ["A.clip"]}}"#).document)
        #expect(new.differences(from: old) == [
            "applinks: A.new added",
            "applinks: A.gone removed",
            "webcredentials is new (the CDN's copy has no webcredentials)",
            "appclips was removed (the CDN's copy still has it)",
        ])
    }

    @Test func namesTheRulesThatChangedForAnApp() throws {
        let new = try #require(AASAFile(#"{"applinks": {"details": [{"appIDs": ["A.app"], "components": [{"/": "/buy/*"}, {"/": "/help", "exclude": true}]}]}}"#).document)
        let old = try #require(AASAFile(#"{"applinks": {"details": [{"appIDs": ["A.app"], "components": [{"/": "/buy/*"}, {"/": "/old", "?": {"id": "?*"}}]}]}}"#).document)
        #expect(new.differences(from: old) == [#"applinks: the rules for A.app changed: now blocks "/help"; no longer opens "/old" ? {id="?*"}"#])
    }

    @Test func theSameMeaningHasNoDifferences() throws {
        let a = AASAFile(#"{"applinks": {"details": [{"appIDs": ["A.app"], "components": [{"/": "/x", "comment": "one"}]}]}}"#)
        let b = AASAFile(#"{"applinks": {"details": [{"components": [{"/": "/x", "comment": "two"}], "appIDs": ["A.app"]}]}}"#)
        #expect(try #require(a.document).differences(from: try #require(b.document)).isEmpty)
    }

    @Test func jsonValuesCompareAsParsed() throws {
        func value(_ s: String) throws -> JSONValue { try #require(JSONParser.parse(Array(s.utf8)).value) }
        #expect(try value(#"{"a": [1, 2.0], "b": {"c": null}}"#).isSameValue(as: try value(#"{"b":{"c":null},"a":[1.0,2]}"#)))
        #expect(try !value(#"{"a": [1, 2]}"#).isSameValue(as: try value(#"{"a": [2, 1]}"#)))
        #expect(try !value(#"{"a": 1}"#).isSameValue(as: try value(#"{"a": 1, "b": 2}"#)))
        #expect(try !value(#"{"a": "1"}"#).isSameValue(as: try value(#"{"a": 1}"#)))
    }
}
