import COpenSSL
import Foundation
import Glibc
import Testing
import TestCertificates
@testable import AASATransport

/// Many sites over the one server context: each handshake gets its own site's certificate,
/// whether its parsed chain and key are cached, were evicted, or were replaced by a reload.
struct TLSKeyPairCacheTests {
    /// A real handshake over a socket pair with the project's TLS client; returns the DER of
    /// the certificate the client received.
    private func servedCertificate(serverName: String, store: CertificateStore, settings: TLSServerSettings) throws -> [UInt8]? {
        let (a, b) = TLSStreamTests.pair()
        defer { close(a); close(b) }
        let server = try TLSStream(server: settings, certificates: store, fd: a)
        let client = try TLSStream(client: TLSClientContext(verifyPeer: false, alpn: ["http/1.1"]), fd: b, serverName: serverName)
        guard TLSStreamTests.handshake(server, client) == (.done(0), .done(0)), let peer = SSL_get1_peer_certificate(client.ssl) else { return nil }
        defer { X509_free(peer) }
        return KeyReader.encode { i2d_X509(peer, $0) }
    }

    /// The leaf of a certificate file, as DER.
    private func fileDER(_ path: String) throws -> [UInt8] {
        let pem = try #require(TLSCertificate.readFile(path))
        return try #require(PEMBlocks.decode(pem).first)
    }

    @Test func moreSitesThanTheCacheHoldsEachGetTheirOwnCertificateAndAReplacedOneIsServedAfterTheReload() throws {
        let sites = try ManySites()
        let count = 9
        var certificates: [TLSCertificate] = []
        for i in 0..<count {
            try sites.addCertificate(name: "site\(i)", dnsNames: [ManySites.host(i)])
            certificates.append(try TLSCertificate(name: "site\(i)", certificatePath: sites.certs + "/site\(i).crt", keyPath: sites.certs + "/site\(i).key"))
        }
        try sites.addCertificate(name: "wild", dnsNames: ["*.wild.example.net"])
        certificates.append(try TLSCertificate(name: "wild", certificatePath: sites.certs + "/wild.crt", keyPath: sites.certs + "/wild.key"))
        let store = CertificateStore(certificates: certificates, defaultName: "site0")
        let settings = TLSServerSettings(offersHTTP2: false, keyPairCapacity: 3)

        // Twice round: the second pass finds every pair evicted and parses it again.
        for _ in 0..<2 {
            for i in 0..<count {
                let file = try fileDER(sites.certs + "/site\(i).crt")
                #expect(try servedCertificate(serverName: ManySites.host(i), store: store, settings: settings) == file, "site \(i)")
                #expect(settings.keyPairs.count <= 3)
            }
        }
        let wild = try fileDER(sites.certs + "/wild.crt")
        #expect(try servedCertificate(serverName: "a.wild.example.net", store: store, settings: settings) == wild)
        let first = try fileDER(sites.certs + "/site0.crt")
        #expect(try servedCertificate(serverName: "unknown.example.org", store: store, settings: settings) == first, "an unknown name gets the default certificate")

        // A new file for site4, while its old pair is cached: the reloaded store serves the new one.
        let old = try fileDER(sites.certs + "/site4.crt")
        #expect(try servedCertificate(serverName: ManySites.host(4), store: store, settings: settings) == old)
        try sites.addCertificate(name: "site4", dnsNames: [ManySites.host(4)])
        let replaced = try TLSCertificate(name: "site4", certificatePath: sites.certs + "/site4.crt", keyPath: sites.certs + "/site4.key")
        let reloaded = store.updating(removing: [], adding: [replaced], acmeNames: [], defaultName: "site0")
        let served = try servedCertificate(serverName: ManySites.host(4), store: reloaded, settings: settings)
        let new = try fileDER(sites.certs + "/site4.crt")
        #expect(served == new)
        #expect(served != old)
    }

    @Test func twoSitesWhoseChainsEndInOneCAEachSendTheirChainAndShareOneParsedCA() throws {
        let sites = try ManySites()
        let leaf = try #require(TLSCertificate.readFile(TestPKI.certificate))
        let ca = try #require(TLSCertificate.readFile(TestPKI.caFile))
        var certificates: [TLSCertificate] = []
        for name in ["one", "two"] {
            let path = sites.certs + "/\(name).crt"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(leaf + ca)))
            certificates.append(try TLSCertificate(name: name, certificatePath: path, keyPath: TestPKI.key))
        }
        let settings = TLSServerSettings(offersHTTP2: false)
        for certificate in certificates {
            let (a, b) = TLSStreamTests.pair()
            defer { close(a); close(b) }
            let server = try TLSStream(server: settings, certificates: CertificateStore(certificates: [certificate], defaultName: certificate.name), fd: a)
            let client = try TLSStream(client: TLSClientContext(caFile: TestPKI.caFile), fd: b, serverName: "example.com")
            #expect(TLSStreamTests.handshake(server, client) == (.done(0), .done(0)))
            #expect(client.verificationFailure == nil)
            #expect(OPENSSL_sk_num(SSL_get_peer_cert_chain(client.ssl)) == 2, "the leaf and the CA")
        }
        let chains = certificates.compactMap { $0.keyPair(settings.keyPairs)?.chain }
        #expect(chains.count == 2)
        let cas: [UnsafeMutableRawPointer?] = chains.map { OPENSSL_sk_value($0, 0) }
        #expect(cas[0] != nil)
        #expect(cas[0] == cas[1], "one parsed CA")
    }

    @Test func aServerWithNoCertificateForANameAndNoDefaultFailsTheHandshake() throws {
        let store = CertificateStore(certificates: [], defaultName: nil)
        #expect(try servedCertificate(serverName: "site1.example.net", store: store, settings: TLSServerSettings(offersHTTP2: false)) == nil)
    }
}
