import Testing
@testable import AASACore

let app = "ABCDE12345.com.example.app"

/// Decides `url` for `app` against a file whose one details entry has `components`.
func decision(_ components: String, _ url: String, defaults: String? = nil, variables: String? = nil,
              detailDefaults: String? = nil) -> Decision {
    var applinks: [String] = []
    if let defaults { applinks.append("\"defaults\": \(defaults)") }
    if let variables { applinks.append("\"substitutionVariables\": \(variables)") }
    let detailDefaultsPart = detailDefaults.map { ", \"defaults\": \($0)" } ?? ""
    applinks.append("\"details\": [{\"appIDs\": [\"\(app)\"], \"components\": [\(components)]\(detailDefaultsPart)}]")
    return decide(file: "{\"applinks\": {\(applinks.joined(separator: ", "))}}", url).decision
}

func decide(file: String, _ url: String, app: String = app, domain: String? = nil) -> AppDecision {
    let document = AASAFile(file).document!
    return document.decide(try! URLParts(url), domain: domain, apps: [app])[0]
}

func matches(_ component: String, _ path: String) -> Bool {
    decision(component, "https://example.com" + path) == .match
}

@Suite struct WildcardTests {
    @Test func starMatchesAnyRunAndCrossesSlashes() {
        #expect(matches(#"{"/": "/buy/*"}"#, "/buy/42/x"))
        #expect(matches(#"{"/": "/a*c"}"#, "/abbbc"))
        #expect(matches(#"{"/": "/a*c"}"#, "/ac"))
    }

    @Test func questionMarkMatchesExactlyOneCharacter() {
        #expect(matches(#"{"/": "/id/???"}"#, "/id/481"))
        #expect(!matches(#"{"/": "/id/???"}"#, "/id/48"))
        #expect(!matches(#"{"/": "/id/???"}"#, "/id/4812"))
    }

    @Test func questionStarNeedsAtLeastOneCharacter() {
        #expect(matches(#"{"/": "/buy/?*"}"#, "/buy/1"))
        #expect(!matches(#"{"/": "/b?*"}"#, "/b"))
    }

    @Test func aPatternMatchesTheWholePathNotAPrefixOrSuffix() {
        #expect(!matches(#"{"/": "abc"}"#, "/abcd"))
        #expect(!matches(#"{"/": "abc"}"#, "/xabc"))
    }

    @Test func workIsBoundedForPathologicalPatterns() {
        let pattern = String(repeating: "*a", count: 100) + "b"
        let input = "/" + String(repeating: "a", count: 5_000)
        #expect(!matches("{\"/\": \"\(pattern)\"}", input))
        #expect(matches("{\"/\": \"\(pattern)\"}", input + "b"))
    }
}

@Suite struct PathRuleTests {
    @Test func theLeadingSlashIsOptionalAndRunsOfItCollapse() {
        #expect(matches(#"{"/": "abc"}"#, "/abc"))
        #expect(matches(#"{"/": "buy/*"}"#, "/buy/42"))
        #expect(matches(#"{"/": "//abc"}"#, "/abc"))
    }

    @Test func applesOwnExampleMatches() {
        #expect(decision(##"{"/": "abc", "?": "def", "#": "*"}"##, "https://www.example.com/abc?def") == .match)
    }

    @Test func trailingSlashesDoNotCount() {
        #expect(matches(#"{"/": "/buy"}"#, "/buy/"))
        #expect(matches(#"{"/": "/buy/"}"#, "/buy"))
        #expect(matches(#"{"/": "/buy/"}"#, "/buy//"))
    }

    @Test(arguments: ["/buy", "/buy/", "/buy/42", "/buy//"])
    func aFinalSlashStarAlsoMatchesTheParent(path: String) {
        #expect(matches(#"{"/": "/buy/*"}"#, path))
    }

