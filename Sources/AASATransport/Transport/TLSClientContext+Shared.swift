#if canImport(Glibc)
import Glibc
#endif

extension TLSClientContext {
    /// What a client context trusts: the key of the contexts in use.
    private struct Trust: Hashable {
        var caFile: String?
        var keepsSystemStore: Bool
        var verifyPeer: Bool
    }

    private struct Loaded {
        var context: TLSClientContext
        var at: Int64
        /// The CA file as it was read (device, inode, size, modification time).
        var file: [Int]?
    }

    private static let inUse = Locked<[Trust: Loaded]>([:])

    /// How long a shared context is used before its trust is read again: a system store or CA
    /// file updated on disk is seen within this, without a restart.
    package static let reloadMilliseconds: Int64 = 10 * 60 * 1000

    /// A context shared by every client of the process that trusts the same (offering
    /// `http/1.1`). OpenSSL 3 takes tens of milliseconds of CPU to load the system store (every
    /// certificate through its decoders, under their locks), and a client made per request paid
    /// that each time: `aasa monitor` made two or three a check, 89 ms of CPU a check with the
    /// system store against 5 ms with a one-CA `--cacert` (docs/performance.md). The CA file is
    /// looked at on every call and read again when it changed; the whole is read again after
    /// ``reloadMilliseconds``. The load is made under the lock: the checks that start meanwhile
    /// wait for it rather than each loading the same store at once.
    public static func shared(caFile: String? = nil, keepsSystemStore: Bool = false, verifyPeer: Bool = true) throws(TLSError) -> TLSClientContext {
        let trust = Trust(caFile: caFile, keepsSystemStore: keepsSystemStore, verifyPeer: verifyPeer)
        let file = caFile.flatMap(stamp)
        return try inUse.withLock { (inUse: inout [Trust: Loaded]) throws(TLSError) -> TLSClientContext in
            let now = monotonicMilliseconds()
            if let loaded = inUse[trust], loaded.file == file, now - loaded.at < reloadMilliseconds { return loaded.context }
            let context = try TLSClientContext(caFile: caFile, keepsSystemStore: keepsSystemStore, verifyPeer: verifyPeer)
            inUse[trust] = Loaded(context: context, at: now, file: file)
            return context
        }
    }

    private static func stamp(_ path: String) -> [Int]? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return [Int(st.st_dev), Int(st.st_ino), Int(st.st_size), Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec)]
    }
}
