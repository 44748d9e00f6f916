import AASACore
import Testing
@testable import AASACommands

/// `aasa validate`'s report, as each format writes it, from files validated in memory.
@Suite struct ValidationReportTests {
    private static let path = "config/example.com/apple-app-site-association"
    private static let valid = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/buy/*"}]}]}}"#

    private static func report(_ json: String, strict: Bool = false, unread: Int = 0) -> ValidationReport {
        let file = AssociationFile(kind: .aasa, bytes: Array(json.utf8))
        return ValidationReport(files: [.init(path: path, file: file)], strict: strict, unread: unread)
    }

    @Test func theSummaryCountsInSingularAndPlural() {
        #expect(ValidationReport.summaryCounts(errors: 1, warnings: 2, files: 1) == "1 error, 2 warnings in 1 file")
        #expect(ValidationReport.summary(errors: 0, warnings: 1, files: 3) == "0 errors, 1 warning in 3 files\n")
    }

    @Test func aRunThatReadNothingHasNoSummaryAndPathsNotReadAreCounted() {
        #expect(ValidationReport(files: [], unread: 2).summary == "")
        #expect(ValidationReportTests.report(ValidationReportTests.valid, unread: 1).summary == "0 errors, 0 warnings in 1 file; 1 path not read\n")
        #expect(ValidationReportTests.report(ValidationReportTests.valid, strict: true).summary == "0 errors, 0 warnings in 1 file\n",
                "--strict is named only when there are warnings it turns into errors")
    }

    @Test func textHasOneCompilerStyleLinePerFindingThenTheSummary() throws {
        let report = ValidationReportTests.report(#"{"applinks": "#)
        #expect(report.errorCount > 0)
        let lines = report.text().split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == report.errorCount + report.warningCount + 1)
        let first = try #require(report.files.first?.shown.first)
        #expect(lines.first.map(String.init) == "\(ValidationReportTests.path):\(first.line):\(first.column): error: \(first.message) [\(first.code.rawValue)]")
        #expect(lines.last.map(String.init) == ValidationReport.summaryCounts(errors: report.errorCount, warnings: report.warningCount, files: 1))
    }

    @Test func githubEscapesWhatWouldEndAMessageOrAProperty() {
        #expect(ValidationReport.githubData("100% done\r\nnext: a, b") == "100%25 done%0D%0Anext: a, b")
        #expect(ValidationReport.githubProperty("C:/sites,old\n") == "C%3A/sites%2Cold%0A")
    }

    @Test func aGithubCommandNamesTheFileLineColumnAndCode() throws {
        let report = ValidationReportTests.report(#"{"applinks": "#)
        let first = try #require(report.files.first?.shown.first)
        let command = report.githubCommands().split(separator: "\n").first.map(String.init)
        #expect(command == "::error file=\(ValidationReportTests.path),line=\(first.line),col=\(first.column),title=\(first.code.rawValue)::\(ValidationReport.githubData(first.message))")
    }

    /// Two 64-bit FNV-1a hashes; the first half is the standard FNV-1a 64 ("" is the offset
    /// basis, "a" and "foobar" are the test vectors of the FNV reference code).
    @Test func fingerprintsAreTheTwoFNV1aHashesOfTheText() {
        #expect(ValidationReport.fingerprint("") == "cbf29ce484222325" + "6c62272e07bb0142")
        #expect(ValidationReport.fingerprint("a").hasPrefix("af63dc4c8601ec8c"))
        #expect(ValidationReport.fingerprint("foobar").hasPrefix("85944171f73967e8"))
        #expect(ValidationReport.fingerprint("foobar") != ValidationReport.fingerprint("foobaz"))
        #expect(ValidationReport.fingerprint("a").count == 32)
    }
}
