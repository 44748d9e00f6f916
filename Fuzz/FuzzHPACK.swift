// libFuzzer entry point comparing the HPACK decoder (AASASessions' HeaderDecoder, RFC 7541) with
// libnghttp2's inflater, the reference. Built by `make fuzz`, compiled with the sessions target's
// sources and linked with the system libnghttp2 (docs/testing.md, "Fuzzing").
//
// An input is one connection's header blocks, each a 2-byte big-endian length and that many bytes
// (fewer if the input ends first; a missing length byte reads as 0). Both decoders start with the
// same table limit and keep their dynamic table from block to block, so table size updates,
// insertions and evictions meet later indexes. For every block, both accept and hand over the same
// fields (name and value bytes, in order), or both refuse it; a refusal is a connection error
// (COMPRESSION_ERROR, RFC 9113 §4.3), so the input ends there. Anything else stops the run with
// both decoders' views of the block and the input.
//
// Where the two differ by design, the difference is checked, not skipped:
// - An integer (§5.1) encoded in more than five bytes: HeaderDecoder refuses it (at most a prefix
//   and four more bytes, 2^28 or so, is more than any index, length or table size it can be
//   given); nghttp2 takes up to six, for any value under 2^32 (decode_length in lib/nghttp2_hd.c).
//   When we refuse a block nghttp2 accepts, the block must hold such an integer, and the same
//   block with every integer re-encoded in its shortest form must decode, after the blocks before
//   it, to the fields nghttp2 handed over.
// - nghttp2 refuses a string literal longer than 65 536 bytes (NGHTTP2_HD_MAX_NV,
//   lib/nghttp2_hd.h); HeaderDecoder has no such limit. A block here is at most the session's
//   SETTINGS_MAX_HEADER_LIST_SIZE (HTTP2Configuration.maxHeaderListSize, 16 KiB): the session
//   refuses a larger block before decoding it, so no string reaches nghttp2's limit, and a block
//   nghttp2 refuses that we accept is always a difference.
// - The header list limit (the fields' decoded size) is the session's, not the decoder's: the
//   fuzzer's field handler never stops the decoder. The h2 fuzzer and HTTP2SessionTests cover it.
import CNghttp2

/// A block's largest size: what the session decodes at most.
private let maxBlock = HTTP2Configuration().maxHeaderListSize
/// The longest integer encoding HeaderDecoder takes: a prefix and four more bytes.
private let ourLongestInteger = 5

/// nghttp2's string literal limit, NGHTTP2_HD_MAX_NV (lib/nghttp2_hd.h, not exported): above
/// any block here (see the rules above).
private let nghttp2MaxString = 65_536

private struct Field: Equatable {
    let name: [UInt8]
    let value: [UInt8]
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    precondition(maxBlock < nghttp2MaxString, "a block could hold a string nghttp2 refuses by design")
    let input = UnsafeBufferPointer(start: data, count: size)
    let blocks = splitBlocks(input)
    let ours = HeaderDecoder()
    let reference = Inflater()
    for (n, block) in blocks.enumerated() {
        switch (decode(ours, block), reference.inflate(block)) {
        case let (ourFields?, theirFields?):
            if ourFields != theirFields {
                difference("the decoded fields differ", input, n, block, ours: ourFields, nghttp2: theirFields)
            }
        case (nil, nil):
            return 0
        case let (nil, theirFields?):
            checkOverlongInteger(blocks, n, theirFields, input)
            return 0
        case let (ourFields?, nil):
            difference("nghttp2 refuses a block we accept", input, n, block, ours: ourFields, nghttp2: nil)
        }
    }
    return 0
}

/// The input cut into blocks: a 2-byte big-endian length, then the block (see the top).
private func splitBlocks(_ input: UnsafeBufferPointer<UInt8>) -> [UnsafeBufferPointer<UInt8>] {
    var blocks: [UnsafeBufferPointer<UInt8>] = []
    var i = 0
    while i < input.count {
        let high = Int(input[i])
        let low = i + 1 < input.count ? Int(input[i + 1]) : 0
        i = min(i + 2, input.count)
        let count = min(high << 8 | low, maxBlock, input.count - i)
        blocks.append(UnsafeBufferPointer(rebasing: input[i..<(i + count)]))
        i += count
    }
    return blocks
}

/// Our decoder's fields for `block`, or nil when it refuses it.
private func decode(_ decoder: HeaderDecoder, _ block: UnsafeBufferPointer<UInt8>) -> [Field]? {
    var fields: [Field] = []
    let outcome = decoder.decode(UnsafeRawBufferPointer(block)) { name, value, _ in
        fields.append(Field(name: Array(name), value: Array(value)))
        return true
    }
    switch outcome {
    case .done: return fields
    case .invalid: return nil
    case .stopped: fatalError("hpack-fuzz: the decoder stopped, though the field handler never asks it to")
    }
}

/// The by-design rule for a block we refuse and nghttp2 accepts (see the top): it holds an
/// integer longer than ours, and in shortest form we decode it, after the blocks before it, to
/// nghttp2's fields. The replay uses a new decoder, since ours is left part-way through the block.
private func checkOverlongInteger(_ blocks: [UnsafeBufferPointer<UInt8>], _ n: Int, _ theirFields: [Field],
                                  _ input: UnsafeBufferPointer<UInt8>) {
    guard let shortest = ShortestIntegers(blocks[n]), shortest.longestInteger > ourLongestInteger else {
        difference("we refuse a block nghttp2 accepts, and it has no integer over \(ourLongestInteger) bytes",
                   input, n, blocks[n], ours: nil, nghttp2: theirFields)
    }
    let replay = HeaderDecoder()
    for block in blocks[..<n] {
        guard decode(replay, block) != nil else { fatalError("hpack-fuzz: a block accepted before is refused on replay") }
    }
    let fields = shortest.bytes.withUnsafeBufferPointer { decode(replay, $0) }
    if fields != theirFields {
        difference("with its integers in shortest form (\(hex(shortest.bytes[...]))), a block nghttp2 accepts still decodes otherwise",
                   input, n, blocks[n], ours: fields, nghttp2: theirFields)
    }
}

