import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Listening sockets passed as systemd passes them (docs/deployment.md, "systemd"), from
/// `Tests/systemd/socket-activation.py`: descriptors from 3 on, LISTEN_FDS, LISTEN_PID equal to
/// the server's own PID, LISTEN_FDNAMES.
@Suite struct ServeSocketActivationTests {
    @Test func aHeldSocketAcrossThreeRestartsRefusesNoConnection() throws {
        let server = try ServerProcess(workers: 1)
        let admin = try freePort()
        let log = server.directory.url.appendingPathComponent("servers.log").path
        // The launcher holds the socket, as systemd does, and restarts the server on it three
        // times while three clients each open a new connection per request.
        let r = try Shell.run("/usr/bin/env", ["AASA_TEST_LOG=\(log)", "AASA_CDN_WATCH=off", "python3", launcher, "restarts", "3", "\(admin)", "--",
                                               AASABinary.url.path, "serve", "--config", server.config.path, "--admin", "127.0.0.1:\(admin)",
                                               "--workers", "2"], timeout: 120)
        let logText = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)\n\(logText.suffix(3000))")
        let tally = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any]
        #expect(tally?["failures"] as? [String] == [], "\(r.stdout.prefix(2000))\n\(logText.suffix(3000))")
        #expect(tally?["exits"] as? [Int] == [0, 0, 0, 0])
        #expect((tally?["requests"] as? Int ?? 0) > 100)
        // Every server served the socket it was given, and bound none of its own for it.
        #expect(logText.components(separatedBy: "(passed by systemd, descriptor 3)").count - 1 == 4, "\(logText.suffix(2000))")
    }

    @Test func aFlagOrVariableNamingAnAddressForAPassedListenerIsBadUsage() throws {
        let server = try ServerProcess(workers: 1)
        for (names, extra, environment) in [("https", ["--https", "127.0.0.1:0"], [String]()), ("http", ["--http", "127.0.0.1:0"], []),
                                            ("https:admin", ["--admin", "127.0.0.1:0"], []), ("https", [], ["AASA_HTTPS=127.0.0.1:0"])] {
            let r = try Shell.run("/usr/bin/env", environment + ["python3", launcher, "once", names, "--", AASABinary.url.path, "serve",
                                                                 "--config", server.config.path, "--certs", server.certs.path] + extra,
                                  timeout: 30)
            #expect(r.status == 2, "\(names) \(extra) \(environment): \(r.stderr)")
            #expect(r.stderr.contains("systemd passed that socket"), "\(r.stderr)")
        }
    }

    @Test func aPassedSocketWithANameThatIsNoListenerIsBadUsage() throws {
        let server = try ServerProcess(workers: 1)
        let r = try Shell.run("/usr/bin/env", ["python3", launcher, "once", "https:metrics", "--", AASABinary.url.path, "serve",
                                               "--config", server.config.path, "--certs", server.certs.path], timeout: 30)
        #expect(r.status == 2)
        #expect(r.stderr.contains("FileDescriptorName=https, http or admin"), "\(r.stderr)")
    }

    @Test func aSingleUnnamedSocketIsTheHTTPSListener() throws {
        let server = try ServerProcess(workers: 1)
        let admin = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        // `-`: no LISTEN_FDNAMES at all, as a socket unit without FileDescriptorName= passes it.
        process.arguments = ["AASA_CDN_WATCH=off", "python3", launcher, "once", "-", "--", AASABinary.url.path, "serve",
                             "--config", server.config.path, "--certs", server.certs.path, "--admin", "127.0.0.1:\(admin)", "--workers", "1"]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let errors = OutputBuffer(err.fileHandleForReading)
        let output = OutputBuffer(out.fileHandleForReading)
        try process.run()
        defer { process.stop(grace: 10) }
        #expect(errors.wait(for: "ready:", timeout: 20), "\(errors.text)")
        let port = output.text.split(separator: "\n").first.flatMap { Int($0.split(separator: " ").last ?? "") }
        #expect(port != nil && errors.text.contains("listening https 127.0.0.1:\(port ?? 0) (passed by systemd"), "\(errors.text)")
        // No default listener of its own beside it.
        #expect(!errors.text.contains("0.0.0.0:8443"))
        let r = try Shell.run("/usr/bin/curl", ["-sS", "-i", "--http1.1", "--max-time", "10", "--cacert", TestCertificates.caFile,
                                                "--resolve", "example.com:\(port ?? 0):127.0.0.1", "https://example.com:\(port ?? 0)/.well-known/apple-app-site-association"])
        #expect(RawHTTP.status(r.stdout) == 200, "\(r.stdout) \(r.stderr)")
        kill(process.processIdentifier, SIGTERM)
        #expect(process.exitStatus(within: 15) == 0)
    }
}

private let launcher = AASABinary.packageRoot.appendingPathComponent("Tests/systemd/socket-activation.py").path
