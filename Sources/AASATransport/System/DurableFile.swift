#if canImport(Glibc)
import Glibc
#endif

/// A file replaced whole or not at all: written under a temporary name beginning with `.` in its
/// own folder (which the config loader never reads as a site file), `fsync`ed, renamed into place
/// and the folder `fsync`ed (rename(2) is atomic within a file system; fsync(2) on the folder
/// makes the new entry survive a crash). The write API's folder store and `aasa import --to` write
/// the same way, so a server watching the folder sees the old file or the new one, never half.
package enum DurableFile {
    /// `fsync` of a directory, so a rename or a new entry in it survives a crash.
    package static func syncDirectory(_ path: String) throws(SystemError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw SystemError("open \(path)", errno: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw SystemError("fsync \(path)", errno: errno) }
    }

    /// `folder` made inside `parent` when missing (`parent` itself must exist); true when it made it.
    @discardableResult
    package static func makeFolder(_ folder: String, in parent: String, durable: Bool = true) throws(SystemError) -> Bool {
        if mkdir(folder, 0o755) == 0 {
            if durable { try syncDirectory(parent) }
            return true
        } else if errno != EEXIST {
            throw SystemError("mkdir \(folder)", errno: errno)
        }
        return false
    }

    /// A temporary name no other writer uses at the same time, beginning with `.` and ending
    /// in `.tmp` (what a clean-up of a folder recognises as a write that died).
    package static func temporaryName(for name: String) -> String {
        var random: UInt64 = 0
        arc4random_buf(&random, MemoryLayout<UInt64>.size)
        return ".\(name).\(getpid()).\(String(random, radix: 36)).tmp"
    }

    /// `bytes` as `folder/name`, with `mode` whatever the umask says; `durable: false` skips the
    /// fsyncs (a copy that can be made again).
    package static func write(_ bytes: [UInt8], to name: String, in folder: String, mode: mode_t, durable: Bool = true) throws(SystemError) {
        let temporary = folder + "/" + temporaryName(for: name)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else { throw SystemError("create \(temporary)", errno: errno) }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let e = errno
                close(fd)
                throw SystemError("write \(temporary)", errno: e)
            }
            written += n
        }
        // The mode asked for, whatever the umask took away (a key stays 0600, a file readable).
        fchmod(fd, mode)
        guard !durable || fsync(fd) == 0 else {
            let e = errno
            close(fd)
            throw SystemError("fsync \(temporary)", errno: e)
        }
        close(fd)
        guard rename(temporary, folder + "/" + name) == 0 else { throw SystemError("rename \(temporary)", errno: errno) }
        ok = true
        if durable { try syncDirectory(folder) }
    }
}
