import Testing
@testable import AASASessions

@Suite struct ProtocolSelectorTests {
    @Test func thePrefaceIsHTTP2OnceWholeAndNeedsMoreUntilThen() {
        let preface = Array(ClientPreface.bytes)
        for n in 0..<preface.count {
            #expect(ProtocolSelector.decide(preface[0..<n]) == .needMore, "\(n) bytes")
        }
        #expect(ProtocolSelector.decide(preface) == .http2)
        #expect(ProtocolSelector.decide(preface + [0, 0, 0, 4]) == .http2)
    }

    @Test func anythingElseIsHTTP1AtTheFirstByteThatDiffers() {
        #expect(ProtocolSelector.decide(Array("GET / HTTP/1.1\r\n".utf8)) == .http1)
        #expect(ProtocolSelector.decide(Array("POST".utf8)) == .http1)
        #expect(ProtocolSelector.decide(Array("PRI * HTTP/2.0\r\n\r\nXX".utf8)) == .http1)
        #expect(ProtocolSelector.decide(Array("PU".utf8)) == .http1)
    }
}
