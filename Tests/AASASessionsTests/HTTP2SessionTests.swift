import AASAHTTP
import Testing
@testable import AASASessions

private let enhanceYourCalm: UInt32 = 0xB
private let cancel: UInt32 = 0x8

@Suite struct HTTP2SessionTests {
    // MARK: - Requests and responses

    @Test func theServerPrefaceAnnouncesTheLimits() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart)
        let frames = Frame.parse(server.read())
        let settings = frames.first
        #expect(settings?.type == Frame.settings && settings?.flags == 0)
        var values: [UInt16: UInt32] = [:]
        if let payload = settings?.payload {
            for i in stride(from: 0, to: payload.count, by: 6) {
                values[UInt16(payload[i]) << 8 | UInt16(payload[i + 1])] = readBE32(payload, at: i + 2)
            }
        }
        #expect(values[0x3] == UInt32(100))  // MAX_CONCURRENT_STREAMS
        #expect(values[0x6] == UInt32(16 * 1024))  // MAX_HEADER_LIST_SIZE
        #expect(values[0x4] == UInt32(65_535))  // INITIAL_WINDOW_SIZE
        #expect(frames.contains { $0.type == Frame.settings && $0.flags == Frame.ack })
        #expect(!server.session.isClosing && server.session.wantsInput(server.output))
    }

    @Test func aGetIsAnsweredWithThePreparedFieldsAndTheExactBody() {
        let dispatch = FakeDispatch { siteResponse(size: 100 * 1024, for: $0) }
        let server = ServerUnderTest(dispatch: dispatch)
        let client = H2Client()
        let stream = client.request(path: "/.well-known/apple-app-site-association?x=1", authority: "Example.COM.:8443",
                                    extra: [("user-agent", "AASA-Bot/1.0.0"), ("if-none-match", "\"v0\"")])
        client.talk(to: server)

        let request = dispatch.requests.first
        #expect(dispatch.requests.count == 1)
        #expect(request?.method == .get)
        #expect(request?.host == "example.com")
        #expect(request?.path == "/.well-known/apple-app-site-association")
        #expect(request?.target == "/.well-known/apple-app-site-association?x=1")
        #expect(request?.version == .http2)
        #expect(request?.keepAlive == true)
        #expect(request?.userAgent == "AASA-Bot/1.0.0")
        #expect(request?.ifNoneMatch == "\"v0\"")

        #expect(client.status(stream) == "200")
        #expect(client.field("content-type", stream) == "application/json")
        #expect(client.field("etag", stream) == "\"v1\"")
        #expect(client.field("content-length", stream) == "102400")
        #expect(client.field("date", stream) == String(decoding: server.clock.date, as: UTF8.self))
        #expect(client.bodies[stream] == siteResponse(size: 100 * 1024, for: request!).body)
        #expect(client.closed[stream] == 0)
        #expect(server.session.isIdle && server.session.openStreams == 0)
    }

    @Test func aHeadIsAnsweredWithoutData() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 5000, for: $0) })
        let client = H2Client()
        let stream = client.request(method: "HEAD")
        client.talk(to: server)
        #expect(client.status(stream) == "200")
        #expect(client.field("content-length", stream) == "5000")
        #expect(client.dataFrames[stream] == nil)
        #expect(client.closed[stream] == 0)
    }

    @Test func aConditionalHitIsA304WithoutData() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 5000, for: $0, status: .notModified) })
        let client = H2Client()
        let stream = client.request(extra: [("if-none-match", "\"v1\"")])
        client.talk(to: server)
        #expect(client.status(stream) == "304")
        #expect(client.dataFrames[stream] == nil)
        #expect(server.dispatch.requests.first?.ifNoneMatch == "\"v1\"")
    }

    @Test func twoConcurrentStreamsGetTheirOwnResponses() {
        let server = ServerUnderTest(dispatch: FakeDispatch { request in
            Response.message(.ok, "you asked for \(request.path)\n", request: request)
        })
        let client = H2Client()
        let first = client.request(path: "/one")
        let second = client.request(path: "/two")
        client.talk(to: server)
        #expect(server.dispatch.requests.map(\.path) == ["/one", "/two"])
        #expect(client.bodies[first].map { String(decoding: $0, as: UTF8.self) } == "you asked for /one\n")
        #expect(client.bodies[second].map { String(decoding: $0, as: UTF8.self) } == "you asked for /two\n")
    }

    /// The session remembers the last `:authority`, Host and User-Agent it made: streams that
    /// change them, go back, or switch between `:authority` and Host each get their own.
    @Test func eachStreamGetsItsOwnHostAndAgentWhenTheyChangeAndComeBack() {
        let server = ServerUnderTest()
        let client = H2Client()
        let sent: [(authority: String?, host: String?, agent: String)] = [
            ("example.com", nil, "one"), ("example.com", nil, "one"), ("WWW.example.com:443", nil, "two"),
            ("example.com", nil, "one"), (nil, "Other.example.net", "two"), ("example.com.", nil, "three"),
            ("example.com:https", nil, "one"),
        ]
        for (authority, host, agent) in sent {
            _ = client.request(authority: authority, extra: (host.map { [("host", $0)] } ?? []) + [("user-agent", agent)])
        }
        client.talk(to: server)
        #expect(server.dispatch.requests.map(\.host) == ["example.com", "example.com", "www.example.com", "example.com",
                                                          "other.example.net", "example.com"])
        #expect(server.dispatch.requests.map(\.userAgent) == ["one", "one", "two", "one", "two", "three"])
        #expect(server.dispatch.refusals.map(\.status) == [.badRequest], "the invalid :authority is refused each time")
    }

    @Test func anInvalidAuthorityGetsTheSame400AsAnInvalidHost() {
        let server = ServerUnderTest()
        let client = H2Client()
        let stream = client.request(authority: "example.com:https")
        client.talk(to: server)
        #expect(client.status(stream) == "400")
        #expect(server.dispatch.requests.isEmpty)
        #expect(server.dispatch.refusals.map(\.status) == [.badRequest])
    }

    @Test func aRequestWithoutAuthorityOrHostIsMalformed() {
        // A malformed request (RFC 9113 §8.1.1, §8.3.1): the stream is reset with
        // PROTOCOL_ERROR before it reaches the handlers, where HTTP/1.1 answers 400.
        let server = ServerUnderTest()
        let client = H2Client()
        let stream = client.request(authority: nil)
        client.talk(to: server)
        #expect(client.status(stream) == nil)
        #expect(client.closed[stream] == 1)
        #expect(server.dispatch.requests.isEmpty && server.dispatch.refusals.isEmpty)
        #expect(!server.session.isClosing)
    }

    @Test func theHostFieldStandsInForAMissingAuthority() {
        let server = ServerUnderTest()
        let client = H2Client()
        let stream = client.request(authority: nil, extra: [("host", "WWW.Example.com")])
        client.talk(to: server)
        #expect(client.status(stream) == "200")
        #expect(server.dispatch.requests.first?.host == "www.example.com")
    }

    @Test func aasaCheckMarksOurOwnCheckAsOnHTTP1AndTheNextRequestStartsAfresh() {
        let server = ServerUnderTest()
        let client = H2Client()
        let checked = client.request(extra: [("aasa-check", "1"), ("user-agent", "Checker")])
        client.talk(to: server)
        let next = client.request(method: "HEAD", path: "/other?x=1", authority: nil, extra: [("host", "www.example.com")])
        client.talk(to: server)
        #expect(client.status(checked) == "200" && client.status(next) == "200")
        let requests = server.dispatch.requests
        #expect(requests.map(\.isOwnCheck) == [true, false])
        #expect(requests.map(\.userAgent) == ["Checker", nil])
        #expect(requests.last?.method == .head && requests.last?.host == "www.example.com")
        #expect(requests.last?.path == "/other" && requests.last?.target == "/other?x=1")
    }

    @Test func aSmallBodyIsReadAndDiscardedBeforeTheAnswer() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false) + Wire.data(stream: 1, count: 1000))
        #expect(server.dispatch.requests.isEmpty)
        server.receive(Wire.data(stream: 1, count: 1000, endStream: true))
        #expect(server.dispatch.requests.first?.method == .other("POST"))
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.headers && $0.stream == 1 })
    }

    // MARK: - Limits

    @Test func aBodyOver64KiBResetsTheStream() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false)
        for _ in 0..<5 { bytes += Wire.data(stream: 1, count: 16 * 1024) }
        server.receive(bytes)
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == cancel })
        #expect(!frames.contains { $0.type == Frame.headers })
        #expect(server.dispatch.requests.isEmpty)
        // The connection itself carries on.
        server.receive(Wire.get(stream: 3))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.headers && $0.stream == 3 })
        #expect(!server.session.isClosing)
    }

    @Test func aDeclaredBodyOver64KiBResetsTheStreamAtOnce() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", extra: [("content-length", "100000")], endStream: false))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.rstStream && $0.stream == 1 })
        #expect(server.dispatch.requests.isEmpty)
    }

    @Test func aHeaderBlockOver16KiBInContinuationFramesClosesTheConnection() {
        let server = ServerUnderTest()
        var block = Wire.requestBlock()
        for i in 0..<5 { block += Wire.literal("x-filler-\(i)", String(repeating: "a", count: 4000)) }
        let cut = 10_000
        let bytes = Wire.clientStart + Wire.headers(stream: 1, block: Array(block[..<cut]), endHeaders: false)
            + Frame(type: Frame.continuation, flags: Frame.endHeaders, stream: 1, payload: Array(block[cut...])).bytes
        server.receive(bytes)
        let frames = Frame.parse(server.read())
        #expect(frames.last?.type == Frame.goAway && frames.last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing && !server.session.wantsInput(server.output))
        #expect(server.dispatch.requests.isEmpty)
    }

    @Test func aHeaderListOver16KiBOnceDecodedClosesTheConnection() {
        // 200 bytes on the wire: one 4 KiB field added to the HPACK table, then named five
        // times by its index (RFC 7541 §6.1), which decodes to 20 KiB.
        let server = ServerUnderTest()
        let block = Wire.requestBlock() + Wire.literal("x-big", String(repeating: "b", count: 4000), indexed: true)
            + [UInt8](repeating: 0x80 | 62, count: 4)
        server.receive(Wire.clientStart + Wire.headers(stream: 1, block: block))
        let frames = Frame.parse(server.read())
        #expect(frames.last?.type == Frame.goAway && frames.last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing)
        #expect(server.session.failureReason == "header list over the limit")
    }

    @Test func aHeaderBlockThatNeverEndsClosesTheConnection() {
        var configuration = HTTP2Configuration()
        configuration.maxContinuationFrames = 3
        let server = ServerUnderTest(configuration: configuration)
        var bytes = Wire.clientStart + Wire.headers(stream: 1, block: Wire.literal(":method", "GET"), endHeaders: false)
        for _ in 0..<10 { bytes += Frame(type: Frame.continuation, stream: 1, payload: Wire.literal("x-a", "b")).bytes }
        server.receive(bytes)
        #expect(Frame.parse(server.read()).last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing)
        #expect(server.session.failureReason == "too many CONTINUATION frames")
    }

    @Test func emptyContinuationFramesAreAFloodEvenUnderTheFrameCount() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart + Wire.headers(stream: 1, block: Wire.literal(":method", "GET"), endHeaders: false)
        for _ in 0..<100 { bytes += Frame(type: Frame.continuation, stream: 1).bytes }
        server.receive(bytes)
        #expect(Frame.parse(server.read()).last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing)
    }

    @Test func moreThan100ConcurrentStreamsAreRefused() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart
        for i in 0..<101 { bytes += Wire.get(stream: UInt32(1 + 2 * i), endStream: false) }
        server.receive(bytes)
        #expect(server.session.openStreams == 100)
        // Before the client acknowledged our SETTINGS, the stream is refused.
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.rstStream && $0.stream == 201 && $0.errorCode == 0x7 })  // REFUSED_STREAM
        #expect(!server.session.isClosing)
    }

    @Test func afterOurSettingsAreAcknowledgedTooManyStreamsEndTheConnection() {
        // The 101st stream is then a connection error (PROTOCOL_ERROR, RFC 9113 §5.1.2).
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.settings(ack: true))
        var bytes: [UInt8] = []
        for i in 0..<101 { bytes += Wire.get(stream: UInt32(1 + 2 * i), endStream: false) }
        server.receive(bytes)
        let frames = Frame.parse(server.read())
        #expect(frames.last?.type == Frame.goAway && frames.last?.errorCode == 0x1)
        #expect(server.session.isClosing)
    }

    // MARK: - Attacks

    @Test func rapidResetGetsGoAwayEnhanceYourCalm() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart
        for i in 0..<500 {
            let id = UInt32(1 + 2 * i)
            bytes += Wire.get(stream: id) + Wire.rstStream(id)
        }
        server.receive(bytes)
        let frames = Frame.parse(server.read())
        #expect(frames.last?.type == Frame.goAway && frames.last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing)
        #expect(server.session.failureReason == "rapid reset")
        // Work stops where the budget ran out, not at the end of the input.
        #expect(server.dispatch.requests.count <= 101)
    }

    @Test func resetsSpreadOverTimeAreAllowed() {
        var configuration = HTTP2Configuration()
        configuration.resetLimit = FloodLimit(burst: 5, perSecond: 10)
        let server = ServerUnderTest(configuration: configuration)
        server.receive(Wire.clientStart)
        for i in 0..<50 {
            server.clock.now += 200
            let id = UInt32(1 + 2 * i)
            server.receive(Wire.get(stream: id, endStream: false) + Wire.rstStream(id))
        }
        #expect(!server.session.isClosing)
        #expect(!Frame.parse(server.read()).contains { $0.type == Frame.goAway })
    }

    @Test func aSettingsFloodGetsGoAway() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart
        for _ in 0..<1000 { bytes += Wire.settings() }
        server.receive(bytes)
        let frames = Frame.parse(server.read())
        #expect(frames.last?.type == Frame.goAway && frames.last?.errorCode == enhanceYourCalm)
        #expect(server.session.failureReason == "control frame flood")
        // Each SETTINGS processed is acknowledged; it stopped at the budget.
        #expect(frames.filter { $0.type == Frame.settings && $0.flags == Frame.ack }.count <= 101)
    }

    @Test func aPingFloodGetsGoAway() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart
        for i in 0..<1000 { bytes += Wire.ping(UInt8(i & 0xFF)) }
        server.receive(bytes)
        #expect(Frame.parse(server.read()).last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing)
    }

    @Test func anAckFloodFromAClientThatDoesNotReadClosesTheConnection() {
        // The frame budget turned off: the second guard, 1000 SETTINGS/PING ACKs left unread
        // (as libnghttp2's own limit), applies while the ACKs cannot be written out.
        var configuration = HTTP2Configuration()
        configuration.controlFrameLimit = FloodLimit(burst: 1_000_000, perSecond: 1)
        configuration.outputHighWaterMark = 64
        let server = ServerUnderTest(configuration: configuration)
        var bytes = Wire.clientStart
        for _ in 0..<1100 { bytes += Wire.ping() }
        server.receive(bytes)
        #expect(server.session.isClosing)
        #expect(server.session.failureReason == "ACKs not read")
        let frames = Frame.parse(server.read())
        #expect(frames.last?.errorCode == enhanceYourCalm)
        // The client's first SETTINGS and 999 PINGs: 1000 ACKs, then GOAWAY instead of the next.
        #expect(frames.filter { $0.flags == Frame.ack && ($0.type == Frame.ping || $0.type == Frame.settings) }.count == 1000)
    }

    @Test func withoutTheBudgetsFloodsFromAClientThatReadsGoThrough() {
        // Why the budgets exist: with them lifted, the protocol alone answers every SETTINGS and
        // PING and accepts any number of empty frames, as long as the client reads the ACKs.
        var configuration = HTTP2Configuration()
        let unlimited = FloodLimit(burst: 1_000_000, perSecond: 1)
        configuration.controlFrameLimit = unlimited
        configuration.emptyFrameLimit = unlimited
        configuration.windowUpdateLimit = unlimited
        let server = ServerUnderTest(configuration: configuration)
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false))
        var acks = 0
        for _ in 0..<50 {
            var bytes: [UInt8] = []
            for _ in 0..<100 { bytes += Wire.settings() + Wire.ping() + Wire.data(stream: 1, count: 0) + Wire.windowUpdate(1) }
            server.receive(bytes)
            acks += Frame.parse(server.read()).filter { $0.flags == Frame.ack }.count
        }
        #expect(acks == 10_000 + 1)  // and the preface's SETTINGS
        #expect(!server.session.isClosing)
    }

    @Test func emptyDataFramesAreAFlood() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false)
        for _ in 0..<100 { bytes += Wire.data(stream: 1, count: 0) }
        server.receive(bytes)
        #expect(Frame.parse(server.read()).last?.errorCode == enhanceYourCalm)
        #expect(server.session.failureReason == "empty DATA flood")
    }

    @Test func emptyHeadersFramesAreAFlood() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart
        for i in 0..<100 { bytes += Wire.headers(stream: UInt32(1 + 2 * i), block: []) }
        server.receive(bytes)
        #expect(Frame.parse(server.read()).last?.errorCode == enhanceYourCalm)
        #expect(server.session.isClosing)
    }

    @Test func aWindowUpdateFloodGetsGoAway() {
        let server = ServerUnderTest()
        var bytes = Wire.clientStart
        for _ in 0..<2000 { bytes += Wire.windowUpdate(1) }
        server.receive(bytes)
        #expect(Frame.parse(server.read()).last?.errorCode == enhanceYourCalm)
        #expect(server.session.failureReason == "WINDOW_UPDATE flood")
    }

    @Test func aClientThatNeverReadsCannotMakeTheOutputGrowPastTheMark() {
        let dispatch = FakeDispatch { siteResponse(size: 100 * 1024, for: $0) }
        let server = ServerUnderTest(dispatch: dispatch)
        let mark = server.session.configuration.outputHighWaterMark
        // Windows wide open (RFC 9113 §6.9.2), then 50 requests for 100 KiB each: 5 MB to send.
        var bytes = Wire.clientStart + Wire.settings([(0x4, 0x7FFF_FFFF)]) + Wire.windowUpdate(0x7FFF_FFFF - 65_535)
        for i in 0..<50 { bytes += Wire.get(stream: UInt32(1 + 2 * i)) }
        server.receive(bytes)
        #expect(dispatch.requests.count == 50)
        // One frame may cross the mark: the check is made before each frame is produced.
        #expect(server.output.pending <= mark + 16 * 1024 + 9)
        #expect(!server.session.wantsInput(server.output))
        // Reading it all delivers every body whole.
        var received: [UInt32: Int] = [:]
        var reads = 0
        while true {
            let chunk = server.read(all: false)
            if chunk.isEmpty { break }
            reads += 1
            #expect(server.output.pending <= mark + 16 * 1024 + 9)
            for frame in Frame.parse(chunk) where frame.type == Frame.data { received[frame.stream, default: 0] += frame.payload.count }
        }
        #expect(reads > 10)
        #expect(received.count == 50 && received.values.allSatisfy { $0 == 100 * 1024 })
        #expect(server.session.wantsInput(server.output) && server.session.isIdle)
    }

    // MARK: - Timeouts and shutdown

    @Test func anIdleConnectionGetsGoAwayAfterTheTimeout() {
        let server = ServerUnderTest()
        let client = H2Client()
        client.request()
        client.talk(to: server)
        let deadline = server.session.deadline
        #expect(deadline == server.clock.now + 60_000)
        server.clock.now += 30_000
        server.session.deadlineReached(output: &server.output)
        #expect(!server.session.isClosing)
        server.clock.now = deadline!
        server.session.deadlineReached(output: &server.output)
        client.receive(server.read())
        #expect(client.goAway?.code == 0)
        #expect(client.goAway?.lastStream == 1)
        #expect(server.session.isClosing)
    }

    @Test func aRequestNotCompleteWithinTenSecondsIsResetWhateverKeepsTheConnectionBusy() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false) + Wire.get(stream: 3))
        _ = server.read()
        // A PING every 2 s keeps the connection busy; the body of stream 1 never ends.
        for _ in 0..<4 {
            server.clock.now += 2_000
            server.receive(Wire.ping())
            if let deadline = server.session.deadline, server.clock.now >= deadline { server.session.deadlineReached(output: &server.output) }
            _ = server.read()
        }
        #expect(server.session.deadline.map { $0 == Int64(1_010_000) } == true, "the request’s own deadline: \(String(describing: server.session.deadline))")
        server.clock.now = 1_000_000 + 10_000
        server.session.deadlineReached(output: &server.output)
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == 8 }, "\(frames)")
        #expect(!frames.contains { $0.type == Frame.goAway })
        #expect(!server.session.isClosing)
        // The connection goes on: a new request is served.
        server.receive(Wire.get(stream: 5))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.headers && $0.stream == 5 })
    }

    @Test func aResponseWaitingOnAZeroWindowForSixtySecondsIsReset() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 2_000, for: $0) })
        // SETTINGS_INITIAL_WINDOW_SIZE 0: the stream's window is closed.
        server.receive(Wire.preface + Wire.settings([(0x4, 0)]) + Wire.get(stream: 1))
        let first = Frame.parse(server.read())
        #expect(first.contains { $0.type == Frame.headers && $0.stream == 1 })
        #expect(!first.contains { $0.type == Frame.data })
        for _ in 0..<5 {
            server.clock.now += 10_000
            server.receive(Wire.ping())
            _ = server.read()
        }
        #expect(server.session.deadline.map { $0 == Int64(1_060_000) } == true, "\(String(describing: server.session.deadline))")
        server.clock.now = 1_000_000 + 60_000
        server.session.deadlineReached(output: &server.output)
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == 8 }, "\(frames)")
        #expect(server.session.openStreams == 0)
    }

    @Test func aStreamBlockedAgainGetsAFreshSixtySeconds() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 2_000, for: $0) })
        server.receive(Wire.preface + Wire.settings([(0x4, 0)]) + Wire.get(stream: 1))
        _ = server.read()
        // 30 s on a zero window, then 100 bytes of window: it sends them and is blocked again.
        server.clock.now += 30_000
        server.receive(Frame(type: Frame.windowUpdate, stream: 1, payload: be32(100)).bytes)
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.data && $0.payload.count == 100 })
        // At the first wait's end the stream has waited 30 s only: not reset.
        server.clock.now = 1_000_000 + 60_000
        server.session.deadlineReached(output: &server.output)
        #expect(!Frame.parse(server.read()).contains { $0.type == Frame.rstStream })
        #expect(server.session.openStreams == 1)
        #expect(server.session.deadline.map { $0 == Int64(1_090_000) } == true, "\(String(describing: server.session.deadline))")
        server.clock.now = 1_000_000 + 90_000
        server.session.deadlineReached(output: &server.output)
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.rstStream && $0.stream == 1 && $0.errorCode == 8 })
    }

    @Test func pingsDoNotKeepAnIdleConnectionOpen() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart)
        let deadline = server.session.deadline
        server.clock.now += 50_000
        server.receive(Wire.ping())
        #expect(server.session.deadline == deadline)
    }

    @Test func drainSendsGoAwayThenClosesOnceInFlightStreamsFinish() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart + Wire.get(stream: 1, method: "POST", endStream: false))
        _ = server.read()
        server.session.drain(output: &server.output)
        // First the shutdown notice (the largest stream id): a request on its way is still served.
        let notice = Frame.parse(server.read()).first { $0.type == Frame.goAway }
        #expect(notice?.lastStreamID == 0x7FFF_FFFF && notice?.errorCode == 0)
        server.receive(Wire.get(stream: 3))
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.headers && $0.stream == 3 })
        // A round trip later, the real last stream id.
        #expect(server.session.deadline == server.clock.now + HTTP2Session.shutdownNoticeGrace)
        server.clock.now += HTTP2Session.shutdownNoticeGrace
        server.session.deadlineReached(output: &server.output)
        let goAway = Frame.parse(server.read()).first { $0.type == Frame.goAway }
        #expect(goAway?.lastStreamID == 3 && goAway?.errorCode == 0)
        #expect(!server.session.isClosing)
        // A stream opened after the GOAWAY is not served; the one in flight is.
        server.receive(Wire.get(stream: 5) + Wire.data(stream: 1, count: 10, endStream: true))
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.headers && $0.stream == 1 })
        #expect(!frames.contains { $0.stream == 5 && $0.type == Frame.headers })
        #expect(server.dispatch.requests.count == 2)
        #expect(server.session.isClosing)
    }

    @Test func drainWithNothingInFlightClosesAfterTheFinalGoAway() {
        let server = ServerUnderTest()
        server.receive(Wire.clientStart)
        _ = server.read()
        server.session.drain(output: &server.output)
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.goAway })
        server.clock.now += HTTP2Session.shutdownNoticeGrace
        server.session.deadlineReached(output: &server.output)
        #expect(Frame.parse(server.read()).contains { $0.type == Frame.goAway && $0.lastStreamID == 0 })
        #expect(server.session.isClosing)
    }

    @Test func garbageInsteadOfThePrefaceClosesTheConnection() {
        let server = ServerUnderTest()
        server.receive(Array("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8))
        #expect(server.session.isClosing)
        #expect(Frame.parse(server.read()).last?.type == Frame.goAway)
    }

    @Test func aPeerThatClosedItsSideGetsItsAnswersThenTheConnectionCloses() {
        let server = ServerUnderTest(dispatch: FakeDispatch { siteResponse(size: 1000, for: $0) })
        server.receive(Wire.clientStart + Wire.get(stream: 1))
        server.session.peerClosed(output: &server.output)
        #expect(!server.session.wantsInput(server.output))
        let frames = Frame.parse(server.read())
        #expect(frames.contains { $0.type == Frame.data && $0.stream == 1 && $0.flags & Frame.endStream != 0 })
        #expect(server.session.isClosing)
    }
}