    @Test func aFinalSlashStarDoesNotMatchOtherPrefixes() {
        #expect(!matches(#"{"/": "/buy/*"}"#, "/buyer"))
        #expect(!matches(#"{"/": "/buy/*"}"#, "/bu"))
        #expect(matches(#"{"/": "/a/b/*"}"#, "/a/b"))
    }

    @Test func noSlashIsAddedToTheURLAndMiddleStarsKeepTheirSlashes() {
        #expect(!matches(#"{"/": "/id/????"}"#, "/id/481"))
        #expect(!matches(#"{"/": "/a/*/c"}"#, "/a/c"))
        #expect(matches(#"{"/": "/a/*/c"}"#, "/a/b/c"))
    }

    @Test func slashMatchesTheRootWithAndWithoutAPath() {
        #expect(decision(#"{"/": "/"}"#, "https://example.com/") == .match)
        #expect(decision(#"{"/": "/"}"#, "https://example.com") == .match)
        #expect(decision(#"{"/": "/"}"#, "https://example.com/a") == .noMatch)
    }
}

@Suite struct QueryRuleTests {
    @Test func aStringPatternMatchesTheWholeRawQuery() {
        #expect(decision(#"{"?": "a=1"}"#, "https://example.com/?a=1") == .match)
        #expect(decision(#"{"?": "a=1"}"#, "https://example.com/?a=1&b=2") == .noMatch)
    }

    @Test func anAbsentQueryIsTheEmptyString() {
        #expect(decision(#"{"?": "*"}"#, "https://example.com/x") == .match)
        #expect(decision(#"{"?": ""}"#, "https://example.com/x") == .match)
        #expect(decision(#"{"?": "?*"}"#, "https://example.com/x") == .noMatch)
    }

    @Test func aMissingOrValuelessItemIsTheEmptyString() {
        #expect(decision(#"{"?": {"b": "*"}}"#, "https://example.com/?a=1") == .match)
        #expect(decision(#"{"?": {"b": ""}}"#, "https://example.com/?a=1") == .match)
        #expect(decision(#"{"?": {"b": "?*"}}"#, "https://example.com/?a=1") == .noMatch)
        #expect(decision(#"{"?": {"b": "1"}}"#, "https://example.com/?a=1") == .noMatch)
        #expect(decision(#"{"?": {"flag": ""}}"#, "https://example.com/?flag") == .match)
        #expect(decision(#"{"?": {"flag": "?*"}}"#, "https://example.com/?flag") == .noMatch)
    }

    @Test func everyOccurrenceOfARepeatedItemMustMatch() {
        #expect(decision(#"{"?": {"id": "42"}}"#, "https://example.com/?id=7&id=42") == .noMatch)
        #expect(decision(#"{"?": {"id": "42"}}"#, "https://example.com/?id=42&id=7") == .noMatch)
        #expect(decision(#"{"?": {"id": "7"}}"#, "https://example.com/?id=7&id=7") == .match)
        #expect(decision(#"{"?": {"id": "*"}}"#, "https://example.com/?id=7&id=42") == .match)
        #expect(decision(#"{"?": {"id": "?*"}}"#, "https://example.com/?id=7&id=42") == .match)
        #expect(decision(#"{"?": {"id": ""}}"#, "https://example.com/?id=7&id=42") == .noMatch)
        #expect(decision(#"{"?": {"id": "7,42"}}"#, "https://example.com/?id=7&id=42") == .noMatch)
    }

    @Test func aNonStringItemMakesTheWholeDictionaryIgnored() {
        #expect(decision(#"{"?": {"a": "1", "flag": true}}"#, "https://example.com/?a=2") == .match)
    }

    @Test func itemsAreSplitBeforeDecoding() {
        #expect(decision(#"{"?": {"q": "a&b"}, "percentEncoded": false}"#, "https://example.com/?q=a%26b") == .match)
        #expect(decision(#"{"?": {"q": "a"}, "percentEncoded": false}"#, "https://example.com/?q=a%26b") == .noMatch)
    }
}

