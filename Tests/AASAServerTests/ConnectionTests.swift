import AASAHTTP
import Foundation
import TestCertificates
import Testing
@testable import AASAServer
@testable import AASATransport
@testable import AASASessions

/// A byte stream in memory for ``Connection``: what the client sent waits in `incoming`; what
/// the connection wrote lands in `written`; the TLS handshake answers from a script.
final class FakeWire {
    var incoming: [UInt8] = []
    var peerClosed = false
    var written: [UInt8] = []
    /// Writes answer `.wantWrite` while set.
    var writeBlocked = false
    /// When set, each write takes at most what is left of it, then the socket is full.
    var writeBudget: Int?
    var handshakeScript: [ServerHandshake] = []
    var tlsStarted = false
    var tlsDropped = 0
    var closeNotifies = 0
    var shutWrite = false
    /// The TLS stream keeps its buffers between uses (a busy connection).
    var keepsBuffers = false
    var buffersKept = 0

    var writtenText: String { String(decoding: written, as: UTF8.self) }
}

struct FakeIO: ConnectionIO {
    let wire: FakeWire

    mutating func peek(into buffer: UnsafeMutableRawBufferPointer) -> Peek {
        guard !wire.incoming.isEmpty else { return wire.peerClosed ? .closed : .wouldBlock }
        let n = min(buffer.count, wire.incoming.count)
        buffer.copyBytes(from: wire.incoming[0..<n])
        return .bytes(n)
    }

    mutating func discard(_ count: Int) { wire.incoming.removeFirst(min(count, wire.incoming.count)) }

    mutating func read(into buffer: UnsafeMutableRawPointer, count: Int) -> TLSStream.Progress {
        guard !wire.incoming.isEmpty else { return wire.peerClosed ? .closed : .wantRead }
        let n = min(count, wire.incoming.count)
        wire.incoming.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress!, byteCount: n) }
        wire.incoming.removeFirst(n)
        return .done(n)
    }

    mutating func write(_ bytes: UnsafeRawPointer, count: Int) -> TLSStream.Progress {
        if wire.writeBlocked { return .wantWrite }
        var count = count
        if let budget = wire.writeBudget {
            guard budget > 0 else { return .wantWrite }
            count = min(count, budget)
            wire.writeBudget = budget - count
        }
        wire.written.append(contentsOf: UnsafeRawBufferPointer(start: bytes, count: count))
        return .done(count)
    }

    var hasBufferedInput: Bool { false }
    var hasPendingOutput: Bool { false }
    mutating func flushPendingOutput() -> TLSStream.Progress { .done(0) }
    var hasBuffers: Bool { wire.tlsStarted && wire.tlsDropped == 0 }
    mutating func keepBuffers(_ keep: Bool) {
        if keep, !wire.keepsBuffers { wire.buffersKept += 1 }
        wire.keepsBuffers = keep
    }

    mutating func startTLS(certificates: CertificateStore, settings: TLSServerSettings) -> Bool {
        wire.tlsStarted = true
        return true
    }

    /// One scripted step; the TLS records that arrived are taken, as OpenSSL would.
    mutating func handshake() -> ServerHandshake {
        wire.incoming.removeAll()
        return wire.handshakeScript.isEmpty ? .failed : wire.handshakeScript.removeFirst()
    }

    mutating func dropTLS() { wire.tlsDropped += 1 }
    mutating func sendCloseNotify() { wire.closeNotifies += 1 }
    mutating func shutdownWrite() { wire.shutWrite = true }

    mutating func dropIncoming(scratch: UnsafeMutableRawBufferPointer) -> Bool {
        wire.incoming.removeAll()
        return !wire.peerClosed
    }
}

/// A connection over a ``FakeWire``, with a loop context of its own on a fake clock.
final class ConnectionRig {
    let wire = FakeWire()
    let context: LoopContext
    let connection: Connection<FakeIO>

