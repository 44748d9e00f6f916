import COpenSSL
import Glibc
import TestCertificates
import Testing
@testable import AASATransport

/// The server's ALPN choice (the select callback of the server's context), asked as
/// OpenSSL asks it during a handshake.
private func select(offered: [String], offeringHTTP2: Bool) -> String? {
    let wire = offered.flatMap { [UInt8($0.utf8.count)] + Array($0.utf8) }
    var out: UnsafePointer<UInt8>?
    var length: UInt8 = 0
    let arg = offeringHTTP2 ? UnsafeMutableRawPointer(mutating: aasa_alpn_h2_http11_list()) : nil
    let result = wire.withUnsafeBufferPointer { aasa_alpn_select(nil, &out, &length, $0.baseAddress, UInt32($0.count), arg) }
    guard result == aasa_tlsext_ok(), let out else { return nil }
    return String(decoding: UnsafeBufferPointer(start: out, count: Int(length)), as: UTF8.self)
}

/// A real handshake over a socket pair between the server's context serving `certificate` and the project's TLS
/// client offering `h2,http/1.1`; returns what ALPN settled on.
private func handshake(with certificate: TLSCertificate, settings: TLSServerSettings) throws -> String? {
    let (a, b) = TLSStreamTests.pair()
    defer { close(a); close(b) }
    let server = try TLSStream(server: settings, certificates: CertificateStore(certificates: [certificate], defaultName: certificate.name), fd: a)
    let client = try TLSStream(client: TLSClientContext(verifyPeer: false, alpn: ["h2", "http/1.1"]), fd: b, serverName: "example.com")
    #expect(TLSStreamTests.handshake(server, client) == (.done(0), .done(0)))
    #expect(client.negotiatedProtocol == server.negotiatedProtocol)
    return server.negotiatedProtocol
}

struct ALPNTests {
    @Test func aServerWithHTTP2OnNegotiatesH2AndOneWithItOffHTTP1() throws {
        let withHTTP2 = try TLSCertificate(name: "h2", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let withoutHTTP2 = try TLSCertificate(name: "h1", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)

        #expect(try handshake(with: withHTTP2, settings: TLSServerSettings(offersHTTP2: true)) == "h2")
        #expect(try handshake(with: withoutHTTP2, settings: TLSServerSettings(offersHTTP2: false)) == "http/1.1")
    }

    @Test func h2IsPreferredWhenTheClientOffersBoth() {
        #expect(select(offered: ["http/1.1", "h2"], offeringHTTP2: true) == "h2")
        #expect(select(offered: ["h2", "http/1.1"], offeringHTTP2: true) == "h2")
    }

    @Test func anHTTP1OnlyClientGetsHTTP1() {
        #expect(select(offered: ["http/1.1"], offeringHTTP2: true) == "http/1.1")
    }

    @Test func withHTTP2OffOnlyHTTP1IsChosen() {
        #expect(select(offered: ["h2", "http/1.1"], offeringHTTP2: false) == "http/1.1")
        #expect(select(offered: ["h2"], offeringHTTP2: false) == nil)
    }
}
