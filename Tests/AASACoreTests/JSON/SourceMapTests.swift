import Testing
@testable import AASACore

@Suite struct SourceMapTests {
    @Test func mapsOffsetsToLinesAndCharacterColumns() {
        let map = SourceMap(Array("ab\r\nçd\n\nx".utf8))
        #expect(map.position(of: 0) == SourcePosition(line: 1, column: 1))
        #expect(map.position(of: 4) == SourcePosition(line: 2, column: 1))
        #expect(map.position(of: 6) == SourcePosition(line: 2, column: 2)) // after the two bytes of ç
        #expect(map.position(of: 9) == SourcePosition(line: 4, column: 1))
        #expect(map.position(of: 1000) == SourcePosition(line: 4, column: 2))
    }

    /// The checkpoints must give the column a byte-by-byte count gives, at every offset of
    /// lines long and short, with multi-byte scalars across checkpoint boundaries.
    @Test func columnsFromCheckpointsMatchACountFromTheLineStart() {
        var text = ""
        for i in 0..<40 { text += String(repeating: i % 3 == 0 ? "é" : "a", count: i * 7) + (i % 5 == 0 ? "€\n" : "\n") }
        text += String(repeating: "ü", count: 300)
        let bytes = Array(text.utf8)
        let map = SourceMap(bytes)
        var line = 1
        var lineStart = 0
        for offset in 0...bytes.count {
            let column = 1 + bytes[lineStart..<offset].count { $0 & 0xC0 != 0x80 }
            #expect(map.position(of: offset) == SourcePosition(line: line, column: column), "offset \(offset)")
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "\n") {
                line += 1
                lineStart = offset + 1
            }
        }
    }
}