    init(listener: ListenerKind, proxyProtocol: Bool = false, http2: Bool = false) {
        let builder = SnapshotBuilder(configDirectory: NSTemporaryDirectory() + "aasa-connection-tests-none",
                                      certsDirectory: TestPKI.certsDirectory, defaultCertificate: nil, cacheControl: "no-cache",
                                      usesTLS: true, log: Log(minimum: .error))
        let state = ServerState(snapshot: builder.build(previous: nil), loops: 1, maxConnections: 100, shutdownGraceMilliseconds: 1_000)
        var transport = TransportConfiguration()
        transport.proxyProtocol = proxyProtocol
        context = LoopContext(state: state, counters: state.loopCounters[0], transport: transport, http1: HTTP1Configuration(),
                              http2: http2 ? HTTP2Configuration() : nil, log: Log(minimum: .error), accessLogFormat: .text)
        context.clock.now = 1_000
        connection = Connection(fd: -1, io: FakeIO(wire: wire), serial: 1, listener: listener, client: "198.51.100.1", loop: context)
    }

    func arrive(_ bytes: [UInt8]) -> Connection<FakeIO>.Action {
        wire.incoming += bytes
        return connection.handle(.ready(Epoll.readable))
    }

    func arrive(_ text: String) -> Connection<FakeIO>.Action { arrive(Array(text.utf8)) }
}

private let request = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\n\r\n"

/// The connection's stages driven by events over a fake byte stream, on a fake clock: no socket.
@Suite struct ConnectionTests {
    @Test func aPlainRequestIsAnsweredAndTheConnectionWaitsForTheNext() {
        let rig = ConnectionRig(listener: .http)
        // A new connection has the header time-out for its first request.
        #expect(rig.connection.handle(.start) == .wait(events: Epoll.readable, until: 1_000 + HTTP1Configuration().headerTimeout))
        let action = rig.arrive(request)
        // No site is configured: 404 from the association-file handler, as HTTP/1.1.
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 404 "))
        #expect(action == .wait(events: Epoll.readable, until: 1_000 + HTTP1Configuration().idleTimeout))
    }

    /// The output buffer is the loop's: lent while a connection answers, given back once all is
    /// written, kept (with its bytes) while the socket takes no more.
    @Test func anIdleConnectionHoldsNoOutputBufferAndABlockedOneKeepsItsBytes() {
        let rig = ConnectionRig(listener: .http)
        _ = rig.connection.handle(.start)
        _ = rig.arrive(request)
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 404 "))
        #expect(rig.connection.heldOutputCapacity == 0)
        #expect(rig.context.spareOutput.capacity > 0)

        rig.wire.writeBlocked = true
        let before = rig.wire.written.count
        guard case .wait(let events, _) = rig.arrive(request) else {
            Issue.record("the connection closed")
            return
        }
        #expect(events & Epoll.writable != 0)
        #expect(rig.wire.written.count == before)
        #expect(rig.connection.heldOutputCapacity > 0, "the unsent response stays with the connection")
        rig.wire.writeBlocked = false
        _ = rig.connection.handle(.ready(Epoll.writable))
        #expect(rig.wire.writtenText.components(separatedBy: "HTTP/1.1 404 ").count == 3)
        #expect(rig.connection.heldOutputCapacity == 0)
    }