@Suite struct FragmentRuleTests {
    @Test func anAbsentFragmentIsTheEmptyString() {
        #expect(decision(##"{"#": "*"}"##, "https://example.com/x") == .match)
        #expect(decision(##"{"#": ""}"##, "https://example.com/x") == .match)
        #expect(decision(##"{"#": "?*"}"##, "https://example.com/x") == .noMatch)
        #expect(decision(##"{"#": "/market/*"}"##, "https://example.com/#/market/x") == .match)
        #expect(decision(#"{"/": "/market/*"}"#, "https://example.com/#/market/x") == .noMatch)
    }
}

@Suite struct CaseAndEncodingTests {
    @Test func matchingIsCaseSensitiveByDefault() {
        #expect(!matches(#"{"/": "/Buy"}"#, "/buy"))
        #expect(matches(#"{"/": "/Buy", "caseSensitive": false}"#, "/bUY"))
    }

    @Test func foldingAppliesToVariablesToo() {
        #expect(!matches(#"{"/": "/$(upper)"}"#, "/q"))
        #expect(matches(#"{"/": "/$(upper)", "caseSensitive": false}"#, "/q"))
        #expect(decision(#"{"/": "/$(v)", "caseSensitive": false}"#, "https://example.com/ABC", variables: #"{"v": ["abc"]}"#) == .match)
    }

    @Test func percentEncodedPatternsCompareWithTheEncodedURL() {
        #expect(matches(#"{"/": "/a%20b"}"#, "/a%20b"))
        #expect(!matches(#"{"/": "/a b"}"#, "/a%20b"))
        #expect(!matches(#"{"/": "/a/b"}"#, "/a%2Fb"))
        #expect(!matches(#"{"/": "/caf%C3%A9"}"#, "/caf%c3%a9"))
    }

    @Test func percentEncodedFalseDecodesTheURL() {
        #expect(matches(#"{"/": "/a b", "percentEncoded": false}"#, "/a%20b"))
        #expect(matches(#"{"/": "/café", "percentEncoded": false}"#, "/caf%C3%A9"))
        #expect(!matches(#"{"/": "/a%20b", "percentEncoded": false}"#, "/a%20b"))
        #expect(matches(#"{"/": "/a/b", "percentEncoded": false}"#, "/a%2Fb"))
    }

    @Test func anUnencodedURLIsEncodedFirstAsABrowserWould() {
        #expect(matches(#"{"/": "/caf%C3%A9"}"#, "/café"))
    }
}

@Suite struct ComponentRuleTests {
    @Test func emptyAndUnknownKeyComponentsMatchEverything() {
        #expect(matches("{}", "/anything"))
        #expect(matches(#"{"totallyUnknownKey": "x"}"#, "/anything"))
        #expect(matches(#"{"/": "/x", "casesensitive": false}"#, "/x"))
        #expect(!matches(#"{"/": "/x", "casesensitive": false}"#, "/X"))
    }

    @Test func everySpecifiedPartMustMatch() {
        #expect(decision(#"{"/": "/a", "?": "x=1"}"#, "https://example.com/a?x=1") == .match)
        #expect(decision(#"{"/": "/a", "?": "x=1"}"#, "https://example.com/a?x=2") == .noMatch)
        #expect(decision(##"{"/": "/a", "#": "f"}"##, "https://example.com/a#g") == .noMatch)
    }

    @Test func theFirstMatchingComponentDecidesAndExcludeBlocks() {
        let components = #"{"/": "/buy/special", "exclude": true}, {"/": "/buy/*"}"#
        #expect(decision(components, "https://example.com/buy/special") == .exclude)
        #expect(decision(components, "https://example.com/buy/other") == .match)
        let reversed = #"{"/": "/buy/*"}, {"/": "/buy/special", "exclude": true}"#
        #expect(decision(reversed, "https://example.com/buy/special") == .match)
    }

