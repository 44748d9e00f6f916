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
}
