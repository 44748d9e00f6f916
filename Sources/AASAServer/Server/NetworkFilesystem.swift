import CLinux

/// Filesystems on which inotify reports only this machine's changes, by statfs(2) f_type
/// (linux/magic.h and the filesystems' own headers).
enum NetworkFilesystem {
    static let types: [Int: String] = [
        0x6969: "NFS",
        0x517B: "SMB",
        0xFF53_4D42: "CIFS",
        0xFE53_4D42: "SMB2",
        0x00C3_6400: "CephFS",
        0x6573_5546: "FUSE",
        0x0102_1997: "9P",
        0x4749_5046: "GlusterFS",
        0x0BD0_0BD0: "Lustre",
    ]

    /// The network filesystem `path` is on, or nil for a local one (or when statfs fails).
    static func kind(of path: String) -> String? {
        let type = aasa_statfs_type(path)
        guard type >= 0 else { return nil }
        return types[Int(UInt32(truncatingIfNeeded: type))]
    }
}
