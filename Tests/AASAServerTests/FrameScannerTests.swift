import Testing
@testable import AASAServer
@testable import AASASessions

/// ``FrameScanner`` and ``StreamHistory``: what the HTTP/2 session sees of frames nghttp2 passes
/// over without a callback.
@Suite struct FrameScannerTests {
    private static func frame(_ type: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, 0,
                UInt8(stream >> 24), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF)] + payload
    }

    private static func priority(stream: UInt32, on dependency: UInt32) -> [UInt8] {
        frame(2, stream: stream, [UInt8(dependency >> 24), UInt8(dependency >> 16 & 0xFF), UInt8(dependency >> 8 & 0xFF), UInt8(dependency & 0xFF), 15])
    }

    /// The events and their absolute offsets, the bytes given in pieces of `piece` bytes.
    private static func events(_ bytes: [UInt8], piece: Int) -> [(Int, FrameScanner.Event)] {
        var scanner = FrameScanner()
        var found: [(Int, FrameScanner.Event)] = []
        var base = 0
        while base < bytes.count {
            let chunk = Array(bytes[base..<min(bytes.count, base + piece)])
            chunk.withUnsafeBytes { raw in
                var from = 0
                while let (offset, event) = scanner.next(in: raw, from: from) {
                    found.append((base + offset, event))
                    from = offset + 1
                }
            }
            base += piece
        }
        return found
    }

    @Test func dataHeadersAndSelfDependentPrioritiesAreFoundWhateverTheSplit() {
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        let settings = FrameScannerTests.frame(4, stream: 0, [])
        let headers = FrameScannerTests.frame(1, stream: 1, Array(repeating: 0x41, count: 30))
        let data = FrameScannerTests.frame(0, stream: 1, Array(repeating: 0, count: 100))
        let fine = FrameScannerTests.priority(stream: 3, on: 1)
        let selfDependent = FrameScannerTests.priority(stream: 5, on: 5)
        let stream = preface + settings + headers + data + fine + data + selfDependent
        let dataAt = preface.count + settings.count + headers.count + 8
        let secondDataAt = dataAt + data.count + fine.count
        let priorityAt = secondDataAt - 8 + data.count + selfDependent.count - 1
        for piece in 1...stream.count {
            let found = FrameScannerTests.events(stream, piece: piece)
            #expect(found.map(\.0) == [dataAt, secondDataAt, priorityAt], "pieces of \(piece)")
            #expect(found.map(\.1) == [.data(stream: 1), .data(stream: 1), .selfDependentPriority], "pieces of \(piece)")
        }
    }

    @Test func theHistoryTellsNewClosedLateAndReusedStreams() {
        var history = StreamHistory()
        #expect(history.verdict(stream: 5, isHeaders: true, now: 0) == .new)
        #expect(history.highestOpened == 5)
        #expect(history.verdict(stream: 3, isHeaders: true, now: 0) == .reusedIdentifier)
        history.recordClose(5, resetByServerAt: nil)
        #expect(history.verdict(stream: 5, isHeaders: false, now: 10) == .closed)
        #expect(history.verdict(stream: 7, isHeaders: true, now: 10) == .new)
        history.recordClose(7, resetByServerAt: 100)
        #expect(history.verdict(stream: 7, isHeaders: false, now: 100 + StreamHistory.resetGraceMilliseconds - 1) == .late)
        #expect(history.verdict(stream: 7, isHeaders: false, now: 100 + StreamHistory.resetGraceMilliseconds) == .closed)
    }
}
