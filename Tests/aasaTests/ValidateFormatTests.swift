import Foundation
import Testing

/// Two errors and warnings, among them a message with `%` (unmatchable-pattern quotes it) and
/// the same warning twice (two components with the same unknown key).
private let findings = #"{"applinks": {"details": [{"appIDs": ["ABC.x", "abcde12345.com.example"], "components": [{"/": "/a%", "Exclude": true}, {"/": "/b", "Exclude": true}]}]}}"#
private let goodFile = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#

/// `aasa validate --format github|sarif|gitlab`: what CI systems read.
@Suite struct ValidateFormatTests {
    @Test func githubCommandsEscapeCommasAndColonsInThePathAndPercentInTheMessage() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("a,b:c/apple-app-site-association", findings)
        let r = try AASABinary.run(["validate", "--format", "github", path])
        #expect(r.status == 1)
        let file = path.replacingOccurrences(of: ",", with: "%2C").replacingOccurrences(of: ":", with: "%3A")
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == #"::error file=\#(file),line=1,col=39,title=invalid-app-id::invalid app ID "ABC.x": the prefix "ABC" has 3 characters; a Team ID has 10"#)
        #expect(lines.contains { $0.hasPrefix("::warning file=\(file),line=1,col=") && $0.contains(",title=unmatchable-pattern::'%25' without two hex digits") })
        #expect(lines.filter { $0.hasPrefix("::warning file=\(file),") }.count == 4)
        #expect(lines.last == "1 error, 4 warnings in 1 file")
        #expect(lines.count == 6)
    }

    @Test func sarifIsValidAgainstTheSARIF210Schema() throws {
        let dir = try TemporaryDirectory()
        let bad = try dir.write("bad/apple-app-site-association", findings)
        let good = try dir.write("good/apple-app-site-association", goodFile)
        let r = try AASABinary.run(["validate", "--format", "sarif", good, bad])
        #expect(r.status == 1)
        let schema = AASABinary.packageRoot.appendingPathComponent("Tests/Fixtures/sarif/sarif-schema-2.1.0.json").path
        // The schema is draft-04; the same validator must refuse a log without its runs, or it checked nothing.
        let check = """
        import json, sys, jsonschema
        schema = json.load(open(sys.argv[1]))
        log = json.load(sys.stdin)
        validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
        validator.validate(log)
        assert not validator.is_valid({"version": "2.1.0"}), "the schema accepts a log without runs"
        print("valid")
        """
        let v = try Shell.run("/usr/bin/env", ["python3", "-c", check, schema], input: r.stdout, timeout: 60)
        #expect(v.status == 0, "\(v.stdout)\(v.stderr)")
        #expect(v.stdout == "valid\n")
    }

    @Test func sarifHasOneRuleWithItsTextsPerCodeAndOneResultPerFinding() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("site/apple-app-site-association", findings)
        let r = try AASABinary.run(["validate", "--format", "sarif", path])
        let log = try r.json()
        #expect(log["version"] as? String == "2.1.0")
        let run = try #require((log["runs"] as? [[String: Any]])?.first)
        let driver = try #require((run["tool"] as? [String: Any])?["driver"] as? [String: Any])
        #expect(driver["name"] as? String == "aasa")
        let rules = try #require(driver["rules"] as? [[String: Any]])
        #expect(rules.map { $0["id"] as? String } == ["app-id-lowercase-prefix", "invalid-app-id", "unknown-key", "unmatchable-pattern"])
        for rule in rules {
            for field in ["shortDescription", "fullDescription", "help"] {
                let text = (rule[field] as? [String: Any])?["text"] as? String ?? ""
                #expect(!text.isEmpty, "\(rule["id"] ?? "") has no \(field)")
            }
        }
        let results = try #require(run["results"] as? [[String: Any]])
        #expect(results.count == 5)
        let first = results[0]
        #expect(first["ruleId"] as? String == "invalid-app-id")
        #expect(first["level"] as? String == "error")
        #expect((first["message"] as? [String: Any])?["text"] as? String == #"invalid app ID "ABC.x": the prefix "ABC" has 3 characters; a Team ID has 10"#)
        let location = try #require(((first["locations"] as? [[String: Any]])?.first)?["physicalLocation"] as? [String: Any])
        #expect((location["artifactLocation"] as? [String: Any])?["uri"] as? String == path)
        let region = try #require(location["region"] as? [String: Any])
        #expect(region["startLine"] as? Int == 1)
        #expect(region["startColumn"] as? Int == 39)
        #expect(results.filter { $0["level"] as? String == "warning" }.count == 4)
    }

    @Test func gitlabFingerprintsAreTheSameInEveryRunAndUnique() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("site/apple-app-site-association", findings)
        let first = try AASABinary.run(["validate", "--format", "gitlab", path])
        let second = try AASABinary.run(["validate", "--format", "gitlab", path])
        #expect(first.status == 1)
        let issues = try #require(try JSONSerialization.jsonObject(with: Data(first.stdout.utf8)) as? [[String: Any]])
        let again = try #require(try JSONSerialization.jsonObject(with: Data(second.stdout.utf8)) as? [[String: Any]])
        #expect(issues.count == 5)
        let fingerprints = issues.compactMap { $0["fingerprint"] as? String }
        #expect(fingerprints.count == 5)
        #expect(Set(fingerprints).count == 5)
        #expect(again.compactMap { $0["fingerprint"] as? String } == fingerprints)
        // The two identical unknown-key warnings still get fingerprints of their own.
        #expect(issues.filter { $0["check_name"] as? String == "unknown-key" }.count == 2)
        let error = try #require(issues.first { $0["check_name"] as? String == "invalid-app-id" })
        #expect(error["severity"] as? String == "major")
        #expect(error["description"] as? String == #"invalid app ID "ABC.x": the prefix "ABC" has 3 characters; a Team ID has 10"#)
        let location = try #require(error["location"] as? [String: Any])
        #expect(location["path"] as? String == path)
        #expect((location["lines"] as? [String: Any])?["begin"] as? Int == 1)
        #expect(issues.filter { $0["severity"] as? String == "minor" }.count == 4)
    }

    @Test func aFileShowsItsFirstHundredFindingsInEveryFormatAndTheSummaryCountsAll() throws {
        let dir = try TemporaryDirectory()
        let components = (0..<150).map { #"{"/": "/p\#($0)", "X": 1}"# }.joined(separator: ", ")
        let path = try dir.write("many/apple-app-site-association",
                                 #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example"], "components": [\#(components)]}]}}"#)

        let text = try AASABinary.run(["validate", path])
        let lines = text.stdout.split(separator: "\n").map(String.init)
        #expect(lines.filter { $0.hasPrefix("\(path):") && $0.hasSuffix("[unknown-key]") }.count == 100)
        #expect(lines.contains("\(path): note: 50 more findings not shown"))
        #expect(lines.last == "0 errors, 150 warnings in 1 file")

        let json = try AASABinary.run(["validate", "--format", "json", path]).json()
        #expect(((json["files"] as? [[String: Any]])?.first?["diagnostics"] as? [Any])?.count == 100)

        let github = try AASABinary.run(["validate", "--format", "github", path]).stdout.split(separator: "\n")
        #expect(github.filter { $0.hasPrefix("::warning ") }.count == 100)
        #expect(github.last == "0 errors, 150 warnings in 1 file")

        let sarif = try AASABinary.run(["validate", "--format", "sarif", path]).json()
        #expect(((sarif["runs"] as? [[String: Any]])?.first?["results"] as? [Any])?.count == 100)

        let gitlab = try AASABinary.run(["validate", "--format", "gitlab", path]).stdout
        #expect((try JSONSerialization.jsonObject(with: Data(gitlab.utf8)) as? [Any])?.count == 100)
    }
}
