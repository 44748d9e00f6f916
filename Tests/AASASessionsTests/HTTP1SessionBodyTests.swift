import AASAHTTP
import Testing
@testable import AASASessions

/// Bodies on a session that keeps them (the admin listener's write API): `Expect:
/// 100-continue`, chunked bodies, and the deadline that covers them.
@Suite struct HTTP1SessionBodyTests {
    static func admin() -> SessionDriver { SessionDriver { $0 = $0.admin } }
    static let head = "PUT /sites/a.example/x HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer t\r\n"

    @Test func aClientThatExpects100ContinueGetsItThenItsAnswerWithTheBody() {
        let d = Self.admin()
        d.feed(Self.head + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(d.text == "HTTP/1.1 100 Continue\r\n\r\n")
        #expect(d.dispatch.requests.isEmpty && d.dispatch.askedForBody.count == 1)
        // The body in two parts: no second 100.
        d.feed("hel")
        d.feed("lo")
        #expect(d.dispatch.requests.map(\.body) == [Array("hello".utf8)])
        #expect(d.statuses == [100, 200], "\(d.text)")
        #expect(d.text.components(separatedBy: "100 Continue").count == 2)
    }

    @Test func aRequestRefusedWithoutItsBodyIsAnsweredAtOnceAndTheConnectionCloses() {
        let d = Self.admin()
        d.dispatch.wantsBodies = false
        d.feed(Self.head + "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(d.statuses == [200], "\(d.text)")
        #expect(!d.text.contains("100 Continue"))
        #expect(d.text.contains("Connection: close"))
        #expect(d.session.isClosing)
        #expect(d.dispatch.requests.count == 1 && d.dispatch.requests[0].body.isEmpty)
    }

    @Test func noContinueWhenTheBodyCameWithTheHeadOrTheClientSpeaksHTTP10() {
        let d = Self.admin()
        d.feed(Self.head + "Content-Length: 2\r\nExpect: 100-continue\r\n\r\nok")
        #expect(d.statuses == [200] && d.dispatch.askedForBody.isEmpty, "\(d.text)")
        let old = Self.admin()
        old.feed("PUT /x HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n")
        #expect(old.text.isEmpty && old.dispatch.askedForBody.isEmpty, "\(old.text)")
        old.feed("ok")
        #expect(old.dispatch.requests.map(\.body) == [Array("ok".utf8)])
    }

    @Test func aChunkedBodyIsDecodedHoweverItIsSplit() {
        let body = "4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nX-Trailer: yes\r\n\r\n"
        let whole = Self.admin()
        whole.feed(Self.head + "Transfer-Encoding: chunked\r\n\r\n" + body)
        #expect(whole.dispatch.requests.map(\.body) == [Array("abcdefg".utf8)])
        #expect(whole.statuses == [200] && whole.text.contains("Connection: close"), "\(whole.text)")
        let bytes = Self.admin()
        bytes.feed(Self.head + "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        #expect(bytes.text == "HTTP/1.1 100 Continue\r\n\r\n")
        for b in Array(body.utf8) { bytes.feed([b]) }
        #expect(bytes.dispatch.requests.map(\.body) == [Array("abcdefg".utf8)])
        #expect(bytes.statuses == [100, 200], "\(bytes.text)")
    }

    @Test func aMalformedOrOversizedChunkedBodyIsRefused() {
        for (body, status) in [("zz\r\nab\r\n0\r\n\r\n", 400), ("2\r\nabX\r\n0\r\n\r\n", 400), ("2\nab\r\n0\r\n\r\n", 400),
                               ("200000\r\n", 413), ("FFFFFFFFF\r\n", 413)] {
            let d = Self.admin()
            d.feed(Self.head + "Transfer-Encoding: chunked\r\n\r\n" + body)
            #expect(d.statuses == [status], "\(body.debugDescription): \(d.text)")
            #expect(d.dispatch.requests.isEmpty && d.session.isClosing)
        }
    }

    @Test func aBodyThatDoesNotArriveInTimeIsA408ThatSaysBody() {
        let d = Self.admin()
        d.feed(Self.head + "Content-Length: 10\r\n\r\nabc")
        d.clock.now += d.configuration.headerTimeout + 1
        d.session.deadlineReached(output: &d.output)
        d.drain()
        #expect(d.statuses == [408])
        #expect(d.text.contains("request body not complete in time"), "\(d.text)")
        let slowHead = Self.admin()
        slowHead.feed("PUT /x HTTP/1.1\r\n")
        slowHead.clock.now += slowHead.configuration.headerTimeout + 1
        slowHead.session.deadlineReached(output: &slowHead.output)
        slowHead.drain()
        #expect(slowHead.text.contains("request head not complete in time"), "\(slowHead.text)")
    }
}
