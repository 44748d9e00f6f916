import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASAServer
@testable import AASATransport

/// Which key pairs a certs directory holds, in each layout (docs/serving.md, "Certificates").
@Suite struct CertificateDirectoryTests {
    private func folder() throws -> String {
        let folder = NSTemporaryDirectory() + "aasa-certdir-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    private func touch(_ path: String) {
        #expect(FileManager.default.createFile(atPath: path, contents: Data("x".utf8)))
    }

    @Test func everyLayoutIsFoundOnceAndAPairNeedsBothFiles() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for name in ["plain.crt", "plain.key", "pem.pem", "pem.key", "both.crt", "both.pem", "both.key", "a.b.example.crt",
                     "a.b.example.key", "a.crt", "a.key", "lonely.crt", "orphan.key", ".hidden.crt", ".hidden.key", "notes.txt"] {
            touch(dir + "/" + name)
        }
        for (folderName, files) in [("certbot", ["fullchain.pem", "privkey.pem"]), ("secret", ["tls.crt", "tls.key"]),
                                    ("half", ["fullchain.pem"])] {
            try FileManager.default.createDirectory(atPath: dir + "/" + folderName, withIntermediateDirectories: false)
            for file in files { touch(dir + "/" + folderName + "/" + file) }
        }
        let found = try CertificateStore.candidates(in: dir)
        let byName = Dictionary(uniqueKeysWithValues: found.map { ($0.name, $0) })
        #expect(found.count == byName.count, "each pair once")
        #expect(Set(byName.keys) == ["plain", "pem", "both", "a.b.example", "a", "certbot", "secret"])
        #expect(byName["plain"]?.certificate == dir + "/plain.crt" && byName["plain"]?.key == dir + "/plain.key")
        #expect(byName["pem"]?.certificate == dir + "/pem.pem")
        #expect(byName["both"]?.certificate == dir + "/both.crt", "NAME.crt wins over NAME.pem")
        #expect(byName["a.b.example"]?.key == dir + "/a.b.example.key")
        #expect(byName["certbot"]?.certificate == dir + "/certbot/fullchain.pem" && byName["certbot"]?.key == dir + "/certbot/privkey.pem")
        #expect(byName["secret"]?.certificate == dir + "/secret/tls.crt" && byName["secret"]?.key == dir + "/secret/tls.key")
    }

    @Test func aPairWhoseKeyIsNotARegularFileIsSkippedAndSaid() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        touch(dir + "/odd.crt")
        try FileManager.default.createDirectory(atPath: dir + "/odd.key", withIntermediateDirectories: false)
        touch(dir + "/good.crt")
        touch(dir + "/good.key")
        var said: [String] = []
        let found = try CertificateStore.candidates(in: dir, skipped: { said.append($0) })
        #expect(found.map(\.name) == ["good"])
        #expect(said.count == 1 && said[0].contains("certificate odd:"))
    }

    /// One name is one certificate: a folder `x/` with a pair wins over `x.crt` beside it, by
    /// the directory's listing and by a change that names `x` alike.
    @Test func aFolderAndAFilePairOfOneNameGiveOneCertificate() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.createDirectory(atPath: dir + "/x", withIntermediateDirectories: false)
        touch(dir + "/x/fullchain.pem")
        touch(dir + "/x/privkey.pem")
        touch(dir + "/x.crt")
        touch(dir + "/x.key")
        try FileManager.default.createDirectory(atPath: dir + "/y", withIntermediateDirectories: false)
        touch(dir + "/y.crt")
        touch(dir + "/y.key")
        var said: [String] = []
        let found = try CertificateStore.candidates(in: dir, skipped: { said.append($0) })
        #expect(found.map(\.name) == ["x", "y"])
        #expect(found.first?.certificate == dir + "/x/fullchain.pem")
        #expect(found.last?.certificate == dir + "/y.crt", "an empty folder does not hide the pair beside it")
        #expect(said.count == 1 && said[0].contains("x/ is used"))
        #expect(CertificateStore.candidate(named: "x", in: dir)?.certificate == dir + "/x/fullchain.pem")
        #expect(CertificateStore.candidate(named: "y", in: dir)?.certificate == dir + "/y.crt")
    }

    @Test func aFileNameSplitsIntoItsPairNameAndKind() {
        #expect(CertificateStore.PairFile.split("example.com.crt").map { "\($0.0) \($0.1)" } == "example.com crt")
        #expect(CertificateStore.PairFile.split("x.pem")?.1 == .pem)
        #expect(CertificateStore.PairFile.split("x.key")?.1 == .key)
        #expect(CertificateStore.PairFile.split(".key") == nil, "no name before the extension")
        #expect(CertificateStore.PairFile.split("x.KEY") == nil && CertificateStore.PairFile.split("xcrt") == nil)
        #expect(CertificateStore.PairFile.split("straße.crt")?.0 == "straße")
        #expect(CertificateStore.certificateName(forEntry: "a.b.key") == "a.b")
        #expect(CertificateStore.certificateName(forEntry: "folder") == "folder")
    }

    @Test func aPathIsTheDirectoryASlashAndTheName() {
        #expect(DirectoryListing.path("/etc/aasa", "example.com.crt") == "/etc/aasa/example.com.crt")
        #expect(DirectoryListing.path("", "x") == "/x")
        #expect(DirectoryListing.path("d", "") == "d/")
        #expect(DirectoryListing.path("/tmp/é", "straße") == "/tmp/é/straße")
    }
}
