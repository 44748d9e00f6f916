import CLinux
#if canImport(Glibc)
import Glibc
#endif

/// Directory reading for sites and certificates: names only, following symlinks when asked
/// what an entry is (Kubernetes mounts are symlinks).
package enum DirectoryListing {
    /// An entry and what readdir says it is: `isDirectory`/`isFile` nil when d_type cannot tell
    /// (a symlink, or a filesystem without d_type), and a stat must.
    package struct Entry {
        package var name: String
        package var type: UInt8
        /// Every byte of the name is ASCII: then String's own `<`, which compares such strings
        /// with memcmp, gives byte order.
        var isASCII = false
        /// The name's first eight bytes, big-endian, zero-padded: most comparisons of a sort end
        /// with these two integers (host names seldom share eight bytes), not in two Strings.
        var prefix: UInt64 = 0

        package var isDirectory: Bool? { type == UInt8(DT_DIR) ? true : type == UInt8(DT_LNK) || type == UInt8(DT_UNKNOWN) ? nil : false }
        package var isFile: Bool? { type == UInt8(DT_REG) ? true : type == UInt8(DT_LNK) || type == UInt8(DT_UNKNOWN) ? nil : false }
    }

    static package func names(in directory: String) throws(SystemError) -> [String] {
        try entries(in: directory).map(\.name)
    }

    /// Whether the directory can be listed (opened), without reading it.
    static package func checkListable(_ directory: String) throws(SystemError) {
        guard let dir = opendir(directory) else { throw SystemError("opendir \(directory)", errno: errno) }
        closedir(dir)
    }

    /// Without `.` and `..`, in byte order of name unless `sorted` is false (in readdir's order:
    /// sorting 100 000 names costs more than reading them): no stat per entry.
    static package func entries(in directory: String, sorted: Bool = true) throws(SystemError) -> [Entry] {
        guard let dir = opendir(directory) else { throw SystemError("opendir \(directory)", errno: errno) }
        defer { closedir(dir) }
        var entries: [Entry] = []
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        while let entry = readdir(dir) {
            // Read the name in place: a dirent is only as long as its name (d_reclen), so a copy
            // of the whole 256-byte d_name reads past the end of the last entry of the buffer
            // (AddressSanitizer: heap-buffer-overflow).
            let bytes = (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: UInt8.self)
            let length = strlen(UnsafeRawPointer(bytes).assumingMemoryBound(to: CChar.self))
            let raw = UnsafeBufferPointer(start: bytes, count: length)
            if raw.elementsEqual(".".utf8) || raw.elementsEqual("..".utf8) { continue }
            var prefix: UInt64 = 0
            for i in 0..<8 { prefix = prefix << 8 | UInt64(i < length ? raw[i] : 0) }
            entries.append(Entry(name: String(decoding: raw, as: UTF8.self), type: entry.pointee.d_type, isASCII: !raw.contains { $0 >= 0x80 },
                                 prefix: prefix))
        }
        guard sorted else { return entries }
        return entries.sorted { a, b in
            // A name has no NUL byte: equal prefixes of names up to eight bytes long are equal names.
            if a.prefix != b.prefix { return a.prefix < b.prefix }
            return a.isASCII && b.isASCII ? a.name < b.name : bytewise(a.name, b.name)
        }
    }

    /// Every entry of the directory open as `fd` but `.` and `..`, in the kernel's order, as the
    /// bytes of its name (valid during the call only) and its d_type: no `String`, no `stat`, no
    /// allocation. What a site folder's one listing at start needs, 100 000 times over
    /// (docs/performance.md, "Start-up at 100 000 sites"). Reads from the descriptor's position
    /// (a fresh descriptor's: the start) to the end.
    static package func forEachEntry(in fd: Int32, _ body: (UnsafeBufferPointer<UInt8>, UInt8) -> Void) throws(SystemError) {
        // The kernel's records are glibc's dirent64, which on 64-bit Linux is `dirent`.
        let lengthOffset = MemoryLayout<dirent>.offset(of: \dirent.d_reclen)!
        let typeOffset = MemoryLayout<dirent>.offset(of: \dirent.d_type)!
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
        let failed = withUnsafeTemporaryAllocation(byteCount: 4096, alignment: MemoryLayout<dirent>.alignment) { buffer -> SystemError? in
            while true {
                let n: Int
                do throws(SystemError) { n = try check("getdents64") { aasa_getdents64(fd, buffer.baseAddress, buffer.count) } } catch { return error }
                if n == 0 { return nil }
                var offset = 0
                while offset < n {
                    let record = UnsafeRawPointer(buffer.baseAddress! + offset)
                    let name = (record + nameOffset).assumingMemoryBound(to: UInt8.self)
                    let raw = UnsafeBufferPointer(start: name, count: strlen((record + nameOffset).assumingMemoryBound(to: CChar.self)))
                    if !raw.elementsEqual(".".utf8) && !raw.elementsEqual("..".utf8) {
                        body(raw, record.load(fromByteOffset: typeOffset, as: UInt8.self))
                    }
                    offset += Int(record.load(fromByteOffset: lengthOffset, as: UInt16.self))
                }
            }
        }
        if let failed { throw failed }
    }

    /// Byte order, by memcmp (the generic comparison of UTF-8 views costs several times more).
    static package func bytewise(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                let n = Swift.min(pa.count, pb.count)
                let c = n == 0 ? 0 : memcmp(pa.baseAddress!, pb.baseAddress!, n)
                return c != 0 ? c < 0 : pa.count < pb.count
            }
        }
    }

    /// `directory/name`, made in one allocation: `+` appends twice, growing the string each time,
    /// which cost more than the rest of pairing a 100 000-certificate directory.
    static package func path(_ directory: String, _ name: String) -> String {
        var directory = directory, name = name
        return directory.withUTF8 { a in
            name.withUTF8 { b in
                String(unsafeUninitializedCapacity: a.count + 1 + b.count) { out in
                    if let base = a.baseAddress { out.baseAddress!.update(from: base, count: a.count) }
                    out[a.count] = UInt8(ascii: "/")
                    if let base = b.baseAddress { (out.baseAddress! + a.count + 1).update(from: base, count: b.count) }
                    return a.count + 1 + b.count
                }
            }
        }
    }

    static package func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR
    }

    static package func isFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFREG
    }

    static package func isDirectory(_ entry: Entry, in directory: String) -> Bool {
        entry.isDirectory ?? isDirectory(path(directory, entry.name))
    }
}
