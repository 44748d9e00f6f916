import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"
private let fileName = "apple-app-site-association"

private func fetch(_ server: ServerProcess, host: String) throws -> (status: Int, body: String) {
    let r = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
    return (RawHTTP.status(r) ?? 0, RawHTTP.body(r))
}

private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// The `/status` error message of a site, once it is there.
private func refusal(_ server: ServerProcess, _ host: String) -> String? {
    var message: String?
    _ = ServerProcess.waitFor {
        let site = try server.site(host)
        message = (site?["error"] as? [String: Any])?["message"] as? String
        return message != nil
    }
    return message
}

/// Makes `config/HOST/` with `make(path of its file)`.
private func makeSite(_ config: URL, _ host: String, _ make: (String) throws -> Void) throws {
    let folder = config.appendingPathComponent(host)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    try make(folder.appendingPathComponent(fileName).path)
}

private func fifo(_ path: String) throws {
    guard mkfifo(path, 0o644) == 0 else { throw HarnessError(description: "mkfifo: \(errno)") }
}

@Suite struct ServeSiteFileTests {
    @Test func aFIFOAtStartIsRefusedWithoutBlockingAndTheServerStillReloadsAndStops() throws {
        let server = try ServerProcess(prepare: { config in try makeSite(config, "fifo.example.com", fifo) })
        let site = try #require(try server.site("fifo.example.com"))
        #expect(site["state"] as? String == "rejected")
        #expect(refusal(server, "fifo.example.com")?.contains("not a regular file (FIFO)") == true)
        #expect(server.log.contains("fifo.example.com/\(fileName): not a regular file (FIFO)"))
        #expect(try fetch(server, host: "fifo.example.com").status == 404)
        // Reloads still happen.
        try server.directory.write("config/example.com/\(fileName)", appFile("/after"))
        #expect(ServerProcess.waitFor { try fetch(server, host: "example.com").body == appFile("/after") })
        #expect(server.stop(signal: SIGTERM, timeout: 5) == 0)
    }

    /// A FIFO named like a key pair in `--certs` (`NAME.crt` beside `NAME.key`) is skipped with
    /// a reason; opening it would block the thread that loads certificates.
    @Test func aFIFONamedLikeAKeyPairIsSkippedWithItsReason() throws {
        let server = try ServerProcess(prepare: { config in
            let certs = config.deletingLastPathComponent().appendingPathComponent("certs").path
            try fifo(certs + "/blocked.crt")
            try fifo(certs + "/blocked.key")
        })
        #expect(server.log.contains("certificate blocked: blocked.crt or blocked.key is not a regular file; skipped"), "\(server.log)")
        #expect(RawHTTP.status(try server.curlHTTPS(host: "example.com").stdout) == 200)
        #expect(server.stop(signal: SIGTERM, timeout: 5) == 0)
    }

    @Test func aFIFOAddedWhileRunningIsRefusedAndTheServerStillReloadsAndStops() throws {
        let server = try ServerProcess()
        try makeSite(server.config, "fifo.example.com", fifo)
        #expect(refusal(server, "fifo.example.com")?.contains("not a regular file (FIFO)") == true)
        // A FIFO replacing a served file: the last good version keeps serving.
        let served = server.config.appendingPathComponent("www.example.com/\(fileName)").path
        unlink(served)
        try fifo(served)
        #expect(ServerProcess.waitFor { try server.site("www.example.com")?["state"] as? String == "stale" })
        #expect(refusal(server, "www.example.com")?.contains("not a regular file (FIFO)") == true)
        #expect(try fetch(server, host: "www.example.com").body == wwwExampleCom)
        try server.directory.write("config/example.com/\(fileName)", appFile("/after"))
        #expect(ServerProcess.waitFor { try fetch(server, host: "example.com").body == appFile("/after") })
        #expect(server.stop(signal: SIGTERM, timeout: 5) == 0)
    }

    @Test func aSymlinkToADeviceIsRefusedAtStartAndWhenItReplacesAFile() throws {
        let server = try ServerProcess(prepare: { config in
            try makeSite(config, "zero.example.com") { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: "/dev/zero") }
        })
        #expect(try server.site("zero.example.com")?["state"] as? String == "rejected")
        #expect(refusal(server, "zero.example.com")?.contains("not a regular file (character device)") == true)
        let served = server.config.appendingPathComponent("example.com/\(fileName)").path
        unlink(served)
        try FileManager.default.createSymbolicLink(atPath: served, withDestinationPath: "/dev/zero")
        #expect(ServerProcess.waitFor { try server.site("example.com")?["state"] as? String == "stale" })
        #expect(refusal(server, "example.com")?.contains("not a regular file (character device)") == true)
        #expect(server.waitForLog("example.com/\(fileName): not a regular file (character device); the last good version keeps serving"))
        #expect(try fetch(server, host: "example.com").body == exampleCom)
    }

    @Test func aSymlinkLoopIsRefusedWithItsReason() throws {
        let server = try ServerProcess(prepare: { config in
            try makeSite(config, "loop.example.com") { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: $0) }
        })
        #expect(try server.site("loop.example.com")?["state"] as? String == "rejected")
        #expect(refusal(server, "loop.example.com")?.contains("Too many levels of symbolic links") == true)
        #expect(server.log.contains("loop.example.com/\(fileName): cannot open: Too many levels of symbolic links"))
        // An existing site whose file becomes a loop names the loop, not an earlier errno.
        let served = server.config.appendingPathComponent("www.example.com/\(fileName)").path
        unlink(served)
        try FileManager.default.createSymbolicLink(atPath: served, withDestinationPath: served)
        #expect(server.waitForLog("www.example.com/\(fileName): cannot open: Too many levels of symbolic links; the last good version keeps serving"))
        #expect(try fetch(server, host: "www.example.com").body == wwwExampleCom)
    }

    @Test func aHugeSparseFileIsRefusedWithItsRealSize() throws {
        let server = try ServerProcess(prepare: { config in
            try makeSite(config, "huge.example.com") { path in
                guard FileManager.default.createFile(atPath: path, contents: nil), truncate(path, 1 << 30) == 0 else {
                    throw HarnessError(description: "truncate: \(errno)")
                }
            }
        })
        #expect(try server.site("huge.example.com")?["state"] as? String == "rejected")
        #expect(refusal(server, "huge.example.com")?.contains("1073741824 bytes") == true)
        #expect(server.log.contains("1073741824 bytes"))
    }

    @Test func validateStillReadsAPipe() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("file.json", exampleCom)
        let r = try Shell.run("/bin/bash", ["-c", "exec \"$0\" validate <(cat \"$1\")", AASABinary.url.path, path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasSuffix("0 errors, 0 warnings in 1 file\n"))
    }
}
