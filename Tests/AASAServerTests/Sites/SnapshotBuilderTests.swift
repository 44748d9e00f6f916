import AASACore
import Foundation
import TestCertificates
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport

@Suite struct SnapshotBuilderTests {
    /// A file is read whole, in one read when fstat's size is right; empty and over-limit files too.
    @Test(arguments: [0, 1, 4095, 65_536, 65_537, SnapshotBuilder.readLimit])
    func aFileIsReadWholeWhateverItsSize(size: Int) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-read-\(UUID().uuidString)").path
        defer { unlink(path) }
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        let read = try #require(try SnapshotBuilder.read(path))
        #expect(read.bytes == bytes)
    }

    @Test func aFileOverTheLimitIsRefusedWithItsSize() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("aasa-read-\(UUID().uuidString)").path
        defer { unlink(path) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data(count: SnapshotBuilder.readLimit + 1)))
        #expect(throws: FileRefusal.self) { _ = try SnapshotBuilder.read(path) }
        #expect(try SnapshotBuilder.read(path + ".missing") == nil)
    }

    /// Sites × certificates would quadruple the work when both double; indexes double it.
    @Test func doublingSitesAndCertificatesDoublesTheWorkOfAStartNotQuadruplesIt() throws {
        let small = try ManySites()
        try small.add(0..<600)
        let smallWork = BuildWork()
        let smallSnapshot = small.builder(work: smallWork).build(previous: nil)
        let large = try ManySites()
        try large.add(0..<1200)
        let largeWork = BuildWork()
        let largeSnapshot = large.builder(work: largeWork).build(previous: nil)
        #expect(smallSnapshot.summary.sites == 600 && smallSnapshot.summary.uncovered == 0)
        #expect(largeSnapshot.summary.sites == 1200 && largeSnapshot.summary.uncovered == 0)
        #expect(smallSnapshot.certificates.certificates.count == 600)
        let ratio = Double(largeWork.count) / Double(smallWork.count)
        #expect(ratio > 1.8 && ratio < 2.5, "work \(smallWork.count) → \(largeWork.count)")
    }

    @Test func anEditedSiteIsReadAloneAndEveryOtherSiteIsTheSameObject() throws {
        let sites = try ManySites()
        try sites.add(0..<300)
        let first = sites.builder().build(previous: nil)
        try sites.writeSite(ManySites.host(7), path: "/edited/*")
        let work = BuildWork()
        let next = sites.builder(work: work).build(previous: first, scope: ReloadScope(sites: [ManySites.host(7)]))
        #expect(work.reads == 1, "one folder's file read, no more")
        #expect(next.sites.count == 300)
        for (old, new) in zip(first.sites, next.sites) {
            if new.name.host == ManySites.host(7) {
                #expect(old !== new)
                #expect(new.served.map { String(decoding: $0.file.bytes, as: UTF8.self).contains("/edited/*") } == true)
                #expect(new.certificateCovers == true)
            } else {
                #expect(old === new, "\(new.name) shared")
            }
        }
        #expect(next.certificates === first.certificates, "no certificate read again")
        #expect(next.summary == first.summary)
    }

    @Test func aFullRescanReadsOnlyTheFilesWhoseStampsChanged() throws {
        let sites = try ManySites()
        try sites.add(0..<50)
        let first = sites.builder().build(previous: nil)
        try sites.writeSite(ManySites.host(3), path: "/changed")
        let work = BuildWork()
        let next = sites.builder(work: work).build(previous: first, scope: .everything)
        #expect(work.reads == 1)
        #expect(zip(first.sites, next.sites).filter { $0 !== $1 }.map(\.1.name.host) == [ManySites.host(3)])
    }

    @Test func aNewAndARemovedSiteChangeTheListInPlaceAndTheSummary() throws {
        let sites = try ManySites()
        try sites.add(0..<20)
        let first = sites.builder().build(previous: nil)
        try sites.addSite("aaa.example.net")
        try FileManager.default.removeItem(atPath: sites.config + "/" + ManySites.host(5))
        let next = sites.builder().build(previous: first, scope: ReloadScope(sites: ["aaa.example.net", ManySites.host(5)]))
        let hosts = next.sites.map(\.name.description)
        #expect(hosts == hosts.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(hosts.first == "aaa.example.net" && !hosts.contains(ManySites.host(5)))
        #expect(next.summary.sites == 20 && next.summary.uncovered == 1, "aaa.example.net has no certificate")
        #expect(next.index.lookup("aaa.example.net")?.value.certificateCovers == false)
    }

    @Test func aNewCertificateIsLoadedAloneAndCoversItsSite() throws {
        let sites = try ManySites()
        try sites.add(0..<30)
        try sites.addSite("late.example.net")
        let first = sites.builder().build(previous: nil)
        #expect(first.summary.uncovered == 1)
        try sites.addCertificate(name: "late", dnsNames: ["late.example.net"])
        let work = BuildWork()
        let next = sites.builder(work: work).build(previous: first, scope: ReloadScope(certificates: ["late"]))
        #expect(work.reads == 1, "one certificate loaded")
        #expect(next.summary.uncovered == 0)
        #expect(next.certificates.certificates.count == 31)
        #expect(next.certificates.select(serverName: "late.example.net")?.name == "late")
        #expect(zip(first.sites, next.sites).filter { $0 !== $1 }.map(\.1.name.host) == ["late.example.net"])
    }

    @Test func selectionPrefersTheExactNameThenTheWildcardThenTheDefault() throws {
        let sites = try ManySites()
        try sites.addCertificate(name: "a-wild", dnsNames: ["*.example.com"])
        try sites.addCertificate(name: "b-exact", dnsNames: ["www.example.com"])
        try sites.addCertificate(name: "c-other", dnsNames: ["other.example"])
        let store = sites.builder().build(previous: nil).certificates
        #expect(store.select(serverName: "www.example.com")?.name == "b-exact")
        #expect(store.select(serverName: "api.example.com")?.name == "a-wild")
        #expect(store.select(serverName: "a.b.example.com")?.name == "a-wild", "the default: first in byte order")
        #expect(!store.covers("a.b.example.com") && store.covers("api.example.com") && !store.covers("example.com"))
        // The winner of a shared name goes: the next one takes it over.
        let replaced = store.updating(removing: ["b-exact"], adding: [], acmeNames: [], defaultName: "c-other")
        #expect(replaced.select(serverName: "www.example.com")?.name == "a-wild")
        #expect(replaced.select(serverName: "nothing.test")?.name == "c-other")
    }
}
