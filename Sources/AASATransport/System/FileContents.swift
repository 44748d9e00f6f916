#if canImport(Glibc)
import Glibc
#endif

/// An open file read whole, straight into its array (no chunk buffer to fill and copy): the
/// size `fstat` gave plus one byte is asked for, so a file that is what `fstat` said is read in
/// one call, and one that grew meanwhile is read on, up to `limit + 1` bytes.
package enum FileContents {
    /// The bytes, or the errno of a failed read.
    package static func read(_ fd: Int32, expectedSize: Int, limit: Int) -> Result<[UInt8], SystemError> {
        var capacity = min(max(0, expectedSize), limit) + 1
        var bytes: [UInt8] = []
        while true {
            var failure: Int32 = 0
            var ended = false
            let start = bytes.count
            bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                if start > 0 { UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: bytes, byteCount: start) }
                count = start
                while count < capacity {
                    let n = Glibc.read(fd, buffer.baseAddress! + count, capacity - count)
                    if n < 0 {
                        if errno == EINTR { continue }
                        failure = errno
                        return
                    }
                    count += n
                    // The end, or exactly the size fstat gave (the next read would say 0).
                    if n == 0 || count == expectedSize {
                        ended = true
                        return
                    }
                }
            }
            if failure != 0 { return .failure(SystemError("read", errno: failure)) }
            if ended || bytes.count > limit { return .success(bytes) }
            // It grew: read on.
            capacity = min(limit + 1, capacity * 2)
        }
    }
}
