import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASATransport

@Suite struct DirectoryListingTests {
    /// Sorted by integer prefix first, then by name: the same order as comparing the bytes.
    @Test func entriesAreInByteOrderOfName() throws {
        let folder = NSTemporaryDirectory() + "aasa-order-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Shorter and longer than eight bytes, sharing eight bytes or more, upper case before
        // lower, `*` and `.` before digits, and non-ASCII (after every ASCII byte).
        let names = ["a", "ab", "abc", "site1.bench.test", "site10.bench.test", "site1.bench.tesu", "site1.be", "site1.b",
                     "*.example.org", "Zeta", "zeta", "straße.example", "strasse.example", "site100", "s", "site1.bench.test.crt",
                     "site1.bench.test.key", "é", "e"]
        for name in names { #expect(FileManager.default.createFile(atPath: folder + "/" + name, contents: Data())) }
        let listed = try DirectoryListing.entries(in: folder).map(\.name)
        #expect(listed == names.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
    }
}
