import Testing
@testable import AASAHTTP

/// The word-at-a-time tests against their byte-at-a-time definitions, on spans of every length
/// up to a few words with each kind of byte at every position.
@Suite struct ByteScanTests {
    private static let interesting: [UInt8] = [0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x21, 0x22, 0x26, 0x3C, 0x3E, 0x5C, 0x7E,
                                               0x7F, 0x80, 0xA8, 0xE2, 0xFF, UInt8(ascii: "s"), UInt8(ascii: "C"),
                                               // Next to the bytes searched for, where a borrow flags a neighbour.
                                               0x0C, 0x0E, 0x3A, 0x3B, 0x3F, 0x3E, 0x23, 0x24]

    /// Spans of `length` plain letters with one interesting byte at each position, two side by
    /// side at a few, and none.
    private static func spans(length: Int) -> [[UInt8]] {
        let plain = [UInt8](repeating: UInt8(ascii: "a"), count: length)
        var out = [plain]
        for position in 0..<length {
            for b in interesting {
                var span = plain
                span[position] = b
                out.append(span)
            }
        }
        // Two neighbours, where a borrow from one byte could reach the next.
        for position in Set([0, length / 2, length - 2]) where position >= 0 && position + 1 < length {
            for a in interesting {
                for b in interesting {
                    var span = plain
                    span[position] = a
                    span[position + 1] = b
                    out.append(span)
                }
            }
        }
        return out
    }

    @Test func eachWordTestAgreesWithItsByteDefinition() {
        for length in 0...20 {
            for span in ByteScanTests.spans(length: length) {
                span.withUnsafeBufferPointer { bytes in
                    #expect(ByteScan.isVisibleASCII(bytes) == bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F })
                    #expect(ByteScan.containsControl(bytes) == bytes.contains { $0 < 0x20 || $0 == 0x7F })
                    #expect(ByteScan.needsTextEscape(bytes) == bytes.contains { $0 < 0x20 || $0 == 0x7F || $0 == 0x22 || $0 == 0x5C })
                    #expect(ByteScan.needsJSONEscape(bytes) == bytes.contains {
                        $0 < 0x20 || [0x7F, 0x22, 0x5C, 0x3C, 0x3E, 0x26, 0xE2].contains($0)
                    })
                    #expect(ByteScan.contains(bytes, anyOf: UInt8(ascii: "s"), UInt8(ascii: "C")) ==
                            bytes.contains { $0 == UInt8(ascii: "s") || $0 == UInt8(ascii: "C") })
                    for start in 0...length {
                        let expected = bytes[start...].firstIndex { $0 == 0x0A || $0 == 0x0D } ?? length
                        #expect(ByteScan.firstLineBreak(bytes, from: start) == expected)
                        let query = bytes[start...].firstIndex { $0 == 0x3F || $0 == 0x23 } ?? length
                        #expect(ByteScan.firstIndex(of: 0x3F, or: 0x23, in: bytes, from: start) == query)
                        let colon = bytes[start...].firstIndex { $0 == 0x3A } ?? length
                        #expect(ByteScan.firstIndex(of: 0x3A, or: 0x3A, in: bytes, from: start) == colon)
                    }
                }
            }
        }
    }

    @Test func equalAgreesWithElementsEqualAtEveryLengthAndDifferingPosition() {
        let plain = (0..<20).map { _ in UInt8(ascii: "a") }
        for length in 0...20 {
            let a = Array(plain[0..<length])
            a.withUnsafeBufferPointer { x in
                #expect(ByteScan.equal(x, x))
                for other in ByteScanTests.spans(length: length) + [Array(plain[0..<max(0, length - 1)]), a + [0x61]] {
                    other.withUnsafeBufferPointer { y in
                        #expect(ByteScan.equal(x, y) == a.elementsEqual(other), "\(a) vs \(other)")
                    }
                }
            }
        }
    }
}
