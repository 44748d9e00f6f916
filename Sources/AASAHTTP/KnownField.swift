#if canImport(Glibc)
import Glibc
#endif

/// The request fields the server acts on: one list for both protocols. HTTP/1.1 names come in
/// any case (RFC 9110 §5.1); HTTP/2 names are lower case as sent (RFC 9113 §8.2.2), where the
/// pseudo-header fields (§8.3.1) are known too and the connection-specific fields are known in
/// order to be refused. Both lookups go by length first, so most names cost one comparison.
package enum KnownField {
    /// HTTP/2's pseudo-header fields.
    case method, path, authority, scheme
    case host, contentLength, transferEncoding, connection, ifNoneMatch, ifModifiedSince, ifMatch, userAgent, authorization
    /// ``RequestParser/ownCheckField``.
    case ownCheck
    /// `Expect: 100-continue`, read by the admin listener (HTTP/1.1 only).
    case expect

    /// An HTTP/1.1 field name, in any case. Any bytes of a line may be given: a match is made of
    /// token characters (see ``isName``).
    package static func named(anyCase name: Slice<UnsafeBufferPointer<UInt8>>) -> KnownField? {
        let p = UnsafeRawPointer(name.base.baseAddress! + name.startIndex)
        switch name.count {
        case 4: return isName(p, "host") ? .host : nil
        case 6: return isName(p, "expect") ? .expect : nil
        case 8: return isName(p, "if-match") ? .ifMatch : nil
        case 10:
            if isName(p, "connection") { return .connection }
            if isName(p, "aasa-check") { return .ownCheck }
            return isName(p, "user-agent") ? .userAgent : nil
        case 13:
            if isName(p, "if-none-match") { return .ifNoneMatch }
            return isName(p, "authorization") ? .authorization : nil
        case 14: return isName(p, "content-length") ? .contentLength : nil
        case 17:
            if isName(p, "transfer-encoding") { return .transferEncoding }
            return isName(p, "if-modified-since") ? .ifModifiedSince : nil
        default: return nil
        }
    }

    /// An HTTP/2 field name as sent, lower case (RFC 9113 §8.2.2; an upper-case name is
    /// malformed, and the field check finds it). HTTP/2 reads neither Authorization nor If-Match:
    /// the write API that does is on the admin listener, which is HTTP/1.1 only.
    package static func named(lowerCase name: UnsafeBufferPointer<UInt8>) -> KnownField? {
        switch name.count {
        case 4: return equals(name, "host") ? .host : nil
        case 5: return equals(name, ":path") ? .path : nil
        case 7:
            if equals(name, ":method") { return .method }
            return equals(name, ":scheme") ? .scheme : nil
        case 10:
            if equals(name, ":authority") { return .authority }
            if equals(name, "user-agent") { return .userAgent }
            if equals(name, "connection") { return .connection }
            return equals(name, "aasa-check") ? .ownCheck : nil
        case 13: return equals(name, "if-none-match") ? .ifNoneMatch : nil
        case 14: return equals(name, "content-length") ? .contentLength : nil
        case 17:
            if equals(name, "transfer-encoding") { return .transferEncoding }
            return equals(name, "if-modified-since") ? .ifModifiedSince : nil
        default: return nil
        }
    }

    /// Byte for byte (memcmp: the generic `elementsEqual` cost some 130 instructions a field,
    /// callgrind).
    package static func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return bytes.isEmpty || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }

    /// Whether the bytes at `p` spell `lower` (its length: lower-case letters and `-`) in any
    /// case, eight bytes at a time, setting bit 0x20 of each. Only a letter of either case, `-`
    /// and CR (0x0D, never inside a line) give a letter or `-` that way, so a match is made of
    /// token characters.
    @inline(__always)
    static func isName(_ p: UnsafeRawPointer, _ lower: StaticString) -> Bool {
        let l = UnsafeRawPointer(lower.utf8Start)
        let n = lower.utf8CodeUnitCount
        var i = 0
        while i + 8 <= n {
            if p.loadUnaligned(fromByteOffset: i, as: UInt64.self) | 0x2020_2020_2020_2020
                != l.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i += 8
        }
        while i < n {
            if p.load(fromByteOffset: i, as: UInt8.self) | 0x20 != l.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }
}
