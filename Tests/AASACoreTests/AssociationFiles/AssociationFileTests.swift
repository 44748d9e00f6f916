import Testing
@testable import AASACore

let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
private let handleAllURLs = #"["delegate_permission/common.handle_all_urls"]"#

/// A statement list with one android_app statement; `target` replaces the keys after the namespace.
private func androidApp(_ target: String = #""package_name": "com.example.app", "sha256_cert_fingerprints": ["\#(fingerprint)"]"#,
                        relation: String = handleAllURLs) -> String {
    #"[{"relation": \#(relation), "target": {"namespace": "android_app", \#(target)}}]"#
}

private func webSite(_ site: String) -> String {
    #"[{"relation": ["delegate_permission/common.get_login_creds"], "target": {"namespace": "web", "site": "\#(site)"}}]"#
}

private func origins(_ list: String) -> String { #"{"origins": [\#(list)]}"# }

private func originList(_ count: Int) -> String {
    (0..<count).map { #""https://site\#($0).example""# }.joined(separator: ", ")
}

/// One rule of one kind of file: a file that breaks it and a file that keeps it.
struct KindRule: Sendable, CustomTestStringConvertible {
    var kind: AssociationFileKind
    var code: DiagnosticCode
    var failing: String
    var passing: String
    var testDescription: String { "\(kind) \(code.rawValue)" }
}

let associationFileRules: [KindRule] = [
    // assetlinks.json
    KindRule(kind: .assetLinks, code: .emptyFile, failing: "\n", passing: androidApp()),
    KindRule(kind: .assetLinks, code: .syntax, failing: "[{\"relation\" []}]", passing: androidApp()),
    KindRule(kind: .assetLinks, code: .rootNotArray, failing: #"{"relation": [], "target": {}}"#, passing: androidApp()),
    KindRule(kind: .assetLinks, code: .emptyList, failing: "[]", passing: androidApp()),
    KindRule(kind: .assetLinks, code: .wrongType, failing: androidApp(#""package_name": 42, "sha256_cert_fingerprints": ["\#(fingerprint)"]"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .missingKey, failing: #"[{"relation": \#(handleAllURLs), "target": {"package_name": "com.example.app"}}]"#, passing: androidApp()),
    KindRule(kind: .assetLinks, code: .unknownKey, failing: androidApp(#""package_name": "com.example.app", "sha256_cert_fingerprints": ["\#(fingerprint)"], "sha256": []"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .emptyRequiredList, failing: androidApp(relation: "[]"), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksInvalidRelation, failing: androidApp(relation: #"[""]"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksUnknownRelation, failing: androidApp(relation: #"["delegate_permission/common.handle_all_url"]"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksUnknownNamespace, failing: #"[{"relation": \#(handleAllURLs), "target": {"namespace": "android"}}]"#, passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksInvalidPackageName, failing: androidApp(#""package_name": "example", "sha256_cert_fingerprints": ["\#(fingerprint)"]"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksInvalidFingerprint, failing: androidApp(#""package_name": "com.example.app", "sha256_cert_fingerprints": ["\#(fingerprint.prefix(59))"]"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksLowercaseFingerprint, failing: androidApp(#""package_name": "com.example.app", "sha256_cert_fingerprints": ["\#(fingerprint.lowercased())"]"#), passing: androidApp()),
    KindRule(kind: .assetLinks, code: .assetLinksInvalidSite, failing: webSite("https://example.com/app"), passing: webSite("https://example.com")),
    KindRule(kind: .assetLinks, code: .originTrailingSlash, failing: webSite("https://example.com/"), passing: webSite("https://example.com")),
    KindRule(kind: .assetLinks, code: .assetLinksInvalidInclude, failing: #"[{"include": "ftp://example.com/more.json"}]"#, passing: #"[{"include": "https://example.com/more.json"}]"#),
    KindRule(kind: .assetLinks, code: .assetLinksDuplicateStatement,
             failing: #"[{"relation": \#(handleAllURLs), "target": {"namespace": "web", "site": "https://a.example"}}, {"target": {"site": "https://a.example", "namespace": "web"}, "relation": \#(handleAllURLs)}]"#,
             passing: #"[{"relation": \#(handleAllURLs), "target": {"namespace": "web", "site": "https://a.example"}}, {"relation": \#(handleAllURLs), "target": {"namespace": "web", "site": "https://b.example"}}]"#),

    // webauthn
    KindRule(kind: .webAuthn, code: .emptyFile, failing: " ", passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .trailingComma, failing: origins(#""https://example.co.uk","#), passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .rootNotObject, failing: #"["https://example.co.uk"]"#, passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .missingKey, failing: "{}", passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .wrongType, failing: #"{"origins": "https://example.co.uk"}"#, passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .unknownKey, failing: #"{"origins": ["https://example.co.uk"], "origin": []}"#, passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .emptyRequiredList, failing: origins(""), passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .webAuthnInvalidOrigin, failing: origins(#""http://example.co.uk""#), passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .originTrailingSlash, failing: origins(#""https://example.co.uk/""#), passing: origins(#""https://example.co.uk""#)),
    KindRule(kind: .webAuthn, code: .webAuthnTooManyOrigins, failing: origins(originList(1_001)), passing: origins(originList(1_000))),
    KindRule(kind: .webAuthn, code: .webAuthnDuplicateOrigin, failing: origins(#""https://example.co.uk", "https://EXAMPLE.co.uk""#),
             passing: origins(#""https://example.co.uk", "https://example.sg""#)),

    // apple-developer-merchantid-domain-association
    KindRule(kind: .merchantID, code: .emptyFile, failing: " \r\n", passing: "7B2270737049\n"),
    KindRule(kind: .merchantID, code: .merchantIDInvalidByte, failing: "7B22\u{00}7073\n", passing: "7B22 7073\n"),
    KindRule(kind: .merchantID, code: .fileTooLarge, failing: String(repeating: "A", count: 65_537), passing: String(repeating: "A", count: 65_536)),
]

@Suite struct AssociationFileTests {
    @Test(arguments: associationFileRules)
    func eachRuleFiresOnTheFailingFileAndNotOnThePassingOne(rule: KindRule) {
        let failing = AssociationFile(kind: rule.kind, rule.failing)
        #expect(failing.diagnostics.contains { $0.code == rule.code }, "\(failing.diagnostics)")
        let passing = AssociationFile(kind: rule.kind, rule.passing)
        #expect(!passing.diagnostics.contains { $0.code == rule.code }, "\(passing.diagnostics)")
        if rule.code.severity == .error {
            #expect(!failing.isValid, "an error makes the file unservable")
        }
    }

    @Test(arguments: [AssociationFileKind.assetLinks, .webAuthn, .merchantID])
    func theExampleConfigFilesAreValidWithoutFindings(kind: AssociationFileKind) {
        let files: [AssociationFileKind: String] = [
            .assetLinks: androidApp() + "\n",
            .webAuthn: origins(#""https://example.co.uk", "https://example.sg:8443""#),
            .merchantID: "7B2270737049642223A2236\n3334\n",
        ]
        let file = AssociationFile(kind: kind, files[kind]!)
        #expect(file.diagnostics.isEmpty, "\(file.diagnostics)")
        #expect(file.isValid)
        #expect(file.bytes == Array(files[kind]!.utf8))
        #expect(file.aasa == nil)
    }

    @Test func anAASAFileIsReadByTheAASARulesAndKeepsItsDocument() {
        let text = #"{"applinks": {"details": [{"appIDs": ["ABC.x"], "components": [{"/": "/a"}]}]}}"#
        let file = AssociationFile(kind: .aasa, text)
        #expect(file.diagnostics == AASAFile(text).diagnostics)
        #expect(file.diagnostics.map(\.code) == [.invalidAppID])
        #expect(file.aasa?.document?.appLinksAppIDs == ["ABC.x"])
        #expect(file.contentType == "application/json")
        #expect(file.urlPath == "/.well-known/apple-app-site-association")
    }

    @Test func assetLinksDiagnosticsCarryPositionAndJSONPath() throws {
        let text = """
        [
          {
            "relation": ["delegate_permission/common.handle_all_urls"],
            "target": {
              "namespace": "android_app",
              "package_name": "com.example.app",
              "sha256_cert_fingerprints": ["\(fingerprint)", "AB:CD"]
            }
          }
        ]
        """
        let file = AssociationFile(kind: .assetLinks, text)
        let d = try #require(file.diagnostics.first)
        #expect(file.diagnostics.count == 1)
        #expect(d.code == .assetLinksInvalidFingerprint)
        #expect(d.path.description == "$[0].target.sha256_cert_fingerprints[1]")
        #expect(d.position == SourcePosition(line: 7, column: 135))
        #expect(d.message.contains("2 byte pairs"))
    }

    @Test func webAuthnDiagnosticsCarryPositionAndJSONPath() throws {
        let file = AssociationFile(kind: .webAuthn, "{\n  \"origins\": [\n    \"https://a.example\",\n    \"https://b.example/login\"\n  ]\n}\n")
        let d = try #require(file.diagnostics.first)
        #expect(file.diagnostics.count == 1)
        #expect(d.code == .webAuthnInvalidOrigin)
        #expect(d.path.description == "$.origins[1]")
        #expect(d.position == SourcePosition(line: 4, column: 5))
        #expect(d.message.contains("path"))
    }

    @Test func theMerchantFileReportsTheFirstBadByteWhereItIs() throws {
        let file = AssociationFile(kind: .merchantID, bytes: Array("7B22\n70é3\u{01}\n".utf8))
        let d = try #require(file.diagnostics.first)
        #expect(file.diagnostics.map(\.code) == [.merchantIDInvalidByte])
        #expect(d.position == SourcePosition(line: 2, column: 3))
        #expect(d.message.contains("0xC3"))
        #expect(d.path == .root)
        let bom = AssociationFile(kind: .merchantID, bytes: [0xEF, 0xBB, 0xBF] + Array("7B22".utf8))
        #expect(bom.diagnostics.first?.message.contains("byte-order mark") == true)
        #expect(!bom.isValid)
        #expect(AssociationFile(kind: .merchantID, "").diagnostics.map(\.code) == [.emptyFile])
    }

    @Test(arguments: [AssociationFileKind.assetLinks, .webAuthn])
    func aByteOrderMarkIsOnlyAWarningInJSONFiles(kind: AssociationFileKind) {
        let text = kind == .assetLinks ? androidApp() : origins(#""https://example.co.uk""#)
        let file = AssociationFile(kind: kind, bytes: [0xEF, 0xBB, 0xBF] + Array(text.utf8))
        #expect(file.diagnostics.map(\.code) == [.byteOrderMark])
        #expect(file.isValid)
    }

    @Test(arguments: [AssociationFileKind.assetLinks, .webAuthn])
    func aJSONFileOverTheLimitIsAnErrorAtTheFirstCharacter(kind: AssociationFileKind) {
        let text = kind == .assetLinks ? androidApp() : origins(#""https://example.co.uk""#)
        let atLimit = text + String(repeating: " ", count: kind.maximumSize - text.utf8.count)
        #expect(AssociationFile(kind: kind, atLimit).isValid)
        let over = AssociationFile(kind: kind, atLimit + " ")
        #expect(over.diagnostics.map(\.code) == [.fileTooLarge])
        #expect(over.diagnostics[0].position == SourcePosition(line: 1, column: 1))
        #expect(!over.isValid)
    }

    @Test func anEmptyJSONFileSaysWhatItShouldHold() {
        #expect(AssociationFile(kind: .assetLinks, "").diagnostics.first?.message.contains("a JSON array of statements") == true)
        #expect(AssociationFile(kind: .webAuthn, "").diagnostics.first?.message.contains("origins") == true)
    }

    @Test func anIncludeStatementNeedsNoRelationOrTarget() {
        let file = AssociationFile(kind: .assetLinks, #"[{"include": "https://example.com/.well-known/more.json"}, \#(androidApp().dropFirst().dropLast())]"#)
        #expect(file.diagnostics.isEmpty, "\(file.diagnostics)")
        #expect(AssociationFile(kind: .assetLinks, #"[{"include": 1}]"#).diagnostics.map(\.code) == [.wrongType])
    }

    @Test func aTargetListsOnlyTheKeysOfItsNamespace() {
        let file = AssociationFile(kind: .assetLinks, #"[{"relation": \#(handleAllURLs), "target": {"namespace": "web", "site": "https://a.example", "package_name": "com.example.app"}}]"#)
        #expect(file.diagnostics.map(\.code) == [.unknownKey])
        #expect(file.diagnostics.first?.path.description == "$[0].target.package_name")
        let missing = AssociationFile(kind: .assetLinks, #"[{"relation": \#(handleAllURLs), "target": {"namespace": "android_app"}}]"#)
        #expect(missing.diagnostics.map(\.code) == [.missingKey, .missingKey])
    }

    @Test func unknownRelationsAndNamespacesSuggestTheKnownOne() {
        let relation = AssociationFile(kind: .assetLinks, androidApp(relation: #"["delegate_permission/common.handle_all_url"]"#))
        #expect(relation.diagnostics.first?.message.contains("did you mean \"delegate_permission/common.handle_all_urls\"?") == true)
        #expect(relation.isValid, "an unknown relation is a warning")
        let namespace = AssociationFile(kind: .assetLinks, #"[{"relation": \#(handleAllURLs), "target": {"namespace": "android-app"}}]"#)
        #expect(namespace.diagnostics.first?.message.contains("did you mean \"android_app\"?") == true)
    }

    @Test func aLowerCaseFingerprintIsAWarningNotAnError() {
        let file = AssociationFile(kind: .assetLinks, androidApp(#""package_name": "com.example.app", "sha256_cert_fingerprints": ["\#(fingerprint.lowercased())"]"#))
        #expect(file.diagnostics.map(\.code) == [.assetLinksLowercaseFingerprint])
        #expect(file.isValid)
    }
}