/// A block with every integer (§5.1) re-encoded in its shortest form, and the longest encoding
/// it had. Where a block's integers and strings are does not depend on the dynamic table, so the
/// walk needs none; nil when the block ends inside a representation (§6).
private struct ShortestIntegers {
    private(set) var bytes: [UInt8] = []
    private(set) var longestInteger = 0
    private let block: UnsafeBufferPointer<UInt8>
    private var i = 0

    init?(_ block: UnsafeBufferPointer<UInt8>) {
        self.block = block
        while i < block.count {
            let first = block[i]
            if first & 0x80 != 0 {
                guard integer(prefixBits: 7) != nil else { return nil }  // indexed field (§6.1)
            } else if first & 0xE0 == 0x20 {
                guard integer(prefixBits: 5) != nil else { return nil }  // table size update (§6.3)
            } else {
                // Literal (§6.2): a name index, or 0 and the name; then the value.
                guard let index = integer(prefixBits: first & 0xC0 == 0x40 ? 6 : 4),
                      index != 0 || string(), string() else { return nil }
            }
        }
    }

    /// Reads an integer and writes it in shortest form with the same flag bits; nil when the
    /// block ends inside it or it is longer than any decoder here takes (nghttp2: 32 bits).
    private mutating func integer(prefixBits: Int) -> Int? {
        let start = i
        let limit = (1 << prefixBits) - 1
        let flags = block[i] & ~UInt8(limit)
        var value = Int(block[i]) & limit
        i += 1
        if value == limit {
            var shift = 0
            while true {
                guard i < block.count, shift <= 28 else { return nil }
                let b = block[i]
                i += 1
                value += Int(b & 0x7F) << shift
                if b & 0x80 == 0 { break }
                shift += 7
            }
        }
        longestInteger = max(longestInteger, i - start)
        HeaderEncoder.integer(value, prefixBits: prefixBits, first: flags, into: &bytes)
        return value
    }

    /// Reads a string literal (§5.2): its length in shortest form, its bytes as they are.
    private mutating func string() -> Bool {
        guard i < block.count, let length = integer(prefixBits: 7), length <= block.count - i else { return false }
        bytes += block[i..<(i + length)]
        i += length
        return true
    }
}

/// libnghttp2's inflater over one connection's blocks, with our decoder's table limit.
private final class Inflater {
    private var inflater: OpaquePointer?

    init() {
        precondition(nghttp2_hd_inflate_new(&inflater) == 0, "nghttp2_hd_inflate_new")
        // Our SETTINGS_HEADER_TABLE_SIZE, never changed (nghttp2's default is the same 4 096).
        precondition(nghttp2_hd_inflate_change_table_size(inflater, HeaderDecoder.maxTableSize) == 0,
                     "nghttp2_hd_inflate_change_table_size")
    }

    deinit { nghttp2_hd_inflate_del(inflater) }

    /// The block's fields, or nil when nghttp2 refuses it (NGHTTP2_ERR_HEADER_COMP).
    func inflate(_ block: UnsafeBufferPointer<UInt8>) -> [Field]? {
        var fields: [Field] = []
        var at = 0
        // A field takes a byte at least, and the end one more call.
        for _ in 0...(block.count + 1) {
            var nv = nghttp2_nv()
            var flags: Int32 = 0
            let n = nghttp2_hd_inflate_hd2(inflater, &nv, &flags, block.baseAddress.map { $0 + at }, block.count - at, 1)
            if n < 0 {
                precondition(n == Int(NGHTTP2_ERR_HEADER_COMP.rawValue), "nghttp2_hd_inflate_hd2: \(n)")
                return nil
            }
            at += n
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                fields.append(Field(name: Array(UnsafeBufferPointer(start: nv.name, count: nv.namelen)),
                                    value: Array(UnsafeBufferPointer(start: nv.value, count: nv.valuelen))))
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                nghttp2_hd_inflate_end_headers(inflater)
                return fields
            }
        }
        fatalError("hpack-fuzz: nghttp2_hd_inflate_hd2 did not finish a block of \(block.count) bytes")
    }
}

/// Stops the run with what each decoder made of block `n` (nil: refused), and the input.
private func difference(_ what: String, _ input: UnsafeBufferPointer<UInt8>, _ n: Int, _ block: UnsafeBufferPointer<UInt8>,
                        ours: [Field]?, nghttp2: [Field]?) -> Never {
    fatalError("""
        hpack-fuzz: \(what), block \(n) of the input
          block (\(block.count) bytes): \(hex(block[...]))
          ours:    \(describe(ours))
          nghttp2: \(describe(nghttp2))
          input (\(input.count) bytes): \(hex(input[...]))
        """)
}

private func hex<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    for b in bytes { out += [digits[Int(b >> 4)], digits[Int(b & 0xF)]] }
    return String(decoding: out, as: UTF8.self)
}

/// Fields as `name: value` lines, bytes outside printable ASCII as \xNN.
private func describe(_ fields: [Field]?) -> String {
    guard let fields else { return "refused" }
    func text(_ bytes: [UInt8]) -> String {
        bytes.map { $0 >= 0x20 && $0 < 0x7F && $0 != 0x5C ? String(UnicodeScalar($0)) : "\\x" + hex([$0]) }.joined()
    }
    return "\(fields.count) fields" + fields.map { "\n    \(text($0.name)): \(text($0.value))" }.joined()
}
