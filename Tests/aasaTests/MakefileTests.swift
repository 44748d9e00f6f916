import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct MakefileTests {
    /// `make run` with the build step skipped and `serve` replaced by a stand-in that only says it
    /// ran, so the test binds no port: what matters is that findings do not stop the server.
    @Test func makeRunPrintsTheFindingsAndServesAnyway() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/good.example/apple-app-site-association", #"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#)
        try dir.write("config/bad.example/apple-app-site-association", #"{"applinks": "#)
        let standIn = try dir.write("aasa", """
        #!/bin/sh
        if [ "$1" = validate ]; then exec '\(AASABinary.url.path)' "$@"; fi
        echo "stand-in: $*"
        """)
        chmod(standIn, 0o755)
        let r = try Shell.run("/usr/bin/make", ["-s", "-C", AASABinary.packageRoot.path, "-o", "build", "run",
                                                "DEBUG_BIN=\(standIn)", "CONFIG=\(dir.url.appendingPathComponent("config").path)"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("bad.example/apple-app-site-association:1:"), "the findings are kept: \(r.stdout)")
        #expect(r.stdout.contains("serving anyway"))
        #expect(r.stdout.contains("stand-in: serve --dev --config"))
    }

    /// One fuzzer for one second: what `make test` prints of its fuzz run is a line per step, the
    /// build's hundreds of linker warnings and libFuzzer's progress kept in the logs it names.
    @Test func fuzzSmokePrintsALinePerFuzzerAndKeepsTheBuildAndLibFuzzerOutputInLogs() throws {
        let dir = try TemporaryDirectory()
        let buildLog = dir.url.appendingPathComponent("fuzz-build.log").path
        let smokeLog = dir.url.appendingPathComponent("fuzz-smoke.log").path
        // Run from `make test` (perhaps with -j), the outer make's flags and job server are not this one's.
        let r = try runCommand(URL(fileURLWithPath: "/usr/bin/make"),
                               ["-s", "-C", AASABinary.packageRoot.path, "fuzz-smoke", "FUZZ_TARGETS=proxy", "FUZZ_SMOKE_TIME=1",
                                "FUZZ_BUILD_LOG=\(buildLog)", "FUZZ_SMOKE_LOG=\(smokeLog)"],
                               environment: ["MAKEFLAGS": "", "MFLAGS": "", "MAKELEVEL": ""], timeout: 600)
        #expect(r.status == 0, "\(r.stdout)\(r.stderr)")
        let lines = (r.stdout + r.stderr).split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(lines.count) lines:\n\(r.stdout)\(r.stderr)")
        #expect(lines.first == "fuzz: building the fuzzers (proxy); compiler and linker output in \(buildLog)")
        #expect(lines.dropFirst().first == "fuzz-smoke: each fuzzer for 1 s; libFuzzer's output in \(smokeLog)")
        #expect(lines.last?.wholeMatch(of: /fuzz-smoke: proxy-fuzz ran [0-9]+ inputs in 1 s, no crash/) != nil, "\(lines.last ?? "")")
        #expect(try String(contentsOfFile: smokeLog, encoding: .utf8).contains("stat::number_of_executed_units"))
        #expect(FileManager.default.fileExists(atPath: buildLog))
    }
}
