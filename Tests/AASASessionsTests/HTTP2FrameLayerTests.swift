import AASAHTTP
import Testing
@testable import AASASessions

/// The frame layer of ``HTTP2Session`` with hand-made frames (RFC 9113): framing across reads,
/// flow control both ways, padding, trailers, the request field rules and the connection errors.
@Suite struct HTTP2FrameLayerTests {
    /// One hand-made input, named for the report, and the error code it should get.
    struct Case: Sendable, CustomTestStringConvertible {
        let what: String
        let bytes: [UInt8]
        let code: UInt32
        init(_ what: String, _ bytes: [UInt8], _ code: UInt32 = 0x1) {
            self.what = what
            self.bytes = bytes
            self.code = code
        }
        var testDescription: String { what }
    }

    static let protocolError: UInt32 = 0x1, flowControlError: UInt32 = 0x3, frameSizeError: UInt32 = 0x6,
                        compressionError: UInt32 = 0x9, enhanceYourCalm: UInt32 = 0xB

    private func goAwayCode(_ server: ServerUnderTest) -> UInt32? {
        Frame.parse(server.read()).last { $0.type == Frame.goAway }?.errorCode
    }

    // MARK: - Framing

    @Test func bytesArrivingOneAtATimeGetTheSameAnswersAsInOneRead() {
        let block = Wire.requestBlock(extra: [("user-agent", "one-byte/1.0")])
        let input = Wire.clientStart
            + Wire.headers(stream: 1, block: Array(block[..<10]), endHeaders: false)
            + Frame(type: Frame.continuation, flags: Frame.endHeaders, stream: 1, payload: Array(block[10...])).bytes
            + Wire.ping(7)
            + Wire.get(stream: 3, method: "POST", endStream: false) + Wire.data(stream: 3, count: 300, endStream: true)
        let whole = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 2000, for: $0) })
        whole.receive(input)
        let expected = Frame.parse(whole.read())

        let pieces = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 2000, for: $0) })
        var answered: [UInt8] = []
        for byte in input {
            pieces.receive([byte])
            answered += pieces.read()
        }
        // Each stream's frames, in order (responses may go out earlier than in one read, where
        // they follow the PING's ACK). Compared by type, flags and payload.
        let got = Frame.parse(answered)
        for stream: UInt32 in [0, 1, 3] {
            let (g, e) = (got.filter { $0.stream == stream }, expected.filter { $0.stream == stream })
            #expect(g.count == e.count, "stream \(stream)")
            if let i = zip(g, e).enumerated().first(where: { $0.element.0 != $0.element.1 })?.offset {
                let what = "stream \(stream), frame \(i): \(g[i].type)/\(g[i].flags)/\(g[i].payload.count) B"
                Issue.record("\(what), expected \(e[i].type)/\(e[i].flags)/\(e[i].payload.count) B")
            }
        }
        #expect(expected.filter { $0.type == Frame.data }.map(\.stream) == [1, 3])
        #expect(pieces.dispatch.requests.map(\.userAgent) == ["one-byte/1.0", nil])
        #expect(!pieces.session.isClosing)
    }

    @Test func aHeadSentAgainOnAConnectionIsItsIndexesAndTheClientsTableSizeIsHonoured() {
        // One prepared head, as a site version has.
        let prepared = siteResponse(size: 100, for: HTTPRequest())
        let server = ServerUnderTest(dispatch: FakeDispatch { _ in prepared })
        server.receive(Wire.clientStart + Wire.get(stream: 1) + Wire.get(stream: 3))
        let headers = Frame.parse(server.read()).filter { $0.type == Frame.headers }
        #expect(headers.count == 2)
        // RFC 7541 §6.1, §6.2.1: `:status 200` by its index, the fields inserted into the
        // client's table, then the same fields (and the date) as an index each.
        #expect(headers.first?.payload.first == 0x88)
        #expect(headers.first?.payload.dropFirst().first.map { $0 & 0xC0 } == 0x40)
        #expect(headers.last?.payload.first == 0x88)
        #expect(headers.last?.payload.dropFirst().allSatisfy { $0 & 0x80 != 0 } == true)
        #expect((headers.last?.payload.count ?? 0) < 12)
        // SETTINGS_HEADER_TABLE_SIZE 0: the next block begins with a size update to 0 (§4.2, §6.3).
        server.receive(Wire.settings([(0x1, 0)]) + Wire.get(stream: 5))
        let after = Frame.parse(server.read()).filter { $0.type == Frame.headers }
        #expect(after.first?.payload.prefix(2) == [0x20, 0x88])
        #expect((after.first?.payload.count ?? 0) > 40)
    }

    // MARK: - Flow control

    @Test func aWindowOfOneByteLetsOneByteOutUntilTheClientOpensIt() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 100, for: $0) })
        server.receive(Wire.clientStart + Wire.settings([(0x4, 1)]) + Wire.get(stream: 1))
        var data = Frame.parse(server.read()).filter { $0.type == Frame.data }
        #expect(data.map(\.payload.count) == [1])
        // The stream's window opens by 40: 40 more bytes.
        server.receive(Wire.windowUpdate(stream: 1, 40))
        data = Frame.parse(server.read()).filter { $0.type == Frame.data }
        #expect(data.map(\.payload.count) == [40])
        // A new SETTINGS_INITIAL_WINDOW_SIZE moves the open stream's window by the difference
        // (RFC 9113 §6.9.2): 1 → 1000 adds 999, enough for the rest.
        server.receive(Wire.settings([(0x4, 1000)]))
        data = Frame.parse(server.read()).filter { $0.type == Frame.data }
        #expect(data.map(\.payload.count) == [59])
        #expect(data.last?.flags == Frame.endStream)
        #expect(server.session.isIdle)
    }

    @Test func theConnectionsWindowHoldsEveryStreamUntilAWindowUpdate() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 50_000, for: $0) })
        server.receive(Wire.clientStart + Wire.get(stream: 1) + Wire.get(stream: 3))
        let first = Frame.parse(server.read()).filter { $0.type == Frame.data }
        // Stream 1 whole (50,000), stream 3 what is left of the connection's 65,535.
        #expect(first.reduce(0) { $0 + $1.payload.count } == 65_535)
        #expect(first.filter { $0.flags == Frame.endStream }.map(\.stream) == [1])
        server.receive(Wire.windowUpdate(100_000))
        let second = Frame.parse(server.read()).filter { $0.type == Frame.data }
        #expect(second.reduce(0) { $0 + $1.payload.count } == 34_465)
        #expect(second.filter { $0.flags == Frame.endStream }.map(\.stream) == [3])
    }

    @Test func framesAreAsLargeAsTheClientAllows() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 100_000, for: $0) })
        server.receive(Wire.clientStart + Wire.settings([(0x5, 40_000), (0x4, 200_000)]) + Wire.windowUpdate(200_000)
            + Wire.get(stream: 1))
        let data = Frame.parse(server.read()).filter { $0.type == Frame.data }
        #expect(data.map(\.payload.count) == [40_000, 40_000, 20_000])
    }

    @Test func aRequestBodyKeepsTheWindowsOpen() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false)
        for _ in 0..<3 { bytes += Wire.data(stream: 1, count: 16_000) }
        server.receive(bytes)
        let updates = Frame.parse(server.read()).filter { $0.type == Frame.windowUpdate }
        // Past half of each 65,535-byte window, it is opened again by what was used.
        #expect(updates.map(\.stream).sorted() == [0, 1])
        #expect(updates.allSatisfy { readBE32($0.payload, at: 0) == 48_000 })
        server.receive(Wire.data(stream: 1, count: 16_000, endStream: true))
        #expect(server.dispatch.requests.first?.contentLength == 64_000)
    }

    @Test func aWindowUpdateOfZeroOrPastTheMaximumOnAStreamResetsOnlyThatStream() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 100, for: $0) })
        server.receive(Wire.clientStart + Wire.settings([(0x4, 0)]) + Wire.get(stream: 1) + Wire.get(stream: 3))
        _ = server.read()
        server.receive(Wire.windowUpdate(stream: 1, 0) + Wire.windowUpdate(stream: 3, 0x7FFF_FFFF) + Wire.windowUpdate(stream: 3, 1))
        let resets = Frame.parse(server.read()).filter { $0.type == Frame.rstStream }
        #expect(resets.map(\.stream) == [1, 3])
        #expect(resets.map(\.errorCode) == [Self.protocolError, Self.flowControlError])
        server.receive(Wire.get(stream: 5) + Wire.windowUpdate(stream: 5, 100))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.data && $0.stream == 5 })
        #expect(!server.session.isClosing)
    }

    // MARK: - Padding and trailers

    @Test func paddedHeadersAndDataAreReadWithoutTheirPadding() {
        let server = ServerUnderTest()
        let block = Wire.requestBlock(method: "POST")
        // HEADERS with PADDED and PRIORITY (stream 1 depends on 0): pad length, 5 bytes, block, padding.
        let headers = Frame(type: Frame.headers, flags: Frame.endHeaders | 0x8 | 0x20, stream: 1,
                            payload: [3] + be32(0) + [16] + block + [0, 0, 0]).bytes
        let data = Frame(type: Frame.data, flags: Frame.endStream | 0x8, stream: 1, payload: [10] + [UInt8](repeating: 0x61, count: 20)
            + [UInt8](repeating: 0, count: 10)).bytes
        server.receive(Wire.clientStart + headers + data)
        #expect(server.dispatch.requests.first?.method == .other("POST"))
        #expect(server.dispatch.requests.first?.contentLength == 20)
    }

    @Test func aPadLengthBeyondThePayloadIsAProtocolError() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Frame(type: Frame.headers, flags: Frame.endHeaders | 0x8, stream: 1, payload: [200, 1, 2]).bytes)
        #expect(goAwayCode(server) == Self.protocolError)
    }

    @Test func trailersEndTheRequest() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false) + Wire.data(stream: 1, count: 5)
            + Wire.headers(stream: 1, block: Wire.literal("x-checksum", "abc")))
        #expect(server.dispatch.requests.first?.contentLength == 5)
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.headers && $0.stream == 1 })
    }

    static let malformedTrailers: [Case] = [
        Case("without END_STREAM", Wire.headers(stream: 1, block: Wire.literal("x-checksum", "abc"), endStream: false)),
        Case("with a pseudo-header field", Wire.headers(stream: 1, block: Wire.literal(":path", "/"))),
        Case("with a connection-specific field", Wire.headers(stream: 1, block: Wire.literal("connection", "close"))),
    ]

    @Test(arguments: malformedTrailers)
    func malformedTrailersResetTheStream(_ c: Case) {
        let (what, trailers) = (c.what, c.bytes)
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false) + trailers)
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == Self.protocolError }, "\(what)")
        #expect(server.dispatch.requests.isEmpty)
    }

    // MARK: - Malformed requests (RFC 9113 §8.1.1): the stream is reset, the connection goes on

    static let malformedRequests: [Case] = [
        Case("an upper-case name", Wire.requestBlock(extra: [("X-Upper", "1")])),
        Case("a connection-specific field", Wire.requestBlock(extra: [("connection", "keep-alive")])),
        Case("transfer-encoding", Wire.requestBlock(extra: [("transfer-encoding", "chunked")])),
        Case("TE other than trailers", Wire.requestBlock(extra: [("te", "gzip")])),
        Case("a pseudo-header after a regular field", Wire.requestBlock() + Wire.literal("accept", "*/*") + Wire.literal(":scheme", "http")),
        Case("an unknown pseudo-header", Wire.requestBlock(extra: [(":protocol", "websocket")])),
        Case("a response pseudo-header", Wire.requestBlock(extra: [(":status", "200")])),
        Case("a repeated :path", Wire.requestBlock() + Wire.literal(":path", "/again")),
        Case("an empty :path", Wire.requestBlock(path: "")),
        Case("no :scheme", Wire.literal(":method", "GET") + Wire.literal(":path", "/") + Wire.literal(":authority", "example.com")),
        Case("no :method", Wire.literal(":scheme", "https") + Wire.literal(":path", "/") + Wire.literal(":authority", "example.com")),
        Case("CR in a value", Wire.requestBlock(extra: [("x-a", "one\rtwo")])),
        Case("NUL in a value", Wire.requestBlock(extra: [("x-a", "one\u{0}")])),
        Case("a space before a value", Wire.requestBlock(extra: [("x-a", " one")])),
        Case("a content-length that is not digits", Wire.requestBlock(extra: [("content-length", "12a")])),
        Case("a space in a name", Wire.requestBlock(extra: [("x a", "1")])),
        Case("a :method with a space", Wire.requestBlock(method: "GE T")),
        Case("an unknown :scheme", Wire.literal(":method", "GET") + Wire.literal(":scheme", "gopher") + Wire.literal(":path", "/")
            + Wire.literal(":authority", "example.com")),
        Case("a Host other than :authority", Wire.requestBlock(extra: [("host", "other.example")])),
    ]

    @Test(arguments: malformedRequests)
    func aMalformedRequestIsResetAndTheConnectionGoesOn(_ c: Case) {
        let (what, block) = (c.what, c.bytes)
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.headers(stream: 1, block: block) + Wire.get(stream: 3))
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == Self.protocolError }, "\(what)")
        #expect(frames.contains { $0.type == Frame.headers && $0.stream == 3 }, "\(what)")
        #expect(server.dispatch.requests.count == 1 && !server.session.isClosing, "\(what)")
    }

    @Test func aBodyThatDoesNotMatchItsContentLengthResetsTheStream() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", extra: [("content-length", "10")], endStream: false)
            + Wire.data(stream: 1, count: 4, endStream: true)
            + Wire.get(stream: 3, method: "POST", extra: [("content-length", "3")], endStream: false) + Wire.data(stream: 3, count: 4))
        let resets = Frame.parse(server.read()).filter { $0.type == Frame.rstStream }
        #expect(resets.map(\.stream) == [1, 3] && resets.allSatisfy { $0.errorCode == Self.protocolError })
        #expect(server.dispatch.requests.isEmpty)
    }

    // MARK: - Connection errors (RFC 9113 §5.4.1): GOAWAY with the code, then close

    static let connectionErrors: [Case] = [
        Case("a frame over SETTINGS_MAX_FRAME_SIZE", Wire.data(stream: 1, count: 16_385), frameSizeError),
        Case("PING of 6 bytes", Frame(type: Frame.ping, payload: [0, 0, 0, 0, 0, 0]).bytes, frameSizeError),
        Case("SETTINGS of 5 bytes", Frame(type: Frame.settings, payload: [0, 0, 0, 0, 0]).bytes, frameSizeError),
        Case("a SETTINGS ACK with a payload", Frame(type: Frame.settings, flags: Frame.ack, payload: [0, 1, 0, 0, 0, 0]).bytes, frameSizeError),
        Case("RST_STREAM of 3 bytes", Frame(type: Frame.rstStream, stream: 1, payload: [0, 0, 0]).bytes, frameSizeError),
        Case("PRIORITY of 4 bytes", Frame(type: 0x2, stream: 1, payload: [0, 0, 0, 0]).bytes, frameSizeError),
        Case("SETTINGS_ENABLE_PUSH of 2", Wire.settings([(0x2, 2)]), protocolError),
        Case("SETTINGS_INITIAL_WINDOW_SIZE of 2^31", Wire.settings([(0x4, 0x8000_0000)]), flowControlError),
        Case("SETTINGS_MAX_FRAME_SIZE of 16,383", Wire.settings([(0x5, 16_383)]), protocolError),
        Case("SETTINGS on a stream", Frame(type: Frame.settings, stream: 1).bytes, protocolError),
        Case("SETTINGS_ENABLE_CONNECT_PROTOCOL of 2", Wire.settings([(0x8, 2)]), protocolError),
        Case("SETTINGS_NO_RFC7540_PRIORITIES of 2", Wire.settings([(0x9, 2)]), protocolError),
        Case("a SETTINGS frame of 33 entries", Wire.settings([(UInt16, UInt32)](repeating: (0x4, 100), count: 33)), enhanceYourCalm),
        Case("a connection WINDOW_UPDATE of 0", Wire.windowUpdate(0), protocolError),
        Case("a connection window past 2^31-1", Wire.windowUpdate(0x7FFF_FFFF), flowControlError),
        Case("DATA on an idle stream", Wire.data(stream: 1, count: 1), protocolError),
        Case("DATA on stream 0", Wire.data(stream: 0, count: 1), protocolError),
        Case("RST_STREAM on an idle stream", Wire.rstStream(5), protocolError),
        Case("WINDOW_UPDATE on an idle stream", Wire.windowUpdate(stream: 5, 1), protocolError),
        Case("HEADERS on an even stream", Wire.get(stream: 2), protocolError),
        Case("PUSH_PROMISE", Frame(type: 0x5, flags: Frame.endHeaders, stream: 1, payload: be32(2)).bytes, protocolError),
        Case("CONTINUATION without HEADERS", Frame(type: Frame.continuation, flags: Frame.endHeaders, stream: 1).bytes, protocolError),
        Case("a header block interrupted by PING", Wire.headers(stream: 1, block: Wire.requestBlock(), endHeaders: false) + Wire.ping(),
         protocolError),
        Case("a header block continued on another stream", Wire.headers(stream: 1, block: Wire.requestBlock(), endHeaders: false)
            + Frame(type: Frame.continuation, flags: Frame.endHeaders, stream: 3).bytes, protocolError),
        Case("an HPACK index of 0", Wire.headers(stream: 1, block: [0x80]), compressionError),
        Case("an HPACK index past the tables", Wire.headers(stream: 1, block: [0xFF, 0x7F]), compressionError),
        Case("GOAWAY on a stream", Frame(type: Frame.goAway, stream: 1, payload: [UInt8](repeating: 0, count: 8)).bytes, protocolError),
    ]

    @Test(arguments: connectionErrors)
    func aConnectionErrorSendsGoAwayWithItsCode(_ c: Case) {
        let (what, frames, code) = (c.what, c.bytes, c.code)
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + frames)
        #expect(goAwayCode(server) == code, "\(what)")
        #expect(server.session.isClosing && !server.session.wantsInput(server.output), "\(what)")
    }

    @Test func theClientsFirstFrameMustBeSettings() {
        let server = ServerUnderTest()
        server.receive(Wire.preface + Wire.ping())
        #expect(goAwayCode(server) == Self.protocolError)
        #expect(server.session.failureReason == "the client preface without SETTINGS")
    }

    // MARK: - Found in review

    @Test func aSettingsFrameOf32EntriesIsTaken() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.settings([(UInt16, UInt32)](repeating: (0x4, 100), count: 32)))
        #expect(Frame.parse(server.read()).filter { $0.type == Frame.settings && $0.flags == Frame.ack }.count == 2)
        #expect(!server.session.isClosing)
    }

    /// Frames a client sent on a stream opened after the final GOAWAY, before it saw it, are
    /// ignored like the stream; the streams in flight are answered.
    @Test func framesOnStreamsIgnoredAfterTheFinalGoAwayDoNotEndTheConnection() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false))
        server.session.drain(output: &server.output)
        server.clock.now += HTTP2Session.shutdownNoticeGrace
        server.session.deadlineReached(output: &server.output)
        _ = server.read()
        server.receive(Wire.get(stream: 3, method: "POST", endStream: false) + Wire.windowUpdate(stream: 3, 1000)
            + Wire.data(stream: 3, count: 10) + Wire.rstStream(3) + Wire.data(stream: 1, count: 10, endStream: true))
        let frames = Frame.parse(server.read())
        #expect(!frames.contains { $0.type == Frame.goAway })
        #expect(frames.contains { $0.type == Frame.headers && $0.stream == 1 })
        #expect(server.dispatch.requests.count == 1)
        #expect(server.session.failureReason == nil)
    }

    @Test func paddingAloneIsAnEmptyFrameAndCountsAgainstTheBodyLimit() {
        // DATA whose payload is its pad length byte alone carries nothing.
        let server = ServerUnderTest()
        var bytes = Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false)
        for _ in 0..<100 { bytes += Frame(type: Frame.data, flags: 0x8, stream: 1, payload: [0]).bytes }
        server.receive(bytes)
        #expect(server.session.failureReason == "empty DATA flood")
        // Padding is not body, but the 64 KiB limit counts it.
        let padded = ServerUnderTest()
        bytes = Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false)
        for _ in 0..<5 { bytes += Frame(type: Frame.data, flags: 0x8, stream: 1, payload: [255] + [UInt8](repeating: 0, count: 16_000)).bytes }
        padded.receive(bytes)
        #expect(Frame.parse(padded.read()).contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == 0x8 })
    }

    @Test func aResponseWithoutABodyIsNotHeldBehindTheConnectionsWindow() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 100_000, for: $0) })
        server.receive(Wire.clientStart + Wire.get(stream: 1) + Wire.get(stream: 3, method: "HEAD"))
        let frames = Frame.parse(server.read())
        #expect(frames.filter { $0.type == Frame.data }.reduce(0) { $0 + $1.payload.count } == 65_535)
        #expect(frames.contains { $0.type == Frame.headers && $0.stream == 3 && $0.flags & Frame.endStream != 0 })
        // Both windows open: the rest of stream 1.
        server.receive(Wire.windowUpdate(stream: 1, 100_000) + Wire.windowUpdate(100_000))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.data && $0.stream == 1 && $0.flags == Frame.endStream })
    }

    @Test func settingsAcksAndGoAwaysSpendTheControlBudget() {
        for frame in [Wire.settings(ack: true), Frame(type: Frame.goAway, payload: [UInt8](repeating: 0, count: 8)).bytes] {
            let server = ServerUnderTest()
            server.receive(Wire.clientStart + Array([[UInt8]](repeating: frame, count: 200).joined()))
            #expect(server.session.failureReason == "control frame flood")
        }
    }

    @Test func paddingThatEatsThePriorityFieldsIsAProtocolError() {
        let server = ServerUnderTest()
        // PADDED and PRIORITY: pad length 4 over a 5-byte payload leaves nothing for the five
        // bytes of priority.
        let frame = Frame(type: Frame.headers, flags: Frame.endStream | Frame.endHeaders | 0x8 | 0x20, stream: 1, payload: [4, 0, 0, 0, 0])
        server.receive(Wire.clientStart + frame.bytes)
        let goAway = Frame.parse(server.read()).first { $0.type == Frame.goAway }
        #expect(goAway?.errorCode == 1, "\(String(describing: goAway))")
    }

    @Test func dataForAStreamTheServerResetIsIgnoredForAWholeSecondWhateverClosesMeanwhile() {
        let server = ServerUnderTest()
        // Stream 1 is reset by the server (its body is over the limit as announced).
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", extra: [("content-length", "100000")], endStream: false))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.rstStream && $0.stream == 1 })
        // 40 other streams open and close before the client's DATA for stream 1 arrives.
        for i in 0..<40 { server.receive(Wire.get(stream: UInt32(3 + 2 * i))) }
        _ = server.read()
        server.clock.now += 500
        server.receive(Wire.data(stream: 1, count: 10))
        let frames = Frame.parse(server.read())
        #expect(!frames.contains { $0.type == Frame.goAway }, "\(frames.map(\.type))")
        #expect(!server.session.isClosing)
    }
}