    @Test func aProxyHeaderSplitAtEveryByteGivesTheClientAddress() {
        let header = Array("PROXY TCP4 192.0.2.7 203.0.113.9 51000 443\r\n".utf8)
        for split in 1..<header.count {
            let rig = ConnectionRig(listener: .http, proxyProtocol: true)
            #expect(rig.connection.handle(.start) == .wait(events: Epoll.readable, until: 1_000 + TransportConfiguration().handshakeTimeout))
            #expect(rig.arrive(Array(header[0..<split])) == .wait(events: Epoll.readable, until: 1_000 + TransportConfiguration().handshakeTimeout),
                    "split at \(split)")
            _ = rig.arrive(Array(header[split...]) + Array(request.utf8))
            #expect(rig.connection.facts.client == "192.0.2.7", "split at \(split)")
            #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 404 "), "split at \(split)")
        }
    }

    @Test func aBrokenProxyHeaderCloses() {
        let rig = ConnectionRig(listener: .http, proxyProtocol: true)
        #expect(rig.arrive("GET / HTTP/1.1\r\n\r\n") == .close)
        #expect(rig.wire.written.isEmpty)
    }

    @Test func noTLSStateIsMadeUntilTheClientHelloArrives() {
        let rig = ConnectionRig(listener: .https)
        #expect(rig.connection.handle(.start) == .wait(events: Epoll.readable, until: 1_000 + TransportConfiguration().handshakeTimeout))
        #expect(!rig.wire.tlsStarted)
        rig.wire.handshakeScript = [.wantRead]
        #expect(rig.arrive([0x16, 0x03, 0x01]) == .wait(events: Epoll.readable, until: 1_000 + TransportConfiguration().handshakeTimeout))
        #expect(rig.wire.tlsStarted)
    }

    @Test func theHandshakeWaitsForWhatTLSAsksThenServesOverALPN() {
        let rig = ConnectionRig(listener: .https)
        rig.wire.handshakeScript = [.wantWrite, .wantRead, .established(alpn: "http/1.1", certificate: nil)]
        let deadline = 1_000 + TransportConfiguration().handshakeTimeout
        #expect(rig.arrive([0x16]) == .wait(events: Epoll.writable, until: deadline))
        #expect(rig.connection.handle(.ready(Epoll.writable)) == .wait(events: Epoll.readable, until: deadline))
        _ = rig.arrive([0x16])
        #expect(rig.connection.stage == .open)
        _ = rig.arrive(request)
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 "))
    }

    /// OpenSSL gives a TLS connection's buffers back after each record; a busy connection (idle
    /// twice within a moment) keeps them until idle for that moment, each request moving it on.
    @Test func aBusyTLSConnectionKeepsItsBuffersUntilIdleForAMoment() {
        let rig = ConnectionRig(listener: .https)
        rig.wire.handshakeScript = [.established(alpn: "http/1.1", certificate: nil)]
        _ = rig.arrive([0x16])
        let delay = TransportConfiguration().idleBufferRelease, idle = HTTP1Configuration().idleTimeout
        rig.context.clock.now += delay
        // A request a while after the handshake: buffers given back after it, as after each record.
        #expect(rig.arrive(request) == .wait(events: Epoll.readable, until: rig.context.clock.now + idle))
        #expect(!rig.wire.keepsBuffers)
        // Requests each within the moment: kept, the release moving on with each.
        for _ in 0..<5 {
            rig.context.clock.now += delay - 1
            #expect(rig.arrive(request) == .wait(events: Epoll.readable, until: rig.context.clock.now + delay))
            #expect(rig.wire.keepsBuffers)
        }
        #expect(rig.wire.buffersKept == 1)
        let lastRequest = rig.context.clock.now
        rig.context.clock.now = lastRequest + delay
        // Given back; the connection then waits for its idle time-out as before.
        #expect(rig.connection.handle(.deadline) == .wait(events: Epoll.readable, until: lastRequest + idle))
        #expect(!rig.wire.keepsBuffers)
        #expect(rig.wire.writtenText.components(separatedBy: "HTTP/1.1 404 ").count == 7)
    }

    @Test func h2OverALPNStartsWithTheServerSettings() {
        let rig = ConnectionRig(listener: .https, http2: true)
        rig.wire.handshakeScript = [.established(alpn: "h2", certificate: nil)]
        _ = rig.arrive([0x16])
        // The server preface: a SETTINGS frame (type 4) on stream 0.
        #expect(rig.wire.written.count >= 9 && rig.wire.written[3] == 4)
    }

    @Test func aTLSALPN01ValidationEndsWithTheHandshake() {
        let rig = ConnectionRig(listener: .https)
        rig.wire.handshakeScript = [.established(alpn: "acme-tls/1", certificate: nil)]
        #expect(rig.arrive([0x16]) == .close)
        #expect(rig.wire.closeNotifies == 1)
    }

    @Test func plainHTTPToTheTLSPortIsAnsweredInPlainHTTPThenClosed() {
        let rig = ConnectionRig(listener: .https)
        rig.wire.handshakeScript = [.plainHTTP]
        rig.wire.peerClosed = false
        let action = rig.arrive(Array("GET / HTTP/1.1\r\n".utf8))
        #expect(rig.wire.tlsDropped == 1)
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 400 Bad Request"))
        #expect(rig.wire.writtenText.contains("this port speaks HTTPS"))
        #expect(action == .close || action == .wait(events: Epoll.readable, until: 1_000 + TransportConfiguration().lingerTimeout))
    }

    @Test func theH2CPrefaceSplitAtEveryByteStartsHTTP2() {
        let preface = Array(ClientPreface.bytes) + [0, 0, 0, 4, 0, 0, 0, 0, 0]
        for split in 1..<Array(ClientPreface.bytes).count {
            let rig = ConnectionRig(listener: .http, http2: true)
            #expect(rig.arrive(Array(preface[0..<split])) == .wait(events: Epoll.readable, until: 1_000 + HTTP1Configuration().headerTimeout),
                    "split at \(split)")
            #expect(rig.wire.written.isEmpty)
            _ = rig.arrive(Array(preface[split...]))
            #expect(rig.wire.written.count >= 9 && rig.wire.written[3] == 4, "split at \(split): no SETTINGS")
        }
    }

    @Test func anHTTP11RequestOnTheH2CListenerIsHTTP11() {
        let rig = ConnectionRig(listener: .http, http2: true)
        _ = rig.arrive(request)
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 404 "))
    }

    @Test func aCloseWithUnreadInputLingersUntilTheClientCloses() {
        let rig = ConnectionRig(listener: .http)
        // Connection: close, then bytes the server will never read.
        let action = rig.arrive("GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\nGET /more")
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 404 "))
        #expect(rig.wire.shutWrite)
        #expect(rig.connection.stage == .lingering)
        #expect(action == .wait(events: Epoll.readable, until: 1_000 + TransportConfiguration().lingerTimeout))
        rig.wire.peerClosed = true
        #expect(rig.connection.handle(.ready(Epoll.readable)) == .close)
    }

    @Test func aCloseWithNothingUnreadClosesAtOnce() {
        let rig = ConnectionRig(listener: .http)
        #expect(rig.arrive("GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n") == .close)
        #expect(!rig.wire.shutWrite)
    }

    @Test func outputTheSocketWillNotTakeWaitsForWritability() {
        let rig = ConnectionRig(listener: .http)
        rig.wire.writeBlocked = true
        let action = rig.arrive(request)
        guard case .wait(let events, let until) = action else {
            Issue.record("closed: \(action)")
            return
        }
        #expect(events & Epoll.writable != 0)
        #expect(until == 1_000 + TransportConfiguration().writeStallTimeout)
        rig.wire.writeBlocked = false
        _ = rig.connection.handle(.ready(Epoll.writable))
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 404 "))
    }

    @Test func aHeadNotCompleteByTheDeadlineGets408() {
        let rig = ConnectionRig(listener: .http)
        let action = rig.arrive("GET / HTTP/1.1\r\nHost: exa")
        guard case .wait(_, let until?) = action else {
            Issue.record("no deadline: \(action)")
            return
        }
        rig.context.clock.now = until
        _ = rig.connection.handle(.deadline)
        #expect(rig.wire.writtenText.hasPrefix("HTTP/1.1 408 "))
    }

    @Test func drainKeepsAnIdleConnectionUntilTheDelayIsOver() {
        let rig = ConnectionRig(listener: .http)
        _ = rig.arrive(request)
        #expect(rig.connection.handle(.drain) != .close)
        #expect(rig.connection.handle(.closeIdle) == .close)
    }

    @Test func aPeerThatReadsSteadilyButNeverDrainsTheOutputKeepsItBounded() {
        // Pipelined requests keep arriving while the socket takes a little of the output each
        // turn: the written part must not stay in the buffer.
        let rig = ConnectionRig(listener: .http)
        _ = rig.connection.handle(.start)
        let request = Array("GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: unknown.example\r\n\r\n".utf8)
        var largest = 0
        for _ in 0..<3_000 {
            rig.wire.writeBudget = 600
            _ = rig.arrive(request + request + request + request)
            _ = rig.connection.handle(.ready(Epoll.writable))
            largest = max(largest, rig.connection.heldOutputBytes)
        }
        #expect(rig.wire.written.count > 1_500_000, "\(rig.wire.written.count) bytes written")
        #expect(largest < 1024 * 1024, "the buffer held \(largest) bytes")
    }
}
