/// Byte tests eight bytes at a time, for the spans a request head and an access-log line are
/// made of: most are plain text, and one word test rules out eight bytes. The tests are the
/// classic "has a zero byte" word tricks (Hacker's Delight §6-1): `hasZero(w)` is non-zero
/// exactly when some byte of `w` is 0, `has(w, b)` when some byte is `b`, and `hasLess(w, n)`
/// when some byte is below `n` (n ≤ 128). Each says whether such a byte exists, not where.
public enum ByteScan {
    @inlinable static var ones: UInt64 { 0x0101_0101_0101_0101 }
    @inlinable static var highs: UInt64 { 0x8080_8080_8080_8080 }

    @inlinable static func hasZero(_ w: UInt64) -> UInt64 { (w &- ones) & ~w & highs }
    @inlinable static func has(_ w: UInt64, _ b: UInt8) -> UInt64 { hasZero(w ^ (ones &* UInt64(b))) }
    @inlinable static func hasLess(_ w: UInt64, _ n: UInt8) -> UInt64 { (w &- ones &* UInt64(n)) & ~w & highs }

    /// Whether `a` and `b` hold the same bytes, compared eight at a time (a generic
    /// `elementsEqual` over two buffers goes byte by byte: about 1,000 instructions for the
    /// 120-byte agent of a typical client, callgrind).
    @inlinable
    public static func equal(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let x = a.baseAddress, let y = b.baseAddress else { return true }
        let n = a.count
        let p = UnsafeRawPointer(x), q = UnsafeRawPointer(y)
        guard n >= 8 else {
            // Two words that overlap cover 4 to 7 bytes; no byte loop.
            if n >= 4 {
                return p.loadUnaligned(as: UInt32.self) == q.loadUnaligned(as: UInt32.self)
                    && p.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self) == q.loadUnaligned(fromByteOffset: n - 4, as: UInt32.self)
            }
            for i in 0..<n where x[i] != y[i] { return false }
            return true
        }
        var i = 0
        while i + 8 < n {
            if p.loadUnaligned(fromByteOffset: i, as: UInt64.self) != q.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i += 8
        }
        // The last eight bytes, overlapping the words before: no byte loop for the tail (a
        // 39-byte path was 4 words and 7 bytes one by one).
        return p.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self) == q.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)
    }

    /// The index of the first CR or LF at or after `start`, or `bytes.count`.
    @inlinable
    public static func firstLineBreak(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        firstIndex(of: 0x0D, or: 0x0A, in: bytes, from: start)
    }

    /// The index of the first `a` or `b` at or after `start`, or `bytes.count`. Within a word,
    /// the lowest flagged byte is the first match (a flag above a true match can be spurious, one
    /// below it never is).
    @inlinable
    public static func firstIndex(of a: UInt8, or b: UInt8, in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var i = start
        if let base = bytes.baseAddress {
            while i + 8 <= bytes.count {
                let w = UnsafeRawPointer(base).loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let found = has(w, a) | has(w, b)
                if found != 0 { return i + found.trailingZeroBitCount / 8 }
                i += 8
            }
        }
        while i < bytes.count, bytes[i] != a, bytes[i] != b { i += 1 }
        return i
    }

    /// Whether every byte is visible ASCII (0x21-0x7E), as a request target must be.
    @inlinable
    public static func isVisibleASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        !anyWord(bytes) { w in hasLess(w, 0x21) | has(w, 0x7F) | (w & highs) }
    }

    /// Control characters (tab included) or DEL.
    @inlinable
    public static func containsControl(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        anyWord(bytes) { w in hasLess(w, 0x20) | has(w, 0x7F) }
    }

    /// Control characters (tab included), DEL, `"` and `\`: what the access log's text format escapes.
    @inlinable
    public static func needsTextEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        anyWord(bytes) { w in
            hasLess(w, 0x20) | has(w, 0x7F) | has(w, UInt8(ascii: "\"")) | has(w, UInt8(ascii: "\\"))
        }
    }

    /// As ``needsTextEscape(_:)``, and `<`, `>`, `&` and 0xE2 (the first byte of U+2028 and
    /// U+2029): what JSON strings escape in the access log's JSON format.
    @inlinable
    public static func needsJSONEscape(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        anyWord(bytes) { w in
            hasLess(w, 0x20) | has(w, 0x7F) | has(w, UInt8(ascii: "\"")) | has(w, UInt8(ascii: "\\"))
                | has(w, UInt8(ascii: "<")) | has(w, UInt8(ascii: ">")) | has(w, UInt8(ascii: "&")) | has(w, 0xE2)
        }
    }

    /// NUL, LF or CR: what an HTTP/2 field value must not contain (RFC 9113 §8.2.1).
    @inlinable
    public static func containsNULOrLineBreak(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        anyWord(bytes) { w in hasZero(w) | has(w, 0x0A) | has(w, 0x0D) }
    }

    /// Whether `a` or `b` is among the bytes.
    @inlinable
    public static func contains(_ bytes: UnsafeBufferPointer<UInt8>, anyOf a: UInt8, _ b: UInt8) -> Bool {
        anyWord(bytes) { w in has(w, a) | has(w, b) }
    }

    /// Whether `test` is non-zero for any word of `bytes`. The last word overlaps the one
    /// before (testing bytes twice changes nothing); under eight bytes, the bytes are padded
    /// with `A`, which no test looks for.
    @inlinable @inline(__always)
    static func anyWord(_ bytes: UnsafeBufferPointer<UInt8>, _ test: (UInt64) -> UInt64) -> Bool {
        guard let base = bytes.baseAddress else { return false }
        let raw = UnsafeRawPointer(base)
        let n = bytes.count
        if n < 8 {
            var w: UInt64 = ones &* UInt64(UInt8(ascii: "A"))
            withUnsafeMutableBytes(of: &w) { $0.baseAddress!.copyMemory(from: raw, byteCount: n) }
            return test(w) != 0
        }
        var i = 0
        while i + 8 <= n {
            if test(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self)) != 0 { return true }
            i += 8
        }
        return i < n && test(raw.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self)) != 0
    }
}

/// A set of ASCII bytes as two 64-bit masks: bit `b` of `low` for bytes 0-63, of `high` for
/// 64-127. No byte over 127 is in it.
struct ByteSet {
    let low: UInt64
    let high: UInt64

    @inline(__always)
    func contains(_ b: UInt8) -> Bool {
        if b < 64 { return low >> b & 1 != 0 }
        if b < 128 { return high >> (b & 63) & 1 != 0 }
        return false
    }
}
