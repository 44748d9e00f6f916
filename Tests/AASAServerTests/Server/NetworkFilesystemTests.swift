import Foundation
import Testing
@testable import AASAServer

/// Which filesystems are network filesystems, by statfs(2)'s f_type.
@Suite struct NetworkFilesystemTests {
    @Test func theNetworkFilesystemsAreNamedByTheirMagicNumbers() {
        // linux/magic.h: NFS_SUPER_MAGIC, SMB_SUPER_MAGIC, FUSE_SUPER_MAGIC.
        #expect(NetworkFilesystem.types[0x6969] == "NFS")
        #expect(NetworkFilesystem.types[0x517B] == "SMB")
        #expect(NetworkFilesystem.types[0x6573_5546] == "FUSE")
        // EXT4_SUPER_MAGIC and TMPFS_MAGIC are local.
        #expect(NetworkFilesystem.types[0xEF53] == nil)
        #expect(NetworkFilesystem.types[0x0102_1994] == nil)
    }

    @Test func localAndMissingPathsAreNotOnANetworkFilesystem() {
        #expect(NetworkFilesystem.kind(of: "/proc") == nil)
        #expect(NetworkFilesystem.kind(of: "/dev/shm") == nil)
        #expect(NetworkFilesystem.kind(of: "/no/such/directory/\(UUID().uuidString)") == nil, "statfs fails: watched as local")
    }
}
