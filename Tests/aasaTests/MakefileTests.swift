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
}
