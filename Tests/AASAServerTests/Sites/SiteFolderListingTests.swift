import AASACore
import Foundation
import TestCertificates
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport

@Suite struct SiteFolderListingTests {
    /// A folder of its own under the temporary directory, removed with `body`'s end.
    private func withFolder(_ body: (String) throws -> Void) throws {
        let folder = NSTemporaryDirectory() + "aasa-listing-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try body(folder)
    }

    private func listing(_ folder: String) throws -> SiteFolderListing {
        let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open \(folder)", errno: errno) }
        defer { close(fd) }
        return try SiteFolderListing(fd)
    }

    @Test func aListingSaysWhichFilesAreThereAndWhichAStatMustDecide() throws {
        try withFolder { folder in
            #expect(FileManager.default.createFile(atPath: folder + "/apple-app-site-association", contents: Data("{}".utf8)))
            // Names that only begin or end like a site file are not one.
            #expect(FileManager.default.createFile(atPath: folder + "/apple-app-site-association.tmp", contents: Data()))
            #expect(FileManager.default.createFile(atPath: folder + "/webauth", contents: Data()))
            #expect(symlink("apple-app-site-association", folder + "/webauthn") == 0)
            try FileManager.default.createDirectory(atPath: folder + "/assetlinks.json", withIntermediateDirectories: false)
            let listed = try listing(folder)
            #expect(listed[.aasa] == .regularFile)
            #expect(listed[.webAuthn] == .unknown, "a symlink is followed by a stat")
            #expect(listed[.assetLinks] == .unknown, "a folder is refused by a stat, with its kind")
            #expect(listed[.merchantID] == .absent)
        }
    }

    @Test func aFolderTooLargeForOneReadOfItsEntriesIsListedWhole() throws {
        try withFolder { folder in
            // 200 names of 100 bytes: over 20 KB of entries, several getdents64 calls of 4 KB.
            for i in 0..<200 {
                let name = "padding-\(i)-" + String(repeating: "x", count: 100)
                #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data()))
            }
            #expect(FileManager.default.createFile(atPath: folder + "/apple-developer-merchantid-domain-association", contents: Data("x".utf8)))
            let fd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            defer { close(fd) }
            var names: [String] = []
            try DirectoryListing.forEachEntry(in: fd) { name, _ in names.append(String(decoding: name, as: UTF8.self)) }
            #expect(names.count == 201, "every entry, without . and ..")
            #expect(Set(names) == Set(try FileManager.default.contentsOfDirectory(atPath: folder)))
            #expect(try listing(folder)[.merchantID] == .regularFile)
        }
    }

    /// The listing replaced a stat per name: a file added to a site folder, one removed, and one
    /// replaced by a symlink are still what a full rescan sees.
    @Test func aFullRescanSeesFilesAddedRemovedAndReplacedInASiteFolder() throws {
        let sites = try ManySites()
        try sites.add(0..<3)
        let folder = sites.config + "/" + ManySites.host(1)
        let first = sites.builder().build(previous: nil)
        #expect(first.index.lookup(ManySites.host(1))?.value.files.map(\.kind) == [.aasa])

        let statement = Data(#"[{"relation": ["delegate_permission/common.handle_all_urls"]}]"#.utf8)
        #expect(FileManager.default.createFile(atPath: folder + "/assetlinks.json", contents: statement))
        let added = sites.builder().build(previous: first, scope: .everything)
        let site = try #require(added.index.lookup(ManySites.host(1))?.value)
        #expect(site.files.map(\.kind) == [.aasa, .assetLinks])
        #expect(site.file(.assetLinks)?.newest.bytes == Array(statement))

        // The AASA file removed, then back as a symlink to a file elsewhere.
        try FileManager.default.removeItem(atPath: folder + "/apple-app-site-association")
        let removed = sites.builder().build(previous: added, scope: .everything)
        #expect(removed.index.lookup(ManySites.host(1))?.value.files.map(\.kind) == [.assetLinks])
        let elsewhere = sites.root + "/elsewhere.json"
        let document = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.linked"], "components": [{"/": "/linked"}]}]}}"#
        #expect(FileManager.default.createFile(atPath: elsewhere, contents: Data(document.utf8)))
        #expect(symlink(elsewhere, folder + "/apple-app-site-association") == 0)
        let linked = sites.builder().build(previous: removed, scope: .everything)
        let served = try #require(linked.index.lookup(ManySites.host(1))?.value.served)
        #expect(served.file.bytes == Array(document.utf8))
        #expect(linked.sites.count == 3)
    }

    @Test func aFolderNamedLikeASiteFileIsRefusedAsNotARegularFile() throws {
        let sites = try ManySites()
        try sites.add(0..<1)
        try FileManager.default.createDirectory(atPath: sites.config + "/" + ManySites.host(0) + "/webauthn", withIntermediateDirectories: false)
        let snapshot = sites.builder().build(previous: nil)
        let file = try #require(snapshot.index.lookup(ManySites.host(0))?.value.file(.webAuthn))
        #expect(file.refusal?.code == "not-regular-file")
        #expect(file.refusal?.message.contains("directory") == true)
    }
}
