import Foundation
import AASAHTTP
import Testing
@testable import AASASessions

/// A dispatch that answers every request with its path, and remembers what it saw.
final class RecordingDispatch: RequestDispatch {
    var requests: [HTTPRequest] = []
    var refusals: [HTTPError] = []
    var bodySize = 0
    /// When each request began, as the session told it.
    var starts: [Int64] = []

    func respond(to request: HTTPRequest, startedMicroseconds: Int64) -> Response {
        requests.append(request)
        starts.append(startedMicroseconds)
        let text = bodySize > 0 ? String(repeating: "x", count: bodySize) : "path=\(request.path)\n"
        return .message(.ok, text, request: request)
    }

    func refuse(_ error: HTTPError, startedMicroseconds: Int64) -> Response {
        refusals.append(error)
        return .message(error.status, error.reason + "\n", request: nil)
    }

    /// What ``wantsBody(of:)`` answers, and the requests it was asked about.
    var wantsBodies = true
    var askedForBody: [HTTPRequest] = []

    func wantsBody(of request: HTTPRequest) -> Bool {
        askedForBody.append(request)
        return wantsBodies
    }
}

/// A session with its dispatch, clock and output, fed as a connection would feed it.
final class SessionDriver {
    let clock = LoopClock(now: 1_000, wallSecond: 784_111_777)
    let dispatch = RecordingDispatch()
    var configuration = HTTP1Configuration()
    lazy var session = HTTP1Session(configuration: configuration, clock: clock, dispatch: dispatch)
    var output = Output()
    /// Everything written so far.
    var written: [UInt8] = []

    init(_ configure: (inout HTTP1Configuration) -> Void = { _ in }) {
        configure(&configuration)
    }

    func feed(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { session.receive($0, output: &output) }
        drain()
    }

    func feed(_ text: String) { feed(Array(text.utf8)) }

    /// Writes the output out, as the connection does, and lets the session go on.
    func drain() {
        while !output.isEmpty {
            written.append(contentsOf: output.buffer[output.sent...])
            if let body = output.body { written.append(contentsOf: body[output.bodySent...]) }
            output.reset()
            if session.isClosing { return }
            session.resume(output: &output)
        }
    }

    var text: String { String(decoding: written, as: UTF8.self) }

    /// Status codes of the responses written, in order.
    var statuses: [Int] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().compactMap { Int($0.prefix(3)) }
    }
}

