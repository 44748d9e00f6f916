import CNghttp2

/// The request side of HPACK (RFC 7541): libnghttp2's inflater, fed each header block fragment
/// as it arrives. It keeps the connection's dynamic table, so every block is decoded, including
/// those of streams the server refuses or ignores.
package final class HeaderDecoder {
    private let inflater: OpaquePointer

    package init() {
        var inflater: OpaquePointer?
        // Fails only when out of memory.
        precondition(nghttp2_hd_inflate_new(&inflater) == 0, "nghttp2_hd_inflate_new")
        self.inflater = inflater!
    }

    deinit { nghttp2_hd_inflate_del(inflater) }

    package enum Step {
        /// One field; its bytes are valid until the next call.
        case field(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
        /// The fragment is used up; the block goes on in the next one.
        case needsMore
        /// The block is complete (only with `isLast`); the decoder is ready for the next.
        case end
        /// Not valid HPACK: a connection error, COMPRESSION_ERROR (RFC 9113 §4.3).
        case invalid
    }

    /// Decodes from the front of `input`, advancing it past what was used.
    package func next(_ input: inout UnsafeRawBufferPointer, isLast: Bool) -> Step {
        var field = nghttp2_nv()
        var flags: Int32 = 0
        var none: UInt8 = 0
        let used = withUnsafeMutablePointer(to: &none) { empty in
            nghttp2_hd_inflate_hd2(inflater, &field, &flags,
                                   input.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(empty), input.count,
                                   isLast ? 1 : 0)
        }
        guard used >= 0 else { return .invalid }
        input = UnsafeRawBufferPointer(rebasing: input[used...])
        if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
            return .field(name: UnsafeBufferPointer(start: field.name, count: field.namelen),
                          value: UnsafeBufferPointer(start: field.value, count: field.valuelen))
        }
        if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
            nghttp2_hd_inflate_end_headers(inflater)
            return .end
        }
        return .needsMore
    }
}

/// The response side of HPACK (RFC 7541), done once per prepared response: every field is a
/// literal without indexing (§6.2.2), so a block needs no per-connection table and the same
/// bytes serve every stream of every connection. Names found in the static table (Appendix A)
/// are sent as its index, `:status` values found there as one byte. No Huffman coding.
package enum HeaderEncoder {
    /// A dynamic table size update to 0 (§6.3), at the start of a connection's first block: from
    /// then on the client's decoder keeps no table for us, whatever SETTINGS_HEADER_TABLE_SIZE
    /// it announces later (§4.2).
    package static let tableSizeZero: UInt8 = 0x20
    /// The `date` field's first two bytes: literal without indexing, name index 33.
    package static let datePrefix: (UInt8, UInt8) = (0x0F, 33 - 15)

    /// `:status` and the fields, encoded.
    package static func block(status: Int, fields: [(name: String, value: String)]) -> [UInt8] {
        var out: [UInt8] = []
        if let index = statusIndex[status] {
            out.append(0x80 | UInt8(index))  // indexed field (§6.1)
        } else {
            literal(nameIndex: 8, value: String(status), into: &out)
        }
        for (name, value) in fields {
            if let index = staticNames[name] {
                literal(nameIndex: index, value: value, into: &out)
            } else {
                out.append(0x00)
                string(name, into: &out)
                string(value, into: &out)
            }
        }
        return out
    }

    private static func literal(nameIndex: Int, value: String, into out: inout [UInt8]) {
        integer(nameIndex, prefixBits: 4, first: 0x00, into: &out)
        string(value, into: &out)
    }

    private static func string(_ text: String, into out: inout [UInt8]) {
        integer(text.utf8.count, prefixBits: 7, first: 0x00, into: &out)
        out += text.utf8
    }

    /// An integer with an N-bit prefix (§5.1).
    package static func integer(_ value: Int, prefixBits: Int, first: UInt8, into out: inout [UInt8]) {
        let limit = (1 << prefixBits) - 1
        if value < limit {
            out.append(first | UInt8(value))
            return
        }
        out.append(first | UInt8(limit))
        var rest = value - limit
        while rest >= 128 {
            out.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        out.append(UInt8(rest))
    }

    /// `:status` values with their own static entry (Appendix A).
    private static let statusIndex: [Int: Int] = [200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14]

    /// Static table names a response may carry (Appendix A).
    private static let staticNames: [String: Int] = [
        "accept-ranges": 18, "access-control-allow-origin": 20, "age": 21, "allow": 22, "cache-control": 24,
        "content-disposition": 25, "content-encoding": 26, "content-language": 27, "content-length": 28,
        "content-location": 29, "content-range": 30, "content-type": 31, "date": 33, "etag": 34, "expires": 36,
        "last-modified": 44, "link": 45, "location": 46, "retry-after": 53, "server": 54, "set-cookie": 55,
        "strict-transport-security": 56, "vary": 59, "via": 60, "www-authenticate": 61,
    ]
}
