import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport

/// The control loop's inotify watches over real directories: inotify queues an event when the
/// change is made, so each `drain` right after a change sees it.
@Suite struct DirectoryWatcherTests {
    /// A config and a certs directory in a fresh temporary directory, both watched with their
    /// folders, as the control loop arms them.
    private final class Watched {
        let root = NSTemporaryDirectory() + "aasa-watch-\(getpid())-\(UUID().uuidString)"
        var config: String { root + "/config" }
        var certs: String { root + "/certs" }
        let watcher: DirectoryWatcher

        init(sites: [String]) throws {
            for directory in ["config", "certs"] + sites.map({ "config/" + $0 }) {
                try FileManager.default.createDirectory(atPath: root + "/" + directory, withIntermediateDirectories: true)
            }
            watcher = try #require(DirectoryWatcher(log: Log(minimum: .error)))
            arm()
        }

        func arm() {
            var directories: [(String, DirectoryWatcher.Role)] = [(config, .configRoot), (certs, .certsRoot)]
            for site in (try? FileManager.default.contentsOfDirectory(atPath: config)) ?? [] {
                directories.append((config + "/" + site, .site(site)))
            }
            watcher.update(roots: [config, certs], directories: directories)
        }

        func write(_ path: String) throws { try Data("{}".utf8).write(to: URL(fileURLWithPath: root + "/" + path)) }

        deinit { try? FileManager.default.removeItem(atPath: root) }
    }

    @Test func aPathSplitsIntoItsParentAndName() {
        func parts(_ path: String) -> [String]? { DirectoryWatcher.split(path).map { [$0.parent, $0.name] } }
        #expect(parts("/a/b/config") == ["/a/b", "config"])
        #expect(parts("/config") == ["/", "config"])
        #expect(parts("config") == [".", "config"])
        #expect(parts("/") == nil)
        #expect(parts("a/..") == nil)
    }

    @Test func aChangeInsideASiteFolderNamesThatSiteOnly() throws {
        let w = try Watched(sites: ["example.com", "example.org"])
        #expect(w.watcher.watchedCount == 4, "both roots and both site folders")
        #expect(w.watcher.isComplete)
        #expect(w.watcher.drain().isEmpty)
        try w.write("config/example.com/apple-app-site-association")
        #expect(w.watcher.drain() == ReloadScope(sites: ["example.com"]))
        #expect(w.watcher.drain().isEmpty, "each event is read once")
    }

    @Test func aNewFolderInTheConfigDirectoryNamesTheNewSite() throws {
        let w = try Watched(sites: [])
        try FileManager.default.createDirectory(atPath: w.config + "/new.example", withIntermediateDirectories: false)
        try FileManager.default.createDirectory(atPath: w.config + "/.hidden", withIntermediateDirectories: false)
        #expect(w.watcher.drain() == ReloadScope(sites: ["new.example"]), "names beginning with a dot are not sites")
    }

    @Test func aSiteFolderRemovedIsNamedAndNoLongerWatched() throws {
        let w = try Watched(sites: ["example.com"])
        try FileManager.default.removeItem(atPath: w.config + "/example.com")
        #expect(w.watcher.drain().sites == ["example.com"])
        #expect(w.watcher.watchedCount == 2)
    }

    @Test func aCertificateFileNamesItsCertificateAndASecretSwapNamesThemAll() throws {
        let w = try Watched(sites: [])
        try w.write("certs/example.com.crt")
        #expect(w.watcher.drain() == ReloadScope(certificates: ["example.com"]))
        // The kubelet swaps `..data` to renew every file of a Secret at once.
        try w.write("certs/..data_tmp")
        #expect(w.watcher.drain() == ReloadScope(allCertificates: true))
    }

    @Test func aConfigDirectoryRenamedIntoPlaceIsSeenAsReplaced() throws {
        let w = try Watched(sites: ["example.com"])
        #expect(w.watcher.replacedRoot() == nil)
        try FileManager.default.createDirectory(atPath: w.root + "/config.new/example.com", withIntermediateDirectories: true)
        #expect(rename(w.config, w.root + "/config.old") == 0)
        #expect(rename(w.root + "/config.new", w.config) == 0)
        // The parent is watched for the root's name: the rename asks for everything.
        #expect(w.watcher.drain().allSites)
        #expect(w.watcher.replacedRoot() == w.config)
        w.arm()
        #expect(w.watcher.replacedRoot() == nil, "the watches follow the directory the path leads to now")
        try w.write("config/example.com/apple-app-site-association")
        #expect(w.watcher.drain().sites == ["example.com"])
    }

    @Test func withEveryFolderWatchedNoSliceIsChecked() throws {
        let w = try Watched(sites: ["example.com"])
        #expect(w.watcher.unwatchedSlice(cycle: 10).isEmpty)
        #expect(!w.watcher.hasUnwatchedCertificates)
    }
}