@Suite struct HTTP1SessionTests {
    /// The access log's duration starts from the loop's clock, which a test sets: no session
    /// reads the machine's time behind it.
    @Test func aRequestStartsAtTheTimeOfTheLoopsClock() {
        let driver = SessionDriver()
        driver.clock.fixedMicroseconds = 42_000_123
        driver.feed(Array("GET /a HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8))
        #expect(driver.dispatch.starts == [42_000_123])
    }

    static let pipelined = "GET /a HTTP/1.1\r\nHost: example.com\r\n\r\n"
        + "POST /b HTTP/1.1\r\nHost: example.com\r\nContent-Length: 5\r\n\r\nhello"
        + "GET /c HTTP/1.1\r\nHost: example.com\r\n\r\n"

    @Test func pipelinedRequestsAreAnsweredInOrder() {
        let d = SessionDriver()
        d.feed(Self.pipelined)
        #expect(d.dispatch.requests.map(\.path) == ["/a", "/b", "/c"])
        #expect(d.statuses == [200, 200, 200])
        let a = d.text.range(of: "path=/a")!, c = d.text.range(of: "path=/c")!
        #expect(a.lowerBound < c.lowerBound)
        #expect(!d.session.isClosing)
        #expect(d.session.isIdle)
    }

    @Test func everySplitOfTheInputGivesTheSameBytes() {
        let whole = SessionDriver()
        whole.feed(Self.pipelined)
        let bytes = Array(Self.pipelined.utf8)
        for cut in 1..<bytes.count {
            let d = SessionDriver()
            d.feed(Array(bytes[..<cut]))
            d.feed(Array(bytes[cut...]))
            #expect(d.written == whole.written, "split at \(cut)")
            #expect(d.dispatch.requests.map(\.path) == ["/a", "/b", "/c"], "split at \(cut)")
        }
    }

    @Test func byteAtATimeGivesTheSameBytes() {
        let whole = SessionDriver()
        whole.feed(Self.pipelined)
        let d = SessionDriver()
        for b in Array(Self.pipelined.utf8) { d.feed([b]) }
        #expect(d.written == whole.written)
    }

    @Test func connectionCloseEndsTheSessionWithoutLingering() {
        let d = SessionDriver()
        d.feed("GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
        #expect(d.statuses == [200])
        #expect(d.text.contains("Connection: close\r\n"))
        #expect(d.session.isClosing)
        #expect(!d.session.lingersOnClose)
    }

    @Test func requestsAfterConnectionCloseAreNotAnswered() {
        let d = SessionDriver()
        d.feed("GET /a HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(d.dispatch.requests.map(\.path) == ["/a"])
        // Unread input remains: closing must linger so the close cannot reset the response.
        #expect(d.session.isClosing)
        #expect(d.session.lingersOnClose)
    }

    @Test func http10ClosesUnlessItAsksToKeepAlive() {
        let plain = SessionDriver()
        plain.feed("GET / HTTP/1.0\r\n\r\n")
        #expect(plain.session.isClosing)
        let kept = SessionDriver()
        kept.feed("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(!kept.session.isClosing)
        #expect(kept.text.contains("Connection: keep-alive\r\n"))
    }

    @Test func aBodyIsDiscardedEvenWhenItArrivesLater() {
        let d = SessionDriver()
        d.feed("POST /a HTTP/1.1\r\nHost: example.com\r\nContent-Length: 10\r\n\r\n01234")
        d.feed("56789GET /b HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(d.dispatch.requests.map(\.path) == ["/a", "/b"])
        #expect(d.dispatch.refusals.isEmpty)
    }

    @Test func aBodyOverTheLimitIs413AndCloses() {
        let d = SessionDriver()
        d.feed("POST / HTTP/1.1\r\nHost: example.com\r\nContent-Length: 70000\r\n\r\n")
        #expect(d.statuses == [413])
        #expect(d.session.isClosing)
    }

    @Test func configuredHeaderLimitsReachTheParser() {
        let d = SessionDriver { $0.limits.maxHeaderFields = 3 }
        d.feed("GET / HTTP/1.1\r\nHost: example.com\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n")
        #expect(d.statuses == [431])
        let small = SessionDriver { $0.limits.maxRequestLine = 64 }
        small.feed("GET /" + String(repeating: "a", count: 100) + " HTTP/1.1\r\n")
        #expect(small.statuses == [414])
    }

    @Test func anIncompleteHeadGets408AtTheHeaderDeadline() {
        let d = SessionDriver { $0.headerTimeout = 500 }
        d.feed("GET / HTTP/1.1\r\nHost: exa")
        #expect(d.session.deadline == 1_500)
        d.clock.now = 1_500
        d.session.deadlineReached(output: &d.output)
        d.drain()
        #expect(d.statuses == [408])
        #expect(d.session.isClosing)
    }

    @Test func aSilentNewConnectionClosesQuietlyAtTheHeaderDeadline() {
        let d = SessionDriver { $0.headerTimeout = 500 }
        _ = d.session
        #expect(d.session.deadline == 1_500)
        d.session.deadlineReached(output: &d.output)
        #expect(d.output.isEmpty)
        #expect(d.session.isClosing)
    }

    @Test func anIdleKeepAliveConnectionHasTheIdleDeadline() {
        let d = SessionDriver { $0.idleTimeout = 2_000 }
        d.feed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        d.clock.now = 1_200
        #expect(d.session.deadline == 3_000)
        d.feed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(d.session.deadline == 3_200)
    }

    @Test func largeBodiesAreQueuedByReferenceAndHoldBackPipelinedRequests() {
        let d = SessionDriver { $0.copyLimit = 1_000 }
        d.dispatch.bodySize = 5_000
        Array("GET /a HTTP/1.1\r\nHost: example.com\r\n\r\nGET /b HTTP/1.1\r\nHost: example.com\r\n\r\n".utf8).withUnsafeBytes {
            d.session.receive($0, output: &d.output)
        }
        // The first response's body waits by reference; the second request is not answered yet.
        #expect(d.output.body?.count == 5_000)
        #expect(d.dispatch.requests.count == 1)
        d.drain()
        #expect(d.dispatch.requests.count == 2)
        #expect(d.statuses == [200, 200])
    }

    @Test func aDrainedIdleSessionStaysOpenAndItsNextAnswerClosesIt() {
        // During the drain's delay a keep-alive client may be sending its next request: it gets
        // its answer, with Connection: close, and the connection closes after it.
        let used = SessionDriver()
        used.feed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        used.session.drain(output: &used.output)
        #expect(!used.session.isClosing)
        used.feed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(used.statuses == [200, 200])
        #expect(used.text.components(separatedBy: "Connection: close\r\n").count == 2)
        #expect(used.session.isClosing)
    }

    @Test func closeIdleClosesAnIdleSessionButNotANewOne() {
        let fresh = SessionDriver()
        fresh.session.drain(output: &fresh.output)
        fresh.session.closeIdle()
        #expect(!fresh.session.isClosing)
        let used = SessionDriver()
        used.feed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        used.session.drain(output: &used.output)
        used.session.closeIdle()
        #expect(used.session.isClosing)
        // A request already on its way when draining starts is answered with Connection: close.
        fresh.feed("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(fresh.statuses == [200])
        #expect(fresh.text.contains("Connection: close\r\n"))
    }

    @Test func theDateComesFromTheClock() {
        let d = SessionDriver()
        d.feed("HEAD / HTTP/1.1\r\nHost: example.com\r\n\r\n")
        #expect(d.text.contains("Date: " + HTTPDate.format(784_111_777) + "\r\n"))
        // HEAD: the head announces the length, no body follows.
        #expect(d.text.hasSuffix("\r\n\r\n"))
        #expect(d.text.contains("Content-Length: 7\r\n")) // "path=/\n"
    }
}