    @Test func reportsWhichComponentDecided() {
        let d = decide(file: #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": [{"/": "/a"}, {"/": "/b"}]}]}}"#,
                       "https://example.com/b")
        #expect(d == AppDecision(app: app, decision: .match, detail: 0, component: 1))
    }
}

@Suite struct DefaultsTests {
    @Test func flagsComeFromComponentThenDetailThenDomainDefaults() {
        #expect(decision(#"{"/": "/A"}"#, "https://example.com/a", defaults: #"{"caseSensitive": false}"#) == .match)
        #expect(decision(#"{"/": "/A"}"#, "https://example.com/a", defaults: #"{"caseSensitive": false}"#,
                         detailDefaults: #"{"caseSensitive": true}"#) == .noMatch)
        #expect(decision(#"{"/": "/A", "caseSensitive": false}"#, "https://example.com/a",
                         detailDefaults: #"{"caseSensitive": true}"#) == .match)
        #expect(decision(#"{"/": "/a b"}"#, "https://example.com/a%20b", defaults: #"{"percentEncoded": false}"#) == .match)
    }

    @Test func patternKeysInDefaultsApplyToo() {
        #expect(decision(##"{"#": "*"}"##, "https://example.com/bar", defaults: ##"{"/": "/foo/*"}"##) == .noMatch)
        #expect(decision(##"{"#": "*"}"##, "https://example.com/foo/1", defaults: ##"{"/": "/foo/*"}"##) == .match)
        #expect(decision(#"{"/": "/x"}"#, "https://example.com/x", defaults: #"{"exclude": true}"#) == .exclude)
        #expect(decision(#"{"/": "/x", "exclude": false}"#, "https://example.com/x", defaults: #"{"exclude": true}"#) == .match)
    }
}

@Suite struct SubstitutionVariableTests {
    @Test(arguments: [("alpha", "q", true), ("alpha", "1", false), ("upper", "Q", true), ("upper", "q", false),
                      ("lower", "q", true), ("alnum", "7", true), ("alnum", "-", false), ("digit", "7", true),
                      ("digit", "a", false), ("xdigit", "F", true), ("xdigit", "g", false), ("region", "GB", true),
                      ("region", "UK", false), ("lang", "en", true), ("lang", "zz", false), ("digit", "12", false)])
    func builtinsMatchOneEntry(name: String, text: String, expected: Bool) {
        #expect(matches("{\"/\": \"/$(\(name))/x\"}", "/\(text)/x") == expected)
    }

    @Test func documentVariablesExpandToTheirAlternatives() {
        let vars = #"{"food": ["burger", "pizza*"]}"#
        #expect(decision(#"{"/": "/$(food)"}"#, "https://example.com/burger", variables: vars) == .match)
        #expect(decision(#"{"/": "/$(food)"}"#, "https://example.com/pizzaXL", variables: vars) == .match)
        #expect(decision(#"{"/": "/$(food)"}"#, "https://example.com/salad", variables: vars) == .noMatch)
        #expect(decision(#"{"/": "/$(food)"}"#, "https://example.com/$(food)", variables: vars) == .noMatch)
    }

    @Test func variableValuesFollowCaseSensitivity() {
        let vars = #"{"food": ["burger"]}"#
        #expect(decision(#"{"/": "/$(food)"}"#, "https://example.com/BURGER", variables: vars) == .noMatch)
        #expect(decision(#"{"/": "/$(food)", "caseSensitive": false}"#, "https://example.com/BURGER", variables: vars) == .match)
    }

    @Test func anUndefinedVariableNeverMatches() {
        #expect(!matches(#"{"/": "/$(nope)"}"#, "/x"))
        #expect(!matches(#"{"/": "/$(nope)*"}"#, "/x"))
    }

    @Test func anUnterminatedReferenceIsLiteralText() {
        #expect(matches(#"{"/": "/$(x"}"#, "/$(x"))
    }
}

