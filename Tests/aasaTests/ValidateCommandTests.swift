import Foundation
import Testing

private let goodFile = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#
private let goodAssetLinks = #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "web", "site": "https://example.com"}}]"#
private let goodWebAuthn = #"{"origins": ["https://example.co.uk"]}"#

@Suite struct ValidateCommandTests {
    @Test func theExampleConfigIsValid() throws {
        let r = try AASABinary.run(["validate", "config"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout == "0 errors, 0 warnings in 5 files\n")
    }

    @Test func printsCompilerStyleFindingsAndASummary() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("bad.json", "{\n  \"applinks\": {\"details\": [{\"appIDs\": [\"ABCDE12345.com.example.app\"] \"components\": [{\"/\": 1}]}]}\n}\n")
        let r = try AASABinary.run(["validate", path])
        #expect(r.status == 1)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("\(path):2:69: error: missing ',' between object members [missing-comma]"))
        #expect(lines.contains { $0.hasPrefix("\(path):2:91: error: expected a string pattern, found a number") && $0.hasSuffix("[wrong-type]") })
        #expect(lines.last == "2 errors, 0 warnings in 1 file")
    }

    @Test func warningsPassUnlessStrict() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("warn.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a", "Exclude": true}]}]}}"#)
        let lenient = try AASABinary.run(["validate", path])
        #expect(lenient.status == 0)
        #expect(lenient.stdout.contains("warning: unknown key \"Exclude\""))
        #expect(lenient.stdout.hasSuffix("0 errors, 1 warning in 1 file\n"))
        let strict = try AASABinary.run(["validate", "--strict", path])
        #expect(strict.status == 1)
        #expect(strict.stdout.hasSuffix("0 errors, 1 warning in 1 file (--strict: warnings count as errors)\n"), "\(strict.stdout)")
    }

    @Test func aMissingFileIsReportedWithoutASummaryThatReadsLikeSuccess() throws {
        let r = try AASABinary.run(["validate", "/nonexistent/apple-app-site-association"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("/nonexistent/apple-app-site-association: cannot open: No such file or directory"), "\(r.stderr)")
        #expect(r.stdout.isEmpty, "\(r.stdout)")
        // Beside a file that was read, the summary counts what was not.
        let dir = try TemporaryDirectory()
        let good = try dir.write("good.json", goodFile)
        let both = try AASABinary.run(["validate", good, "/nonexistent/apple-app-site-association"])
        #expect(both.status == 2)
        #expect(both.stdout == "0 errors, 0 warnings in 1 file; 1 path not read\n", "\(both.stdout)")
    }

    @Test func writesJSONWithPositionsAndPaths() throws {
        let dir = try TemporaryDirectory()
        let good = try dir.write("good.json", goodFile)
        let bad = try dir.write("bad.json", #"{"applinks": {"details": [{"appIDs": ["ABC.x"], "components": []}]}}"#)
        let r = try AASABinary.run(["validate", "--format", "json", good, bad])
        #expect(r.status == 1)
        let files = try #require(try r.json()["files"] as? [[String: Any]])
        #expect(files.count == 2)
        #expect(files[0]["path"] as? String == good)
        #expect(files[0]["valid"] as? Bool == true)
        #expect((files[0]["diagnostics"] as? [Any])?.isEmpty == true)
        #expect(files[1]["valid"] as? Bool == false)
        let diagnostics = try #require(files[1]["diagnostics"] as? [[String: Any]])
        let appID = try #require(diagnostics.first { $0["code"] as? String == "invalid-app-id" })
        #expect(appID["severity"] as? String == "error")
        #expect(appID["line"] as? Int == 1)
        #expect(appID["column"] as? Int == 39)
        #expect(appID["jsonPath"] as? String == "$.applinks.details[0].appIDs[0]")
        #expect(diagnostics.contains { $0["code"] as? String == "empty-list" && $0["severity"] as? String == "warning" })
    }

    @Test func validatesEverySiteOfAConfigDirectory() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/a.example.com/apple-app-site-association", goodFile)
        try dir.write("config/*.example.net/apple-app-site-association", "{")
        try dir.write("config/..data/ignored/apple-app-site-association", "{")
        let r = try AASABinary.run(["validate", dir.url.appendingPathComponent("config").path])
        #expect(r.status == 1)
        #expect(r.stdout.contains("/config/*.example.net/apple-app-site-association:1:2: error:"))
        #expect(!r.stdout.contains("..data"))
        #expect(r.stdout.hasSuffix("in 2 files\n"))
    }

    @Test func theSummaryCountsOneOfAnythingInTheSingular() throws {
        let dir = try TemporaryDirectory()
        let one = try dir.write("one.json", #"{"applinks": {"details": [{"appIDs": ["ABC.x"], "components": [{"/": "/a", "Exclude": true}]}]}}"#)
        let two = try dir.write("two.json", "{\"webcredentials\": {\"apps\": [\"ABC.x\"]}, \"x\": 1, \"y\": 2}")
        #expect(try AASABinary.run(["validate", one]).stdout.hasSuffix("\n1 error, 1 warning in 1 file\n"))
        #expect(try AASABinary.run(["validate", one, two]).stdout.hasSuffix("\n2 errors, 3 warnings in 2 files\n"))
    }

    @Test func aFileIsCheckedByTheRulesItsNameSelects() throws {
        let dir = try TemporaryDirectory()
        let links = try dir.write("site/assetlinks.json", #"[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "app", "sha256_cert_fingerprints": []}}]"#)
        let webauthn = try dir.write("site/webauthn", #"{"origins": ["https://example.com/login"]}"#)
        let merchant = try dir.write("elsewhere/apple-developer-merchantid-domain-association", "7B22\u{7F}\n")
        let r = try AASABinary.run(["validate", links, webauthn, merchant])
        #expect(r.status == 1)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains { $0.hasPrefix("\(links):1:118: error: package name \"app\"") && $0.hasSuffix("[assetlinks-invalid-package-name]") })
        #expect(lines.contains { $0.hasPrefix("\(links):1:153: error:") && $0.hasSuffix("[empty-required-list]") })
        #expect(lines.contains { $0.hasPrefix("\(webauthn):1:14: error:") && $0.hasSuffix("[webauthn-invalid-origin]") })
        #expect(lines.contains { $0.hasPrefix("\(merchant):1:5: error: byte 0x7F is not printable ASCII") && $0.hasSuffix("[merchantid-invalid-byte]") })
        #expect(lines.last == "4 errors, 0 warnings in 3 files")
    }

    @Test func kindForcesTheRulesOfAFileWithAnotherName() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("related-origins.json", goodWebAuthn)
        let asAASA = try AASABinary.run(["validate", path])
        #expect(asAASA.status == 0)
        #expect(asAASA.stdout.contains("[no-service]"))
        let asWebAuthn = try AASABinary.run(["validate", "--kind", "webauthn", path])
        #expect(asWebAuthn.status == 0)
        #expect(asWebAuthn.stdout == "0 errors, 0 warnings in 1 file\n")
        let asAssetLinks = try AASABinary.run(["validate", "--kind", "assetlinks", "--format", "json", path])
        #expect(asAssetLinks.status == 1)
        let files = try #require(try asAssetLinks.json()["files"] as? [[String: Any]])
        let diagnostics = try #require(files.first?["diagnostics"] as? [[String: Any]])
        #expect(diagnostics.first?["code"] as? String == "root-not-array")
        #expect(diagnostics.first?["jsonPath"] as? String == "$")
        // --kind even overrides a file name that names another kind.
        let named = try dir.write("assetlinks.json", goodWebAuthn)
        #expect(try AASABinary.run(["validate", "--kind", "webauthn", named]).status == 0)
    }

    @Test func kindIsBadUsageWithADirectoryOrAnUnknownName() throws {
        let bad = try AASABinary.run(["validate", "--kind", "webauthn", "config"])
        #expect(bad.status == 2)
        #expect(bad.stderr.contains("--kind applies to files"))
        #expect(try AASABinary.run(["validate", "--kind", "android", "config/example.com/webauthn"]).status == 2)
    }

    @Test func aSiteFolderValidatesEveryAssociationFileInIt() throws {
        let r = try AASABinary.run(["validate", "--format", "json", "config/example.com"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let files = try #require(try r.json()["files"] as? [[String: Any]])
        #expect(files.map { $0["path"] as? String } == ["config/example.com/apple-app-site-association",
                                                        "config/example.com/assetlinks.json", "config/example.com/webauthn"])
        #expect(files.allSatisfy { $0["valid"] as? Bool == true })

        let dir = try TemporaryDirectory()
        let site = try dir.write("example.net/webauthn", #"{"origins": ["https://example.net", "https://example.net"]}"#)
        let text = try AASABinary.run(["validate", dir.url.appendingPathComponent("example.net").path])
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("\(site):1:37: warning:"))
        #expect(text.stdout.hasSuffix("0 errors, 1 warning in 1 file\n"))
        #expect(try AASABinary.run(["validate", "--strict", dir.url.appendingPathComponent("example.net").path]).status == 1)
    }

    @Test func aConfigDirectoryValidatesEveryFileOfEverySite() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/a.example.com/apple-app-site-association", goodFile)
        try dir.write("config/a.example.com/assetlinks.json", goodAssetLinks)
        try dir.write("config/b.example.com/webauthn", goodWebAuthn)
        try dir.write("config/*.example.net/apple-developer-merchantid-domain-association", "")
        try dir.write("config/*.example.net/notes.txt", "not an association file")
        let config = dir.url.appendingPathComponent("config").path
        let r = try AASABinary.run(["validate", "--format", "json", config])
        #expect(r.status == 1)
        let files = try #require(try r.json()["files"] as? [[String: Any]])
        #expect(files.map { ($0["path"] as? String)?.replacing(config + "/", with: "") } == [
            "*.example.net/apple-developer-merchantid-domain-association",
            "a.example.com/apple-app-site-association", "a.example.com/assetlinks.json",
            "b.example.com/webauthn",
        ])
        #expect(files.map { $0["valid"] as? Bool } == [false, true, true, true])
        let diagnostics = try #require(files[0]["diagnostics"] as? [[String: Any]])
        #expect(diagnostics.map { $0["code"] as? String } == ["empty-file"])

        try dir.write("config/*.example.net/apple-developer-merchantid-domain-association", "7B2270737049\n")
        let fixed = try AASABinary.run(["validate", config])
        #expect(fixed.status == 0, "\(fixed.stdout)\(fixed.stderr)")
        #expect(fixed.stdout == "0 errors, 0 warnings in 4 files\n")
    }

    @Test func aSiteFolderWithoutAnyAssociationFileIsReported() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/a.example.com/apple-app-site-association", goodFile)
        try dir.write("config/empty.example.com/README", "nothing to serve")
        let r = try AASABinary.run(["validate", dir.url.appendingPathComponent("config").path])
        #expect(r.status == 2)
        #expect(r.stderr.contains("empty.example.com: no association file"))
        #expect(r.stdout.hasSuffix("0 errors, 0 warnings in 1 file; 1 path not read\n"), "\(r.stdout)")
    }

    @Test func unreadableInputIsExitTwo() throws {
        let r = try AASABinary.run(["validate", "/nonexistent/apple-app-site-association"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("/nonexistent/apple-app-site-association"))
    }

    @Test func badUsageIsExitTwo() throws {
        #expect(try AASABinary.run(["validate"]).status == 2)
        #expect(try AASABinary.run(["validate", "--format", "xml", "config"]).status == 2)
        #expect(try AASABinary.run(["frobnicate"]).status == 2)
    }
}
