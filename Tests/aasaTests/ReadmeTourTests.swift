import Foundation
import Testing

/// The README's "A short tour", run as written: every `$ aasa …` line of its code blocks, with the
/// built binary from the repository root, against the files in `examples/` (and `config/`); what
/// it prints must be the lines under it. The README is the one expected text: a change to a
/// message shows here as a diff, and the README is updated with it (docs/testing.md). The same
/// holds for the commands shown in docs/validation.md and docs/check.md.
@Suite(.serialized) struct ReadmeTourTests {
    /// One `$ …` line of the tour and the output under it.
    struct Step: CustomStringConvertible {
        var file: String
        var arguments: [String]
        var expected: String
        var line: Int

        var description: String { "\(file):\(line): $ aasa \(arguments.joined(separator: " "))" }
    }

    /// The pages whose commands are run besides the README's tour.
    static let documentation = ["docs/validation.md", "docs/check.md"]

    /// The code blocks of `file` (of its `section` only, when given), each with the line it starts on.
    static func blocks(_ file: String = "README.md", section: String? = "## A short tour") throws -> [(line: Int, lines: [String])] {
        let text = try String(contentsOf: AASABinary.packageRoot.appendingPathComponent(file), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var start = -1
        var end = lines.endIndex
        if let section {
            guard let heading = lines.firstIndex(of: section) else { return [] }
            start = heading
            end = lines[(heading + 1)...].firstIndex { $0.hasPrefix("## ") } ?? lines.endIndex
        }
        var blocks: [(line: Int, lines: [String])] = []
        var open: (line: Int, lines: [String])?
        for i in (start + 1)..<end {
            if lines[i].hasPrefix("```") {
                if let block = open { blocks.append(block); open = nil } else { open = (i + 2, []) }
            } else if open != nil {
                open!.lines.append(lines[i])
            }
        }
        return blocks
    }

    /// Every command of the README's tour, or of a page of the documentation, with its expected output.
    static func steps(_ file: String = "README.md") throws -> [Step] {
        var steps: [Step] = []
        for block in try file == "README.md" ? blocks() : blocks(file, section: nil) {
            // Output lines before a block's first command belong to none (and fail the test above).
            var current: Int?
            for (offset, text) in block.lines.enumerated() {
                if text.hasPrefix("$ aasa ") {
                    let arguments = Self.shellWords(String(text.dropFirst("$ aasa ".count)))
                    steps.append(Step(file: file, arguments: arguments, expected: "", line: block.line + offset))
                    current = steps.count - 1
                } else if let current {
                    steps[current].expected += text + "\n"
                }
            }
        }
        return steps
    }

    /// Expected and actual output, line by line: `-` for a line the README has and the command did
    /// not print, `+` for one it printed and the README lacks.
    static func diff(expected: String, actual: String) -> String {
        let a = expected.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let b = actual.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // The longest common subsequence, then a walk through it.
        var common = Array(repeating: Array(repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in stride(from: a.count - 1, through: 0, by: -1) {
            for j in stride(from: b.count - 1, through: 0, by: -1) {
                common[i][j] = a[i] == b[j] ? common[i + 1][j + 1] + 1 : max(common[i + 1][j], common[i][j + 1])
            }
        }
        var out: [String] = []
        var (i, j) = (0, 0)
        while i < a.count || j < b.count {
            if i < a.count, j < b.count, a[i] == b[j] {
                out.append("  " + a[i]); i += 1; j += 1
            } else if i < a.count, j == b.count || common[i + 1][j] >= common[i][j + 1] {
                out.append("- " + a[i]); i += 1
            } else {
                out.append("+ " + b[j]); j += 1
            }
        }
        return out.joined(separator: "\n")
    }

    private func expectSame(_ step: Step, _ actual: String, _ stderr: String) {
        if actual != step.expected {
            Issue.record("\(step) prints otherwise (- \(step.file), + actual):\n\(Self.diff(expected: step.expected, actual: actual))")
        }
        #expect(stderr.isEmpty, "\(step) also prints on stderr, which the README does not show:\n\(stderr)")
    }

    @Test func everyBlockOfTheTourIsACommandWithItsOutput() throws {
        let blocks = try Self.blocks()
        #expect(blocks.count >= 3, "the tour has validate, match and check")
        for block in blocks {
            #expect(block.lines.first?.hasPrefix("$ aasa ") == true, "README.md:\(block.line): a block that does not start with the command that prints it cannot be checked")
        }
        let commands = try Self.steps().map { $0.arguments.first ?? "" }
        #expect(Set(commands).isSuperset(of: ["validate", "match", "check"]), "\(commands)")
    }

    @Test func theValidateAndMatchExamplesPrintWhatTheReadmeShows() throws {
        for step in try Self.steps() where step.arguments.first != "check" {
            let r = try AASABinary.run(step.arguments)
            expectSame(step, r.stdout, r.stderr)
        }
    }

    @Test func theExamplesOfTheDocumentationPrintWhatItShows() throws {
        let steps = try Self.documentation.flatMap { try Self.steps($0) }
        #expect(Set(steps.map { $0.arguments.first ?? "" }) == ["validate", "match", "check", "entitlements"], "\(steps)")
        for step in steps where step.arguments.first != "check" {
            let r = try AASABinary.run(step.arguments)
            expectSame(step, r.stdout, r.stderr)
        }
    }

    /// The check runs against `aasa serve` of examples/check with the test CA, and a stand-in for
    /// Apple's CDN that holds examples/check/cdn-copy.json. The README's ports, CA file and
    /// certificate date are the only things put in place of this run's.
    @Test(arguments: ["README.md", "docs/check.md"])
    func theCheckExamplePrintsWhatItShowsAgainstALocalServerAndCDN(_ file: String) throws {
        for step in try Self.steps(file) where step.arguments.first == "check" {
            try runCheck(step)
        }
    }

    private func runCheck(_ step: Step) throws {
        let examples = AASABinary.packageRoot.appendingPathComponent("examples/check")
        let served = try String(contentsOf: examples.appendingPathComponent("example.com/apple-app-site-association"), encoding: .utf8)
        let server = try ServerProcess(sites: ["example.com": served])
        let cdn = try FakeCDN()
        cdn.answer("example.com", FakeCDN.copy(try String(contentsOf: examples.appendingPathComponent("cdn-copy.json"), encoding: .utf8)))

        var arguments = step.arguments
        var readmeConnect = ""
        for (i, argument) in arguments.enumerated().dropLast() {
            switch argument {
            case "--connect": readmeConnect = arguments[i + 1]; arguments[i + 1] = "127.0.0.1:\(server.https)"
            case "--cacert": arguments[i + 1] = TestCertificates.caFile
            case "--cdn-base": arguments[i + 1] = cdn.base
            default: break
            }
        }
        let r = try AASABinary.run(arguments)
        var actual = r.stdout
        if !readmeConnect.isEmpty { actual = actual.replacingOccurrences(of: "127.0.0.1:\(server.https)", with: readmeConnect) }
        if let readmeDate = step.expected.firstMatch(of: /valid until (\d{4}-\d{2}-\d{2})/)?.output.1 {
            actual = actual.replacing(/valid until \d{4}-\d{2}-\d{2}/, with: "valid until \(readmeDate)")
        }
        expectSame(step, actual, r.stderr)
        #expect(cdn.arrivals(for: "example.com").count == 1, "the check asked the stand-in CDN")
    }

    /// A command line's words as a POSIX shell splits them: spaces separate, and single quotes
    /// keep what they hold (a URL with `?` is quoted in the docs, as a shell needs it).
    static func shellWords(_ line: String) -> [String] {
        var words: [String] = []
        var word = ""
        var quoted = false
        var started = false
        for c in line {
            if c == "'" {
                quoted.toggle()
                started = true
            } else if c == " " && !quoted {
                if started { words.append(word) }
                word = ""
                started = false
            } else {
                word.append(c)
                started = true
            }
        }
        if started { words.append(word) }
        return words
    }
}
