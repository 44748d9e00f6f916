import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// A certificate and its key written by the write API into `--certs/NAME/`, replaced as one
/// (docs/platforms.md, "What a failed write leaves"). The layout is a Kubernetes TLS Secret's,
/// which the loader already follows (docs/serving.md, "Certificates"):
///
/// ```
/// NAME/tls.crt -> ..data/tls.crt
/// NAME/tls.key -> ..data/tls.key
/// NAME/..data  -> ..pair-TIME-PID-RANDOM  (swapped by one rename)
/// NAME/..pair-TIME-PID-RANDOM/tls.crt, tls.key
/// ```
///
/// A new pair is written whole into a folder of its own, each file synced, before the `..data`
/// link is renamed onto it: until that rename the old pair is what every reader sees, after it
/// the new one. A write that fails (a full disk) removes its folder and leaves the old pair whole
/// and served. Entries beginning with `.` are never read as certificates.
enum CertificatePair {
    static let chainFile = "tls.crt"
    static let keyFile = "tls.key"
    static let dataLink = "..data"
    private static let pairPrefix = "..pair-"

    static func replace(in folder: String, chain: [UInt8], key: [UInt8], durable: Bool) throws(StoreError) {
        var random: UInt64 = 0
        arc4random_buf(&random, MemoryLayout<UInt64>.size)
        let pairName = pairPrefix + "\(time(nil))-\(getpid())-" + String(random, radix: 36)
        let pair = folder + "/" + pairName
        guard mkdir(pair, 0o755) == 0 else { throw FolderStore.failure("mkdir \(pair)") }
        var swapped = false
        defer { if !swapped { removePairFolder(pair) } }
        try FolderStore.writeDurably(key, to: keyFile, in: pair, mode: 0o600, durable: durable)
        try FolderStore.writeDurably(chain, to: chainFile, in: pair, mode: 0o644, durable: durable)
        // The names the loader reads, pointing through `..data` (made once; a folder written
        // before this layout holds regular files, replaced by links to the same pair below).
        var links: [(temporary: String, name: String)] = []
        defer { for link in links where !swapped { unlink(link.temporary) } }
        for name in [keyFile, chainFile] where !isLink(folder + "/" + name, to: dataLink + "/" + name) {
            let temporary = folder + "/" + DurableFile.temporaryName(for: name)
            guard symlink(dataLink + "/" + name, temporary) == 0 else { throw FolderStore.failure("symlink \(temporary)") }
            links.append((temporary, name))
        }
        let previous = readLink(folder + "/" + dataLink)
        let dataTemporary = folder + "/" + DurableFile.temporaryName(for: "data")
        guard symlink(pairName, dataTemporary) == 0 else { throw FolderStore.failure("symlink \(dataTemporary)") }
        guard rename(dataTemporary, folder + "/" + dataLink) == 0 else {
            let e = errno
            unlink(dataTemporary)
            throw FolderStore.failure("rename \(dataTemporary)", e)
        }
        swapped = true
        // Only for a folder of the earlier layout: its regular files become links, key first
        // (the chain still names the old pair's leaf until its own rename, a moment later; the
        // write API reloads the certificate only once this returns).
        for link in links where rename(link.temporary, folder + "/" + link.name) != 0 {
            throw FolderStore.failure("rename \(link.temporary)")
        }
        if durable { try FolderStore.syncDirectory(folder) }
        if let previous, previous.hasPrefix(pairPrefix), !previous.contains("/") { removePairFolder(folder + "/" + previous) }
    }

    /// Removes the pair's names, its link and the folder it points to; false when there was no
    /// pair (no `tls.crt` and no `tls.key`).
    static func remove(in folder: String) throws(StoreError) -> Bool {
        let chain = try FolderStore.remove(chainFile, in: folder)
        let key = try FolderStore.remove(keyFile, in: folder)
        guard chain || key else { return false }
        if let current = readLink(folder + "/" + dataLink), current.hasPrefix(pairPrefix), !current.contains("/") {
            _ = try FolderStore.remove(dataLink, in: folder)
            removePairFolder(folder + "/" + current)
        }
        return true
    }

    /// Whether a folder entry is one this layout writes: the pair's names, its link, a pair's
    /// folder, or a write's temporary file.
    static func isOwnEntry(_ name: String) -> Bool {
        name == chainFile || name == keyFile || name == dataLink || name.hasPrefix(pairPrefix) || (name.hasPrefix(".") && name.hasSuffix(".tmp"))
    }

    private static func removePairFolder(_ pair: String) {
        if let entries = try? DirectoryListing.entries(in: pair) {
            for entry in entries { unlink(pair + "/" + entry.name) }
        }
        rmdir(pair)
    }

    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func isLink(_ path: String, to target: String) -> Bool { readLink(path) == target }
}