@Suite struct DetailsTests {
    @Test func appIDsWinsOverAppIDEvenWhenEmpty() {
        let both = #"{"applinks": {"details": [{"appID": "\#(app)", "appIDs": [], "components": [{}]}]}}"#
        #expect(decide(file: both, "https://example.com/x").decision == .noMatch)
        let legacy = #"{"applinks": {"details": [{"appID": "\#(app)", "components": [{}]}]}}"#
        #expect(decide(file: legacy, "https://example.com/x").decision == .match)
    }

    @Test func anEntryWithoutAppsOrWithEmptyComponentsMatchesNothing() {
        #expect(decide(file: #"{"applinks": {"details": [{"components": [{}]}]}}"#, "https://example.com/x").decision == .noMatch)
        #expect(decide(file: #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": []}]}}"#, "https://example.com/x").decision == .noMatch)
        #expect(decide(file: #"{"applinks": {"details": [{"appIDs": ["\#(app)"]}]}}"#, "https://example.com/x").decision == .noMatch)
    }

    @Test func theFirstEntryThatDecidesForAnAppWins() {
        let file = #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": [{"/": "/a"}]}, {"appIDs": ["\#(app)"], "components": [{"/": "*", "exclude": true}]}]}}"#
        #expect(decide(file: file, "https://example.com/a") == AppDecision(app: app, decision: .match, detail: 0, component: 0))
        #expect(decide(file: file, "https://example.com/b") == AppDecision(app: app, decision: .exclude, detail: 1, component: 0))
    }

    @Test func pathsAreIgnoredWhenComponentsIsAnArray() {
        let file = #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": [{"/": "/a"}], "paths": ["*"]}]}}"#
        #expect(decide(file: file, "https://example.com/b").decision == .noMatch)
    }

    @Test func legacyPathsMatchInOrderWithNOTAsExclusion() {
        let file = #"{"applinks": {"apps": [], "details": [{"appID": "\#(app)", "paths": ["NOT /videos/private/*", "/videos/*"]}]}}"#
        #expect(decide(file: file, "https://example.com/videos/private/1") == AppDecision(app: app, decision: .exclude, detail: 0, component: 0))
        #expect(decide(file: file, "https://example.com/videos/1?x=1#y") == AppDecision(app: app, decision: .match, detail: 0, component: 1))
        #expect(decide(file: file, "https://example.com/other").decision == .noMatch)
    }

    @Test func theLegacyDictionaryOfDetailsIsReadInDocumentOrder() {
        let file = #"{"applinks": {"apps": [], "details": {"ABCDE12345.com.other": {"paths": ["*"]}, "\#(app)": {"paths": ["/a"]}}}}"#
        #expect(decide(file: file, "https://example.com/a") == AppDecision(app: app, decision: .match, detail: 1, component: 0))
        #expect(decide(file: file, "https://example.com/a", app: "ABCDE12345.com.other").decision == .match)
    }

    @Test func aURLOnAnotherHostMatchesNothing() {
        let file = #"{"applinks": {"details": [{"appIDs": ["\#(app)"], "components": [{}]}]}}"#
        #expect(decide(file: file, "https://other.com/x", domain: "example.com").decision == .noMatch)
        #expect(decide(file: file, "https://EXAMPLE.com./x", domain: "example.com").decision == .match)
    }

    @Test func decidesForEveryAppInOrderOfAppearance() {
        let file = AASAFile(#"{"applinks": {"details": [{"appIDs": ["B1234567890.b", "A1234567890.a"], "components": [{"/": "/x"}]}, {"appIDs": ["A1234567890.a", "C1234567890.c"], "components": [{}]}]}}"#)
        let results = file.document!.decide(try! URLParts("https://example.com/y"))
        #expect(results.map(\.app) == ["B1234567890.b", "A1234567890.a", "C1234567890.c"])
        #expect(results.map(\.decision) == [.noMatch, .match, .match])
    }
}
