import Testing
@testable import AASAHTTP

@Suite struct ChunkedDecoderTests {
    func decode(_ text: String, limit: Int = 1024, splitAt: Int? = nil) -> (ChunkedDecoder.Outcome, [UInt8]) {
        var decoder = ChunkedDecoder(limit: limit)
        let bytes = Array(text.utf8)
        let cut = splitAt ?? bytes.count
        var outcome = bytes[..<cut].withUnsafeBytes { decoder.feed($0) }
        if outcome == .needMore, cut < bytes.count {
            outcome = bytes[cut...].withUnsafeBytes { decoder.feed($0) }
            if case .complete(let n) = outcome { outcome = .complete(consumed: n + cut) }
        }
        return (outcome, decoder.body)
    }

    @Test func chunksExtensionsAndTrailersDecodeAndWhatFollowsIsLeft() {
        let text = "5\r\nhello\r\na; name=\"v\"\r\n, world!!!\r\n0\r\nTrailer: x\r\n\r\nGET / HTTP/1.1"
        for split in [nil, 1, 3, 9, 20, 40] as [Int?] {
            let (outcome, body) = decode(text, splitAt: split)
            #expect(String(decoding: body, as: UTF8.self) == "hello, world!!!", "split \(String(describing: split))")
            #expect(outcome == .complete(consumed: text.utf8.count - "GET / HTTP/1.1".utf8.count), "split \(String(describing: split))")
        }
        #expect(decode("0\r\n\r\n") == (.complete(consumed: 5), []))
        #expect(decode("5\r\nhel").0 == .needMore)
    }

    @Test func whatTwoParsersCouldReadDifferentlyIsRefused() {
        for text in ["5\nhello\r\n0\r\n\r\n", "5\r\nhello\n0\r\n\r\n", "5\r\nhelloXX0\r\n\r\n", "-5\r\n", " 5\r\n", "\r\n", "0x5\r\n",
                     "5\r\nhello\r\n0\r\n\n", "1;\u{1}\r\n"] {
            guard case .error(let e) = decode(text).0 else {
                Issue.record("\(text.debugDescription) was not refused")
                continue
            }
            #expect(e.status == .badRequest, "\(text.debugDescription)")
        }
    }

    @Test func aBodyOverItsLimitIsRefusedBeforeItIsRead() {
        guard case .error(let e) = decode("401\r\n", limit: 1024).0 else { Issue.record("not refused"); return }
        #expect(e.status == .payloadTooLarge)
        #expect(decode("400\r\n", limit: 1024).0 == .needMore)
        guard case .error(let again) = decode("300\r\n" + String(repeating: "a", count: 0x300) + "\r\n200\r\n", limit: 1024).0 else {
            Issue.record("the sum was not refused"); return
        }
        #expect(again.status == .payloadTooLarge)
    }

    @Test func aChunkExtensionHasABound() {
        let long = "1;" + String(repeating: "a", count: ChunkedDecoder.extensionLimit + 1) + "\r\nx\r\n0\r\n\r\n"
        guard case .error(let e) = decode(long).0 else { Issue.record("an endless extension was read"); return }
        #expect(e.status == .badRequest)
        let fits = "1;" + String(repeating: "a", count: ChunkedDecoder.extensionLimit - 2) + "\r\nx\r\n0\r\n\r\n"
        #expect(decode(fits).1 == Array("x".utf8))
    }
}
