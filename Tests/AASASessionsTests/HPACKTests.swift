import CNghttp2
import TestRandom
import Testing
@testable import AASASessions

/// The request side of HPACK (RFC 7541) against libnghttp2's encoder: what it encodes, with its
/// dynamic table, Huffman coding, never-indexed fields and table size changes, decodes to the
/// same fields; and every way a block can be invalid is refused.
@Suite struct HPACKTests {
    /// Decodes `block`; nil when it is refused.
    private static func decode(_ decoder: HeaderDecoder, _ block: [UInt8]) -> [(String, String)]? {
        var fields: [(String, String)] = []
        let outcome = block.withUnsafeBytes { bytes in
            decoder.decode(bytes) { name, value, _ in
                fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
                return true
            }
        }
        return outcome == .done ? fields : nil
    }

    /// libnghttp2's inflater on a block, as the first of a connection; nil when it refuses it.
    private static func inflate(_ block: [UInt8]) -> [(String, String)]? {
        HPACKInflater().fields(block)?.map { ($0.name, $0.value) }
    }

    /// libnghttp2's encoder over one connection's blocks.
    private final class Encoder {
        private var deflater: OpaquePointer?
        init(tableSize: Int = 4096) { nghttp2_hd_deflate_new(&deflater, tableSize) }
        deinit { nghttp2_hd_deflate_del(deflater) }

        func changeTableSize(_ size: Int) { nghttp2_hd_deflate_change_table_size(deflater, size) }

