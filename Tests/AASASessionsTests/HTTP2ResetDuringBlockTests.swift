import AASAHTTP
import Testing
@testable import AASASessions

/// The server sends nothing more on a stream it reset (RFC 9113 §5.1, "closed"), even when the
/// rest of its header block comes after the reset.
@Suite struct HTTP2ResetDuringBlockTests {
    @Test func aStreamResetWhileItsBlockArrivesIsNotAnsweredWhenTheBlockEnds() {
        let server = ServerUnderTest()
        let block = Wire.requestBlock()
        server.receive(Wire.clientStart + Wire.headers(stream: 1, block: Array(block.prefix(4)), endStream: true, endHeaders: false))
        _ = server.read()
        server.clock.now += 10_000
        server.session.deadlineReached(output: &server.output)
        let reset = Frame.parse(server.read())
        #expect(reset.contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == 8 }, "\(reset)")
        server.receive(Frame(type: Frame.continuation, flags: Frame.endHeaders, stream: 1, payload: Array(block.dropFirst(4))).bytes)
        let after = Frame.parse(server.read())
        #expect(!after.contains { $0.type == Frame.headers || $0.type == Frame.data }, "\(after)")
        #expect(server.dispatch.requests.isEmpty)
        #expect(!server.session.isClosing)
        server.receive(Wire.get(stream: 3))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.headers && $0.stream == 3 })
    }
}
