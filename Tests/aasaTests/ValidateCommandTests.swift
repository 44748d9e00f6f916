import Foundation
import Testing

private let goodFile = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#

@Suite struct ValidateCommandTests {
    @Test func theExampleConfigIsValid() throws {
        let r = try AASABinary.run(["validate", "config"])
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        #expect(r.stdout == "0 errors, 0 warnings in 3 files\n")
    }

    @Test func printsCompilerStyleFindingsAndASummary() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("bad.json", "{\n  \"applinks\": {\"details\": [{\"appIDs\": [\"ABCDE12345.com.example.app\"] \"components\": [{\"/\": 1}]}]}\n}\n")
        let r = try AASABinary.run(["validate", path])
        #expect(r.status == 1)
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("\(path):2:69: error: missing ',' between object members [missing-comma]"))
        #expect(lines.contains { $0.hasPrefix("\(path):2:91: error: expected a string pattern, found a number") && $0.hasSuffix("[wrong-type]") })
        #expect(lines.last == "2 errors, 0 warnings in 1 files")
    }

    @Test func warningsPassUnlessStrict() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("warn.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a", "Exclude": true}]}]}}"#)
        let lenient = try AASABinary.run(["validate", path])
        #expect(lenient.status == 0)
        #expect(lenient.stdout.contains("warning: unknown key \"Exclude\""))
        #expect(lenient.stdout.hasSuffix("0 errors, 1 warnings in 1 files\n"))
        let strict = try AASABinary.run(["validate", "--strict", path])
        #expect(strict.status == 1)
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