        func encode(_ fields: [(String, String, neverIndexed: Bool)]) -> [UInt8] {
            var flat: [UInt8] = []
            var spans: [(Int, Int, Int, Int, UInt8)] = []
            for (name, value, never) in fields {
                spans.append((flat.count, name.utf8.count, flat.count + name.utf8.count, value.utf8.count,
                              never ? UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) : 0))
                flat += name.utf8
                flat += value.utf8
            }
            return flat.withUnsafeMutableBufferPointer { bytes in
                let nva = spans.map { nghttp2_nv(name: bytes.baseAddress! + $0.0, value: bytes.baseAddress! + $0.2, namelen: $0.1, valuelen: $0.3, flags: $0.4) }
                var out = [UInt8](repeating: 0, count: nghttp2_hd_deflate_bound(deflater, nva, nva.count))
                let n = out.withUnsafeMutableBufferPointer { nghttp2_hd_deflate_hd(deflater, $0.baseAddress, $0.count, nva, nva.count) }
                precondition(n >= 0, "nghttp2_hd_deflate_hd: \(n)")
                return Array(out[0..<n])
            }
        }
    }

    @Test func whatLibnghttp2EncodesDecodesToTheSameFieldsOverAConnection() {
        var random = SplitMix(seed: 11)
        let names = [":method", ":path", ":authority", ":scheme", "user-agent", "accept", "cookie", "x-custom", "if-none-match",
                     "content-type", "x-\u{e9}t\u{e9}", "authorization"]
        let values = ["GET", "/", "/.well-known/apple-app-site-association", "example.com", "", "a", "gzip, deflate",
                      String(repeating: "z", count: 300), "caf\u{e9} \u{1F600}", "\u{0}\u{1}\u{7F}\u{FF}"]
        // Every encoder table size, including one smaller than most fields and none at all.
        for tableSize in [4096, 256, 64, 0] {
            let encoder = Encoder(tableSize: tableSize)
            let decoder = HeaderDecoder()
            for round in 0..<300 {
                if round % 50 == 49 { encoder.changeTableSize(Int(random.next() % 4097)) }
                let fields = (0..<Int(random.next() % 12)).map { _ in
                    (names[Int(random.next() % UInt64(names.count))], values[Int(random.next() % UInt64(values.count))],
                     neverIndexed: random.next() % 5 == 0)
                }
                let decoded = HPACKTests.decode(decoder, encoder.encode(fields))
                #expect(decoded?.map { $0.0 } == fields.map { $0.0 }, "table \(tableSize), round \(round)")
                #expect(decoded?.map { $0.1 } == fields.map { $0.1 }, "table \(tableSize), round \(round)")
                if decoded == nil { return }
            }
        }
    }

    @Test func theExamplesOfRFC7541AppendixC4DecodeAsGiven() {
        // C.4: three requests with Huffman coding over one dynamic table.
        let decoder = HeaderDecoder()
        let blocks = ["828684418cf1e3c2e5f23a6ba0ab90f4ff", "828684be5886a8eb10649cbf",
                      "828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf"]
        let expected: [[(String, String)]] = [
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com")],
            [(":method", "GET"), (":scheme", "http"), (":path", "/"), (":authority", "www.example.com"), ("cache-control", "no-cache")],
            [(":method", "GET"), (":scheme", "https"), (":path", "/index.html"), (":authority", "www.example.com"),
             ("custom-key", "custom-value")],
        ]
        for (hex, fields) in zip(blocks, expected) {
            let block = stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
            let decoded = HPACKTests.decode(decoder, block)
            #expect(decoded?.map { $0.0 } == fields.map { $0.0 } && decoded?.map { $0.1 } == fields.map { $0.1 }, "\(hex)")
        }
    }

    @Test(arguments: [
        ("index 0", [0x80]),
        ("an index past both tables", [0xFF, 0x80, 0x01]),
        ("a literal name index past both tables", [0x7F, 0x10, 0x00]),
        ("a size update above SETTINGS_HEADER_TABLE_SIZE", [0x3F, 0xE2, 0x1F]),
        ("a size update after a field", [0x82, 0x20]),
        ("an integer that never ends", [0xFF, 0xFF, 0xFF]),
        ("an integer too large", [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
        ("a string longer than the block", [0x40, 0x05, 0x61]),
        ("a literal without its value", [0x40, 0x01, 0x61]),
        ("Huffman padding of a whole byte", [0x00, 0x01, 0x61, 0x82, 0x1F, 0xFF]),
        ("Huffman padding of zeros", [0x00, 0x01, 0x61, 0x81, 0x00]),
        ("the EOS symbol in a string", [0x00, 0x01, 0x61, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]),
    ] as [(String, [UInt8])])
    func anInvalidBlockIsRefused(_ what: String, _ block: [UInt8]) {
        #expect(HPACKTests.decode(HeaderDecoder(), block) == nil, "\(what)")
    }

    /// The one difference from libnghttp2's inflater by design, which the hpack fuzzer
    /// (Fuzz/FuzzHPACK.swift) allows and checks: an integer (§5.1) in six bytes. nghttp2 takes up
    /// to six for any value under 2^32; we take a prefix and four more bytes, 2^28 or so, more
    /// than any index, length or size. Five bytes are taken by both.
    @Test func anIntegerInSixBytesIsRefusedThoughLibnghttp2TakesIt() {
        // A table size update to 4 096 (31 in the prefix, then 4 065 in 7-bit groups) padded
        // with a 0x80 byte, then with two; then :method GET.
        let fiveBytes: [UInt8] = [0x3F, 0xE1, 0x9F, 0x80, 0x00, 0x82]
        let sixBytes: [UInt8] = [0x3F, 0xE1, 0x9F, 0x80, 0x80, 0x00, 0x82]
        #expect(HPACKTests.decode(HeaderDecoder(), fiveBytes).map { $0.map(\.1) } == ["GET"])
        #expect(HPACKTests.inflate(fiveBytes).map { $0.map(\.1) } == ["GET"])
        #expect(HPACKTests.decode(HeaderDecoder(), sixBytes) == nil)
        #expect(HPACKTests.inflate(sixBytes).map { $0.map(\.1) } == ["GET"])
    }

    @Test func aSizeUpdateEvictsAndAFieldLargerThanTheTableEmptiesIt() {
        let decoder = HeaderDecoder()
        // Two fields into the table (62 and 63 after), then a size update to 0 at the start of
        // the next block: both gone.
        #expect(HPACKTests.decode(decoder, [0x40, 0x01, 0x61, 0x01, 0x31, 0x40, 0x01, 0x62, 0x01, 0x32])?.count == 2)
        #expect(HPACKTests.decode(decoder, [0xBE])?.first?.0 == "b")
        #expect(HPACKTests.decode(decoder, [0x20, 0xBE]) == nil)
        // Back to 40 bytes: an entry of 34 fits, one of 41 empties the table and is still handed over.
        let small: [UInt8] = [0x3F, 0x09, 0x40, 0x01, 0x63, 0x01, 0x33]
        #expect(HPACKTests.decode(decoder, small)?.first?.1 == "3")
        #expect(HPACKTests.decode(decoder, [0xBE])?.first?.1 == "3")
        let big: [UInt8] = [0x40, 0x01, 0x64] + [0x08] + Array("12345678".utf8)
        #expect(HPACKTests.decode(decoder, big)?.first?.1 == "12345678")
        #expect(HPACKTests.decode(decoder, [0xBE]) == nil)
    }
}
