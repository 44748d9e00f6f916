import COpenSSL
import Glibc
import Testing
@testable import AASAServer
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
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return nil }
        defer { close(fds[0]); close(fds[1]) }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        guard let context = store.defaultCertificate?.retainedContext(settings) else { return nil }
        defer { SSL_CTX_free(context) }
        let server = try TLSStream(serverContext: context, fd: fds[0])
        HandshakeData.set(server.ssl, certificates: store, settings: settings)
        defer { HandshakeData.clear(server.ssl) }
        let client = try TLSStream(client: TLSClientContext(verifyPeer: false, alpn: ["http/1.1"]), fd: fds[1], serverName: serverName)
        var serverDone = false, clientDone = false
        for _ in 0..<100 where !(serverDone && clientDone) {
            if !clientDone, case .done = client.handshake() { clientDone = true }
            if !serverDone, case .done = server.handshake() { serverDone = true }
        }
        #expect(serverDone && clientDone)
        return store.select(serverName: server.serverName)
    }

    @Test func theServersChallengesSeeEveryClientHelloAndEachNameNoCertificateCovers() throws {
        let directory = "/tmp/aasa-tls-settings-\(getpid())"
        defer {
            for file in ["ca/ca.pem", "ca/ca.key", "aasa-dev.crt", "aasa-dev.key"] { unlink(directory + "/" + file) }
            rmdir(directory + "/ca")
            rmdir(directory)
        }
        let development = DevelopmentCertificates(directory: directory)
        _ = try development.ensure(names: ["covered.example"])
        let certificate = try TLSCertificate(name: "dev", certificatePath: development.leafCertificatePath,
                                             keyPath: directory + "/\(DevelopmentCertificates.leafName).key")
        let store = CertificateStore(certificates: [certificate], defaultName: "dev")
        let challenges = RecordingChallenges()
        let settings = TLSServerSettings(offersHTTP2: false, challenges: challenges)

        #expect(try handshake(serverName: "covered.example", store: store, settings: settings) === certificate)
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
