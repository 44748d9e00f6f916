import COpenSSL
import Foundation
import TestCertificates
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import AASATransport

/// Both ends of a TLS connection are ours: the server's stream with a certificate's context,
/// the client's with a CA, over a non-blocking socket pair.
@Suite struct TLSStreamTests {
    /// Runs both handshakes until each is done or one fails.
    static func handshake(_ server: TLSStream, _ client: TLSStream) -> (server: TLSStream.Progress, client: TLSStream.Progress) {
        var s = TLSStream.Progress.wantRead, c = TLSStream.Progress.wantRead
        for _ in 0..<100 {
            if c != .done(0) { c = client.handshake() }
            if s != .done(0) { s = server.handshake() }
            if s == .done(0) && c == .done(0) { break }
            if case .failed = s { break }
            if case .failed = c { break }
        }
        return (s, c)
    }

    static func pair() -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        precondition(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func aVerifiedHandshakeCarriesBytesBothWays() throws {
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let (a, b) = Self.pair()
        defer { close(a); close(b) }
        let server = try TLSStream.testServer(certificate, fd: a)
        let client = try TLSStream(client: TLSClientContext(caFile: TestPKI.caFile), fd: b, serverName: "www.example.com")
        let (s, c) = Self.handshake(server, client)
        #expect(s == .done(0))
        #expect(c == .done(0))
        #expect(client.verificationFailure == nil)
        #expect(server.serverName == "www.example.com")
        #expect(client.negotiatedProtocol == "http/1.1")
        #expect(client.peerNotAfter == certificate.notAfter)

        let message = Array("GET / HTTP/1.1\r\n\r\n".utf8)
        #expect(message.withUnsafeBytes { client.write($0.baseAddress!, count: $0.count) } == .done(message.count))
        var buffer = [UInt8](repeating: 0, count: 256)
        let r = buffer.withUnsafeMutableBytes { server.read(into: $0.baseAddress!, count: $0.count) }
        #expect(r == .done(message.count))
        #expect(Array(buffer[0..<message.count]) == message)
        // Nothing more: the read would block.
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0.baseAddress!, count: $0.count) } == .wantRead)
    }

    /// A write larger than one record goes through the write buffer: what the socket does not
    /// take stays pending (and no new bytes are taken) until flushed, every byte arrives once
    /// and in order, and the buffer is gone once it is all out.
    @Test func aLargeWriteIsBufferedUntilTheSocketTakesItAndArrivesWhole() throws {
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let (a, b) = Self.pair()
        defer { close(a); close(b) }
        var small: Int32 = 16 * 1024
        setsockopt(a, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let server = try TLSStream.testServer(certificate, fd: a)
        let client = try TLSStream(client: TLSClientContext(caFile: TestPKI.caFile), fd: b, serverName: "www.example.com")
        #expect(Self.handshake(server, client) == (.done(0), .done(0)))

        let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        var sent = 0
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var sawPending = false
        for _ in 0..<10_000 where received.count < body.count {
            if sent < body.count {
                let r = body.withUnsafeBytes { server.write($0.baseAddress! + sent, count: body.count - sent) }
                if case .done(let n) = r { sent += n } else { #expect(r == .wantWrite) }
                if server.hasPendingOutput { sawPending = true }
            } else if server.hasPendingOutput {
                let r = server.flushPendingOutput()
                #expect(r == .done(0) || r == .wantWrite)
            }
            while case .done(let n) = buffer.withUnsafeMutableBytes({ client.read(into: $0.baseAddress!, count: $0.count) }) {
                received += buffer[0..<n]
            }
        }
        #expect(sawPending, "the socket's small buffer left ciphertext pending")
        #expect(received.count == body.count)
        #expect(received == body)
        #expect(!server.hasPendingOutput)
    }

    @Test func aClientThatVerifiesRefusesTheWrongName() throws {
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let (a, b) = Self.pair()
        defer { close(a); close(b) }
        let server = try TLSStream.testServer(certificate, fd: a)
        let client = try TLSStream(client: TLSClientContext(caFile: TestPKI.caFile), fd: b, serverName: "other.example.net")
        let (_, c) = Self.handshake(server, client)
        guard case .failed = c else {
            Issue.record("handshake should fail, got \(c)")
            return
        }
        #expect(client.verificationFailure?.contains("hostname mismatch") == true)
    }

    @Test func aClientThatOnlyLooksCompletesAndSaysWhy() throws {
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let (a, b) = Self.pair()
        defer { close(a); close(b) }
        let server = try TLSStream.testServer(certificate, fd: a)
        // The system store does not know the test CA.
        let client = try TLSStream(client: TLSClientContext(verifyPeer: false), fd: b, serverName: "example.com")
        let (s, c) = Self.handshake(server, client)
        #expect(s == .done(0))
        #expect(c == .done(0))
        #expect(client.verificationFailure != nil)
    }

    /// A record that does not decrypt is a fatal error that says why: the reason survives the
    /// second call a failure with an entry in the error queue gets (an entry an earlier call
    /// left there must not make a would-block look fatal).
    @Test func aRecordThatDoesNotDecryptFailsWithItsReason() throws {
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let (a, b) = Self.pair()
        defer { close(a); close(b) }
        let server = try TLSStream.testServer(certificate, fd: a)
        let client = try TLSStream(client: TLSClientContext(caFile: TestPKI.caFile), fd: b, serverName: "www.example.com")
        let (s, c) = Self.handshake(server, client)
        #expect(s == .done(0) && c == .done(0))
        // Application data whose authentication tag cannot be right, written past the server's TLS.
        let record: [UInt8] = [0x17, 0x03, 0x03, 0x00, 0x20] + [UInt8](repeating: 0x41, count: 32)
        #expect(record.withUnsafeBytes { Glibc.write(a, $0.baseAddress!, $0.count) } == record.count)
        var buffer = [UInt8](repeating: 0, count: 256)
        var r = TLSStream.Progress.wantRead
        for _ in 0..<10 where r == .wantRead {
            r = buffer.withUnsafeMutableBytes { client.read(into: $0.baseAddress!, count: $0.count) }
        }
        guard case .failed(let reason) = r else {
            Issue.record("the read should fail, got \(r)")
            return
        }
        #expect(reason.contains("bad record mac") || reason.contains("decrypt"), "\(reason)")
    }

    @Test func aPeerThatGoesAwayIsAnOrderlyClose() throws {
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let (a, b) = Self.pair()
        defer { close(a) }
        let server = try TLSStream.testServer(certificate, fd: a)
        let client = try TLSStream(client: TLSClientContext(caFile: TestPKI.caFile), fd: b, serverName: "example.com")
        _ = Self.handshake(server, client)
        client.shutdown()
        close(b)
        var buffer = [UInt8](repeating: 0, count: 256)
        #expect(buffer.withUnsafeMutableBytes { server.read(into: $0.baseAddress!, count: $0.count) } == .closed)
    }

    /// Loading trust is the dearest part of a client (the system store: tens of milliseconds in
    /// OpenSSL 3), so clients that trust the same share one context, many connections at once;
    /// a CA file replaced on disk is read again.
    @Test func clientsThatTrustTheSameShareAContextUntilTheCAFileIsReplaced() throws {
        let directory = NSTemporaryDirectory() + "aasa-shared-context-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/ca.pem"
        try FileManager.default.copyItem(atPath: TestPKI.caFile, toPath: file)
        let first = try TLSClientContext.shared(caFile: file, verifyPeer: false)
        #expect(try TLSClientContext.shared(caFile: file, verifyPeer: false) === first)
        #expect(try TLSClientContext.shared(caFile: file, verifyPeer: true) !== first)
        #expect(try TLSClientContext.shared(caFile: file, keepsSystemStore: true, verifyPeer: false) !== first)

        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        for _ in 0..<2 {
            let (a, b) = Self.pair()
            defer { close(a); close(b) }
            let server = try TLSStream.testServer(certificate, fd: a)
            let client = try TLSStream(client: TLSClientContext.shared(caFile: file, verifyPeer: false), fd: b, serverName: "example.com")
            #expect(Self.handshake(server, client) == (.done(0), .done(0)))
            #expect(client.verificationFailure == nil)
        }

        // The same CA, written anew and renamed over it (another inode): read again.
        try FileManager.default.copyItem(atPath: TestPKI.caFile, toPath: directory + "/ca.new")
        #expect(rename(directory + "/ca.new", file) == 0)
        let reread = try TLSClientContext.shared(caFile: file, verifyPeer: false)
        #expect(reread !== first)
        #expect(try TLSClientContext.shared(caFile: file, verifyPeer: false) === reread)
    }
}
