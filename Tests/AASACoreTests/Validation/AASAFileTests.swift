import Testing
@testable import AASACore

private let a = "ABCDE12345.com.example.app"

/// A file with one details entry holding `components`.
private func withComponents(_ components: String, applinksExtra: String = "") -> String {
    #"{"applinks": {\#(applinksExtra)"details": [{"appIDs": ["\#(a)"], "components": [\#(components)]}]}}"#
}

private func codes(_ text: String) -> [DiagnosticCode] { AASAFile(text).diagnostics.map(\.code) }

/// A file with one details entry holding legacy `paths`.
private func withPaths(_ paths: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["\#(a)"], "paths": [\#(paths)]}]}}"#
}

/// One rule: a file that breaks it and a file that keeps it.
struct Rule: Sendable, CustomTestStringConvertible {
    var code: DiagnosticCode
    var failing: String
    var passing: String
    var testDescription: String { code.rawValue }
}

let aasaRules: [Rule] = [
    Rule(code: .emptyFile, failing: "  ", passing: "{}"),
    Rule(code: .syntax, failing: "{\"applinks\" {}}", passing: "{\"applinks\": {}}"),
    Rule(code: .missingComma, failing: "{\"a\": 1 \"b\": 2}", passing: "{\"a\": 1, \"b\": 2}"),
    Rule(code: .trailingComma, failing: "{\"a\": [1,]}", passing: "{\"a\": [1]}"),
    Rule(code: .comment, failing: "{} // x", passing: "{}"),
    Rule(code: .duplicateKey, failing: "{\"webcredentials\": {\"apps\": []}, \"webcredentials\": {\"apps\": []}}", passing: "{\"webcredentials\": {\"apps\": []}}"),
    Rule(code: .rootNotObject, failing: "[]", passing: "{}"),
    Rule(code: .noService, failing: "{}", passing: "{\"webcredentials\": {\"apps\": [\"\(a)\"]}}"),
    Rule(code: .unknownKey, failing: withComponents(#"{"/": "/a", "Exclude": true}"#), passing: withComponents(#"{"/": "/a", "exclude": true}"#)),
    Rule(code: .wrongType, failing: withComponents(#"{"/": 42}"#), passing: withComponents(#"{"/": "42"}"#)),
    Rule(code: .missingKey, failing: #"{"applinks": {"details": [{"components": []}]}}"#, passing: withComponents("{}")),
    Rule(code: .emptyList, failing: withComponents(""), passing: withComponents("{}")),
    Rule(code: .legacyAppsNotEmpty, failing: withComponents("{}", applinksExtra: #""apps": ["\#(a)"], "#), passing: withComponents("{}", applinksExtra: #""apps": [], "#)),
    Rule(code: .legacyDetailsDictionary, failing: #"{"applinks": {"details": {"\#(a)": {"paths": ["*"]}}}}"#, passing: #"{"applinks": {"details": [{"appID": "\#(a)", "paths": ["*"]}]}}"#),
    Rule(code: .invalidAppID, failing: #"{"webcredentials": {"apps": ["ABC.com.example"]}}"#, passing: #"{"webcredentials": {"apps": ["\#(a)"]}}"#),
    Rule(code: .lowercaseAppIDPrefix, failing: #"{"webcredentials": {"apps": ["abcde12345.com.example"]}}"#, passing: #"{"webcredentials": {"apps": ["\#(a)"]}}"#),
    Rule(code: .appIDIgnored, failing: #"{"applinks": {"details": [{"appID": "\#(a)", "appIDs": ["\#(a)"], "components": [{}]}]}}"#, passing: withComponents("{}")),
    Rule(code: .pathsIgnored, failing: #"{"applinks": {"details": [{"appIDs": ["\#(a)"], "components": [{}], "paths": ["*"]}]}}"#, passing: withComponents("{}")),
    Rule(code: .noPatterns, failing: #"{"applinks": {"details": [{"appIDs": ["\#(a)"]}]}}"#, passing: withComponents("{}")),
    Rule(code: .duplicateApp, failing: #"{"applinks": {"details": [{"appIDs": ["\#(a)"], "components": [{"/": "/a"}]}, {"appIDs": ["\#(a)"], "components": [{"/": "/b"}]}]}}"#,
         passing: #"{"applinks": {"details": [{"appIDs": ["\#(a)"], "components": [{"/": "/a"}, {"/": "/b"}]}]}}"#),
    Rule(code: .queryValueNotString, failing: withComponents(#"{"?": {"a": "1", "flag": true}}"#), passing: withComponents(#"{"?": {"a": "1", "flag": "true"}}"#)),
    Rule(code: .excludeInDefaults, failing: withComponents(#"{"/": "/a"}"#, applinksExtra: #""defaults": {"exclude": true}, "#), passing: withComponents(#"{"/": "/a"}"#, applinksExtra: #""defaults": {"caseSensitive": false}, "#)),
    Rule(code: .unterminatedVariable, failing: withComponents(#"{"/": "/$(digit"}"#), passing: withComponents(#"{"/": "/$(digit)"}"#)),
    Rule(code: .undefinedVariable, failing: withComponents(#"{"/": "/$(food)"}"#), passing: withComponents(#"{"/": "/$(food)"}"#, applinksExtra: #""substitutionVariables": {"food": ["pizza"]}, "#)),
    Rule(code: .invalidVariableName, failing: withComponents("{}", applinksExtra: #""substitutionVariables": {"f(x)": ["a"]}, "#), passing: withComponents("{}", applinksExtra: #""substitutionVariables": {"fx": ["a"]}, "#)),
    Rule(code: .variableInVariable, failing: withComponents("{}", applinksExtra: #""substitutionVariables": {"x": ["$(digit)"]}, "#), passing: withComponents("{}", applinksExtra: #""substitutionVariables": {"x": ["1"]}, "#)),
    Rule(code: .variableShadowsBuiltin, failing: withComponents("{}", applinksExtra: #""substitutionVariables": {"digit": ["1"]}, "#), passing: withComponents("{}", applinksExtra: #""substitutionVariables": {"number": ["1"]}, "#)),
    Rule(code: .unreachableComponent, failing: withComponents(#"{"/": "/buy/*"}, {"/": "/buy/special", "exclude": true}"#), passing: withComponents(#"{"/": "/buy/special", "exclude": true}, {"/": "/buy/*"}"#)),
    Rule(code: .unreachablePath, failing: withPaths(#""NOT *", "/buy/*""#), passing: withPaths(#""NOT /buy/old", "/buy/*""#)),
    Rule(code: .unmatchablePattern, failing: withComponents(#"{"/": "/a b"}"#), passing: withComponents(#"{"/": "/a%20b"}"#)),
    Rule(code: .queryInPath, failing: withComponents(#"{"/": "/search?q=*"}"#), passing: withComponents(#"{"/": "/search", "?": {"q": "*"}}"#)),
    Rule(code: .encodedPatternNotDecoded, failing: withComponents(#"{"/": "/a%20b", "percentEncoded": false}"#), passing: withComponents(#"{"/": "/a b", "percentEncoded": false}"#)),
    Rule(code: .lowercasePercentEscape, failing: withComponents(#"{"/": "/caf%c3%a9"}"#), passing: withComponents(#"{"/": "/caf%C3%A9"}"#)),
]

@Suite struct AASAFileTests {
    @Test(arguments: aasaRules)
    func eachRuleFiresOnTheFailingFileAndNotOnThePassingOne(rule: Rule) {
        let failing = AASAFile(rule.failing)
        #expect(failing.diagnostics.contains { $0.code == rule.code }, "\(failing.diagnostics)")
        let passing = AASAFile(rule.passing)
        #expect(!passing.diagnostics.contains { $0.code == rule.code }, "\(passing.diagnostics)")
        if rule.code.severity == .error {
            #expect(!failing.isValid, "an error makes the file unservable")
        }
    }

    /// Covers every kind of file: AASA rules here, the other kinds' in AssociationFileTests.
    @Test func everyCodeHasARuleTest() {
        let covered = Set(aasaRules.map(\.code) + associationFileRules.map(\.code))
        let parserOnly: Set<DiagnosticCode> = [.fileTooLarge, .byteOrderMark, .signedFile, .invalidUTF8, .unterminatedString,
                                               .controlCharacter, .invalidEscape, .invalidNumber, .invalidLiteral,
                                               .nestingTooDeep, .trailingContent]
        let missing = DiagnosticCode.allCases.filter { !covered.contains($0) && !parserOnly.contains($0) }
        #expect(missing.isEmpty, "codes without a rule test: \(missing)")
    }

    /// A hostile file: one string of 131 000 control characters. The first 100 findings are
    /// listed, in order; every one is counted.
    @Test func aFileListsItsFirstHundredFindingsAndCountsTheRest() {
        let text = "{\"applinks\": \"" + String(repeating: "\u{1}", count: 131_000) + "\"}"
        let file = AASAFile(text)
        #expect(file.diagnostics.count == Diagnostic.listLimit)
        #expect(file.errorCount >= 131_000) // each character, and what the reader finds
        #expect(file.unlistedCount == file.errorCount + file.warningCount - 100)
        #expect(!file.isValid)
        // In order of position: the string where an object belongs, then its characters.
        #expect(file.diagnostics.first?.code == .wrongType)
        #expect(file.diagnostics.dropFirst().allSatisfy { $0.code == .controlCharacter })
        #expect(file.diagnostics.map(\.column) == Array(14..<114))
        let other = AssociationFile(kind: .assetLinks, bytes: Array(("[\"" + String(repeating: "\u{1}", count: 5000) + "\"]").utf8))
        #expect(other.diagnostics.count == 100 && other.errorCount >= 5000 && !other.isValid)
    }

    @Test func aFileOverTheLimitIsAnErrorAtTheFirstCharacter() {
        let padding = String(repeating: " ", count: AASAFile.maximumSize)
        let file = AASAFile("{\"webcredentials\": {\"apps\": [\"\(a)\"]}}" + padding)
        #expect(file.diagnostics.map(\.code) == [.fileTooLarge])
        #expect(file.diagnostics[0].position == SourcePosition(line: 1, column: 1))
        #expect(!file.isValid)
        let atLimit = "{\"webcredentials\": {\"apps\": [\"\(a)\"]}}"
        #expect(AASAFile(atLimit + String(repeating: " ", count: AASAFile.maximumSize - atLimit.utf8.count)).isValid)
    }

    @Test func aByteOrderMarkIsOnlyAWarning() {
        let file = AASAFile(bytes: [0xEF, 0xBB, 0xBF] + Array(withComponents("{}").utf8))
        #expect(file.diagnostics.map(\.code) == [.byteOrderMark])
        #expect(file.isValid)
    }

    @Test func aSignedFileIsReportedNotParsed() {
        let file = AASAFile(bytes: [0x30, 0x82, 0x01, 0x00] + Array(repeating: 0, count: 16))
        #expect(file.diagnostics.map(\.code) == [.signedFile])
        #expect(file.document == nil)
    }

    @Test func diagnosticsCarryPositionAndJSONPath() throws {
        let text = """
        {
          "applinks": {
            "details": [
              {
                "appIDs": ["\(a)", "TEAM.com.bad"],
                "components": [{"/": "/a", "exclude": "yes"}]
              }
            ]
          }
        }
        """
        let file = AASAFile(text)
        let appID = try #require(file.diagnostics.first { $0.code == .invalidAppID })
        #expect(appID.position == SourcePosition(line: 5, column: 50))
        #expect(appID.path.description == "$.applinks.details[0].appIDs[1]")
        let type = try #require(file.diagnostics.first { $0.code == .wrongType })
        #expect(type.path.description == "$.applinks.details[0].components[0].exclude")
        #expect(type.position == SourcePosition(line: 6, column: 47))
        #expect(file.diagnostics == file.diagnostics.sorted { $0.position < $1.position })
    }

    @Test func suggestsTheKeyThatWasMeant() throws {
        let file = AASAFile(withComponents(#"{"casesensitive": false}"#))
        let d = try #require(file.diagnostics.first)
        #expect(d.message.contains("did you mean \"caseSensitive\"?"))
        #expect(AASAFile(#"{"applinks": {"details": [{"appIds": ["\#(a)"], "components": [{}]}]}}"#)
            .diagnostics.contains { $0.message.contains("\"appIDs\"") })
    }

    @Test func aMisspeltExcludeSaysWhatTheComponentNowDoesAtItsWarningSeverity() throws {
        let opens = AASAFile(withComponents(#"{"/": "/private/*", "exlude": true}"#))
        let d = try #require(opens.diagnostics.first { $0.code == .unknownKey })
        #expect(d.severity == .warning)
        #expect(d.message == #"unknown key "exlude" in a component is ignored; did you mean "exclude"? this component MATCHES: without "exclude" it opens the app"#)
        // Under defaults that exclude, a misspelt "exclude": false leaves the component blocking.
        let blocks = AASAFile(#"{"applinks": {"defaults": {"exclude": true}, "details": [{"appIDs": ["\#(a)"], "components": [{"/": "/a", "Exclude": false}]}]}}"#)
        #expect(blocks.diagnostics.contains { $0.message.hasSuffix(#"this component still BLOCKS: without "exclude" it keeps exclude: true from its defaults"#) })
        // The same meaning either way (false is the default; or the real key is there too): no note.
        #expect(AASAFile(withComponents(#"{"/": "/a", "exlude": false}"#)).diagnostics.allSatisfy { !$0.message.contains("MATCHES") && !$0.message.contains("BLOCKS") })
        #expect(AASAFile(withComponents(#"{"/": "/a", "exlude": true, "exclude": true}"#)).diagnostics.allSatisfy { !$0.message.contains("MATCHES") })
        // A near miss of another key says nothing more.
        #expect(AASAFile(withComponents(#"{"casesensitive": false}"#)).diagnostics.first?.message.hasSuffix("did you mean \"caseSensitive\"?") == true)
    }

    @Test func unreachableComponentsAreFoundOnlyWhenTrulyCovered() {
        #expect(codes(withComponents(#"{}, {"/": "/a"}"#)).contains(.unreachableComponent))
        #expect(codes(withComponents(#"{"/": "*"}, {"/": "/a"}"#)).contains(.unreachableComponent))
        #expect(codes(withComponents(#"{"/": "/a"}, {"/": "/a"}"#)).contains(.unreachableComponent))
        #expect(codes(withComponents(#"{"/": "/a/*"}, {"/": "/a"}"#)).contains(.unreachableComponent))
        #expect(codes(withComponents(#"{"/": "/a/*"}, {"/": "/a/b", "?": "x"}"#)).contains(.unreachableComponent))
        // Not covered: a narrower earlier component, a different query, different case rules.
        #expect(!codes(withComponents(#"{"/": "/a", "?": "x"}, {"/": "/a"}"#)).contains(.unreachableComponent))
        #expect(!codes(withComponents(#"{"/": "/a/*"}, {"/": "/ab"}"#)).contains(.unreachableComponent))
        #expect(!codes(withComponents(#"{"/": "/a"}, {"/": "/A", "caseSensitive": false}"#)).contains(.unreachableComponent))
        #expect(!codes(withComponents(#"{"/": "/a?"}, {"/": "/ab"}"#)).contains(.unreachableComponent))
        #expect(!codes(withComponents(#"{"?": {"a": "1"}}, {"?": {"b": "1"}}"#)).contains(.unreachableComponent))
        #expect(codes(withComponents(#"{"?": {"a": "1"}}, {"?": {"a": "1", "b": "2"}}"#)).contains(.unreachableComponent))
    }

    @Test func unreachableLegacyPathsAreFoundLikeComponents() throws {
        let blocked = AASAFile(withPaths(#""NOT *", "/a", "NOT /b""#)).diagnostics.filter { $0.code == .unreachablePath }
        #expect(blocked.map(\.path.description) == ["$.applinks.details[0].paths[1]", "$.applinks.details[0].paths[2]"])
        let first = try #require(blocked.first)
        #expect(first.message == #"paths[1] can never match: paths[0] "NOT *" matches every URL it matches and blocks it first"#)
        #expect(codes(withPaths(#""/a", "/b", "/a""#)) == [.unreachablePath], "an exact duplicate")
        #expect(codes(withPaths(#""/a/*", "/a/b""#)) == [.unreachablePath])
        // Not covered: a narrower earlier path, a later broader one.
        #expect(codes(withPaths(#""/a/b", "/a/*""#)).isEmpty)
        #expect(codes(withPaths(#""NOT /a", "*""#)).isEmpty)
    }

    @Test func aLegacyPathIsNotToldToUseAKeyItCannotHave() throws {
        let d = try #require(AASAFile(withPaths(#""/a b""#)).diagnostics.first { $0.code == .unmatchablePattern })
        #expect(!d.message.contains("set percentEncoded: false"), "\(d.message)")
        #expect(d.message.contains("legacy paths are always compared percent-encoded"))
        let component = try #require(AASAFile(withComponents(#"{"/": "/a b"}"#)).diagnostics.first { $0.code == .unmatchablePattern })
        #expect(component.message.contains("set percentEncoded: false"))
    }

    @Test func onlyFindingsAboutJSONItselfCountAsSyntaxErrors() {
        #expect(AASAFile(#"{"a": 1 "b": 2}"#).diagnostics.contains { $0.code.isJSONSyntaxError })
        #expect(!AASAFile(withComponents(#"{"/": 42}"#)).diagnostics.contains { $0.code.isJSONSyntaxError })
        #expect(!DiagnosticCode.duplicateKey.isJSONSyntaxError)
        #expect(!DiagnosticCode.byteOrderMark.isJSONSyntaxError)
    }

    @Test func aValidFileHasNoFindingsAndKeepsItsBytes() {
        let text = withComponents(##"{"/": "/buy/*", "?": {"ref": "?*"}, "#": "*", "comment": "products"}"##)
        let file = AASAFile(text)
        #expect(file.diagnostics.isEmpty)
        #expect(file.bytes == Array(text.utf8))
        #expect(file.document?.appLinksAppIDs == [a])
    }

    @Test func allServicesAreRead() {
        let file = AASAFile(#"{"webcredentials": {"apps": ["\#(a)"]}, "appclips": {"apps": ["\#(a).Clip"]}, "activitycontinuation": {"apps": ["\#(a)"]}}"#)
        #expect(file.diagnostics.isEmpty)
        #expect(file.document?.appLists[.appClips] == ["\(a).Clip"])
        #expect(file.document?.appLists[.webCredentials] == [a])
        #expect(codes(#"{"webcredentials": {}}"#) == [.missingKey])
        #expect(codes(#"{"webcredentials": {"apps": [1]}}"#) == [.wrongType])
    }
}
