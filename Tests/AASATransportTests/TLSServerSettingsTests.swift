import COpenSSL
import Glibc
import TestCertificates
import Testing
@testable import AASATransport

/// ACME's side of the handshake as the TLS layer sees it: what it was handed.
private final class RecordingChallenges: TLSChallenges, @unchecked Sendable {
    var clientHellos = 0
    var uncovered: [String] = []
    func clientHello(_ ssl: OpaquePointer) { clientHellos += 1 }
    func uncovered(serverName: String) { uncovered.append(serverName) }
}

/// What the TLS callbacks reach through a connection's ``HandshakeData``: the snapshot's
/// certificates and the server's own settings, with no process-wide value in between.
struct TLSServerSettingsTests {
    /// A real handshake over a socket pair, the server's SSL carrying `store` and `settings` as
    /// a connection's do; returns the certificate SNI chose.
    private func handshake(serverName: String, store: CertificateStore, settings: TLSServerSettings) throws -> TLSCertificate? {
        let (a, b) = TLSStreamTests.pair()
        defer { close(a); close(b) }
        let server = try TLSStream(server: settings, certificates: store, fd: a)
        let client = try TLSStream(client: TLSClientContext(verifyPeer: false, alpn: ["http/1.1"]), fd: b, serverName: serverName)
        #expect(TLSStreamTests.handshake(server, client) == (.done(0), .done(0)))
        return server.endHandshake()
    }

    @Test func theServersChallengesSeeEveryClientHelloAndEachNameNoCertificateCovers() throws {
        // The test CA's leaf covers example.com and www.example.com.
        let certificate = try TLSCertificate(name: "site", certificatePath: TestPKI.certificate, keyPath: TestPKI.key)
        let store = CertificateStore(certificates: [certificate], defaultName: "site")
        let challenges = RecordingChallenges()
        let settings = TLSServerSettings(offersHTTP2: false, challenges: challenges)

        #expect(try handshake(serverName: "www.example.com", store: store, settings: settings) === certificate)
        #expect(challenges.clientHellos == 1)
        #expect(challenges.uncovered.isEmpty)
        _ = try handshake(serverName: "Elsewhere.Example", store: store, settings: settings)
        #expect(challenges.clientHellos == 2)
        #expect(challenges.uncovered == ["elsewhere.example"])

        // Another server's settings (no ACME) never reach these challenges.
        let plain = TLSServerSettings(offersHTTP2: false)
        _ = try handshake(serverName: "other.example", store: store, settings: plain)
        #expect(challenges.clientHellos == 2)
    }
}
