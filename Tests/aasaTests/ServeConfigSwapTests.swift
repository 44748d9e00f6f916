import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let wellKnown = "/.well-known/apple-app-site-association"
private let fileName = "apple-app-site-association"

private func fetch(_ server: ServerProcess, host: String) throws -> String {
    RawHTTP.body(try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n"))
}

private func appFile(_ path: String) -> String {
    #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "\#(path)"}]}]}}"#
}

/// How long `body` took to become true, if it did within `timeout` seconds.
private func secondsUntil(timeout: Double = 4, _ body: () throws -> Bool) -> Double? {
    let started = Date()
    return ServerProcess.waitFor(timeout: timeout, body) ? Date().timeIntervalSince(started) : nil
}

/// Whether this machine lets an unprivileged process make a user namespace (containers often
/// forbid it); the watch-limit test needs one to lower the limit for the server alone.
private let userNamespaces: Bool = (try? Shell.run("/usr/bin/unshare", ["-Ur", "/bin/true"]).status) == 0

@Suite struct ServeConfigSwapTests {
    @Test func aConfigDirectoryRenamedIntoPlaceIsFollowed() throws {
        let server = try ServerProcess()
        let fm = FileManager.default
        let root = server.directory.url
        try fm.moveItem(at: server.config, to: root.appendingPathComponent("config.old"))
        #expect(server.waitForLog("cannot read"))
        sleep(2)
        try server.directory.write("config.new/example.com/\(fileName)", appFile("/new"))
        try fm.moveItem(at: root.appendingPathComponent("config.new"), to: server.config)
        let served = secondsUntil { try fetch(server, host: "example.com") == appFile("/new") }
        #expect(served.map { $0 < 2 } == true, "served after \(served ?? -1) s")
        // The new directory is watched: an edit inside it is served too.
        try server.directory.write("config/example.com/\(fileName)", appFile("/edited"))
        let edited = secondsUntil { try fetch(server, host: "example.com") == appFile("/edited") }
        #expect(edited.map { $0 < 2 } == true, "served after \(edited ?? -1) s")
        let www = try RawHTTP.exchange(port: server.http, "GET \(wellKnown) HTTP/1.1\r\nHost: www.example.com\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(www) == 404, "the new directory has no www.example.com")
    }

    @Test func aConfigSymlinkSwappedAtomicallyIsFollowed() throws {
        let server = try ServerProcess(prepare: { config in
            // --config names a symlink to the directory of the moment.
            let first = config.deletingLastPathComponent().appendingPathComponent("config.v1")
            try FileManager.default.moveItem(at: config, to: first)
            try FileManager.default.createSymbolicLink(atPath: config.path, withDestinationPath: "config.v1")
        })
        #expect(try fetch(server, host: "example.com") == exampleCom)
        let root = server.directory.url.path
        try server.directory.write("config.v2/example.com/\(fileName)", appFile("/v2"))
        // ln -s config.v2 tmp && mv -T tmp config
        try FileManager.default.createSymbolicLink(atPath: root + "/config.tmp", withDestinationPath: "config.v2")
        #expect(rename(root + "/config.tmp", root + "/config") == 0)
        let served = secondsUntil { try fetch(server, host: "example.com") == appFile("/v2") }
        #expect(served.map { $0 < 2 } == true, "served after \(served ?? -1) s")
        try server.directory.write("config.v2/example.com/\(fileName)", appFile("/v2-edited"))
        let edited = secondsUntil { try fetch(server, host: "example.com") == appFile("/v2-edited") }
        #expect(edited.map { $0 < 2 } == true, "served after \(edited ?? -1) s")
    }

    @Test(.enabled(if: userNamespaces, "needs unshare -Ur"))
    func overTheWatchLimitChangesAreFoundByRescanning() throws {
        // A user namespace of its own, where the per-user limit on inotify watches is 1.
        let server = try ServerProcess(launcher: ["/usr/bin/unshare", "-Ur", "/bin/bash", "-c",
                                                  "echo 1 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\""])
        #expect(server.waitForLog("fs.inotify.max_user_watches"))
        try server.directory.write("config/example.com/\(fileName)", appFile("/rescanned"))
        let edited = secondsUntil { try fetch(server, host: "example.com") == appFile("/rescanned") }
        #expect(edited.map { $0 < 2 } == true, "served after \(edited ?? -1) s")
        try server.directory.write("config/new.example.com/\(fileName)", appFile("/new"))
        #expect(ServerProcess.waitFor(timeout: 3) { try fetch(server, host: "new.example.com") == appFile("/new") })
        #expect(server.log.components(separatedBy: "fs.inotify.max_user_watches").count == 2, "said once")
        // Rescans that find nothing new are quiet. (Log lines reach stderr through the writer
        // thread a few milliseconds after the reload that wrote them: let the last one land.)
        usleep(300_000)
        let reloads = server.log.components(separatedBy: "reloaded:").count
        sleep(2)
        #expect(server.log.components(separatedBy: "reloaded:").count == reloads)
    }
}
