import Testing
@testable import AASACore

private func parse(_ text: String) -> JSONParser.Result { JSONParser.parse(Array(text.utf8)) }
private func codes(_ text: String) -> [DiagnosticCode] { parse(text).diagnostics.map(\.code) }

@Suite struct JSONParserTests {
    @Test func parsesEveryKindOfValueWithPositions() throws {
        let r = parse("{\n  \"a\": [1, -2.5e3, true, false, null],\n  \"b\": \"x\\u00e9\\n\"\n}")
        #expect(r.diagnostics.isEmpty)
        let value = try #require(r.value)
        let a = try #require(value["a"]?.arrayValue)
        #expect(a.count == 5)
        guard case .number(let n) = a[1].kind else { Issue.record("not a number"); return }
        #expect(n == "-2.5e3")
        #expect(value["b"]?.stringValue == "x\u{e9}\n")
        let map = SourceMap(Array("{\n  \"a\": [1, -2.5e3, true, false, null],\n  \"b\": \"x\\u00e9\\n\"\n}".utf8))
        #expect(map.position(of: try #require(value["b"]).offset) == SourcePosition(line: 3, column: 8))
    }

    /// Apple's older documentation example lacks commas between details entries.
    @Test func findsEveryMissingCommaAtTheEndOfTheValueItFollows() {
        let text = """
        {
            "applinks": {
                "apps": [],
                "details": [
                    {
                        "appID": "9JA89QQLNQ.com.apple.wwdc",
                        "paths": [ "/wwdc/news/", "/videos/wwdc/2015/*"]
                    }
                    {
                        "appID": "TeamID.BundleID2"
                        "paths": [ "*" ]
                    }
                ]
            }
        }
        """
        let r = parse(text)
        let missing = r.diagnostics.filter { $0.code == .missingComma }
        #expect(missing.map(\.position) == [SourcePosition(line: 8, column: 14), SourcePosition(line: 10, column: 44)])
        #expect(missing[0].path.description == "$.applinks.details")
        #expect(missing[1].path.description == "$.applinks.details[1]")
        #expect(r.value != nil, "parsing goes on after a missing comma")
    }

    @Test func reportsTrailingCommasAndComments() {
        #expect(codes("{\"a\": [1, 2,], \"b\": 1,}") == [.trailingComma, .trailingComma])
        #expect(codes("{\n// note\n\"a\": 1 /* x */}") == [.comment, .comment])
        #expect(codes("{\"a\": 1 /* never closed") == [.comment, .comment])
    }

    @Test func reportsAByteOrderMarkAndStillParses() {
        let r = JSONParser.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8))
        #expect(r.diagnostics.map(\.code) == [.byteOrderMark])
        #expect(r.value?.objectMembers?.isEmpty == true)
    }

    @Test func reportsDuplicateKeysAndUsesTheLastValue() {
        let r = parse("{\"a\": 1, \"a\": 2}")
        #expect(r.diagnostics.map(\.code) == [.duplicateKey])
        #expect(r.diagnostics.first?.position == SourcePosition(line: 1, column: 10))
        guard case .number(let n)? = r.value?["a"]?.kind else { Issue.record("no number"); return }
        #expect(n == "2")
    }

    @Test func reportsInvalidUTF8WithItsPosition() {
        let r = JSONParser.parse(Array("{\"a\": \"x".utf8) + [0xC3, 0x28] + Array("\"}".utf8))
        #expect(r.diagnostics.map(\.code) == [.invalidUTF8])
        #expect(r.diagnostics[0].position == SourcePosition(line: 1, column: 9))
        #expect(codes("{\"a\": \"\u{1}\"}") == [.controlCharacter])
        #expect(JSONParser.parse([0xED, 0xA0, 0x80]).diagnostics.map(\.code) == [.syntax])
        #expect(JSONParser.parse(Array("\"".utf8) + [0xED, 0xA0, 0x80] + Array("\"".utf8)).diagnostics.map(\.code) == [.invalidUTF8])
    }

    @Test func countsColumnsInCharactersNotBytes() {
        let r = parse("{\"é\": 1 \"b\": 2}")
        #expect(r.diagnostics.first?.position == SourcePosition(line: 1, column: 8))
    }

    @Test(arguments: [
        ("", DiagnosticCode.emptyFile), ("{'a': 1}", .syntax), ("{a: 1}", .syntax), ("[01]", .invalidNumber),
        ("[1.]", .invalidNumber), ("[-]", .invalidNumber), ("[True]", .invalidLiteral), ("[NaN]", .invalidNumber),
        ("{\"a\" 1}", .syntax), ("{\"a\": 1", .syntax), ("[1 2", .missingComma), ("\"abc", .unterminatedString),
        ("\"a\nb\"", .unterminatedString), ("{\"a\": \"\\x\"}", .invalidEscape), ("\"\\ud800\"", .invalidEscape),
        ("{} {}", .trailingContent), ("{\"a\":}", .syntax), ("[,]", .syntax),
    ])
    func rejectsMalformedJSON(text: String, code: DiagnosticCode) {
        let found = codes(text)
        #expect(found.contains(code), "\(text.debugDescription) gave \(found)")
        #expect(found.allSatisfy { $0.severity == .error })
    }

    @Test func acceptsSurrogatePairsAndEscapes() {
        let r = parse("[\"\\ud83d\\ude00\", \"\\/\\b\\f\\r\\t\\\"\\\\\"]")
        #expect(r.diagnostics.isEmpty)
        #expect(r.value?.arrayValue?.first?.stringValue == "😀")
    }

    @Test func capsNestingInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000)
        let r = parse(deep)
        #expect(r.value == nil)
        #expect(r.diagnostics.map(\.code) == [.nestingTooDeep])
        let ok = String(repeating: "[", count: JSONParser.maximumDepth) + String(repeating: "]", count: JSONParser.maximumDepth)
        #expect(parse(ok).diagnostics.isEmpty)
    }

    @Test func neverCrashesOnAnyPrefixOfADocument() {
        let text = "{\"applinks\": {\"details\": [{\"appIDs\": [\"ABCDE12345.a\"], \"components\": [{\"/\": \"/é\\u00e9*\", \"?\": {\"a\": \"1\"}}]}]}}"
        let bytes = Array(text.utf8)
        for n in 0...bytes.count {
            let r = JSONParser.parse(Array(bytes[0..<n]))
            #expect(n == bytes.count ? r.diagnostics.isEmpty : !r.diagnostics.isEmpty)
        }
    }
}
