import COpenSSL
import Foundation
import Synchronization
import TestCertificates
import Testing
@testable import AASAServer
@testable import AASAClient

@Suite struct ACMEChallengeCertificateTests {
    @Test func theChallengeCertificateNamesTheHostAndCarriesTheCriticalACMEIdentifier() throws {
        let dir = try OpenSSLTool.temporaryDirectory()
        let keyAuthorization = "token123.thumbprint456"
        let key = try P256Key.generate()
        let cert = try ChallengeCertificate.make(host: "one.example.net", key: key, digest: SHA256Digest.hash(Array(keyAuthorization.utf8)))
        defer { X509_free(cert) }
        try OpenSSLTool.write(try P256Key.pem { PEM_write_bio_X509($0, cert) }, dir + "/cert.pem")
        let text = try OpenSSLTool.run(["x509", "-in", "cert.pem", "-noout", "-text"], in: dir).output
        #expect(text.contains("DNS:one.example.net"))
        #expect(text.contains("1.3.6.1.5.5.7.1.31: critical"), "\(text)")
        // The extension's value is DER OCTET STRING (04 20) of SHA-256(key authorization).
        let der = try OpenSSLTool.run(["asn1parse", "-in", "cert.pem"], in: dir).output
        let digest = hex(SHA256Digest.hash(Array(keyAuthorization.utf8))).uppercased()
        #expect(der.contains("0420" + digest), "\(der)")
    }

    @Test func theClientHelloReadersFindTheOfferedProtocolsAndTheServerName() {
        // ALPN as sent: list length, then length-prefixed names (RFC 7301 §3.1).
        let alpn: [UInt8] = [0, 14, 2, 0x68, 0x32] + [10] + Array("acme-tls/1".utf8)
        alpn.withUnsafeBufferPointer {
            #expect(ClientHelloExtensions.protocols($0, listIsPrefixed: true) == ["h2", "acme-tls/1"])
            #expect(ClientHelloExtensions.protocols(UnsafeBufferPointer(rebasing: $0[2...]), listIsPrefixed: false) == ["h2", "acme-tls/1"])
        }
        let truncated: [UInt8] = [0, 14, 2, 0x68]
        truncated.withUnsafeBufferPointer { #expect(ClientHelloExtensions.protocols($0, listIsPrefixed: true).isEmpty) }
        // server_name: list length, then type 0 (host_name), length, name (RFC 6066 §3).
        let name = Array("One.Example.NET".utf8)
        let sni: [UInt8] = [0, UInt8(name.count + 3), 0, 0, UInt8(name.count)] + name
        sni.withUnsafeBufferPointer { #expect(ClientHelloExtensions.serverName($0) == "one.example.net") }
        let bad: [UInt8] = [0, 9, 0, 0, 40]
        bad.withUnsafeBufferPointer { #expect(ClientHelloExtensions.serverName($0) == nil) }
    }

    @Test func aPendingChallengeIsFoundByHostUntilItIsRemoved() throws {
        let challenges = PendingChallenges()
        #expect(!challenges.hasCertificates)
        challenges.addCertificate(try ChallengeCertificate(host: "one.example.net", keyAuthorization: "a.b"))
        #expect(challenges.hasCertificates)
        challenges.removeCertificate(host: "one.example.net")
        #expect(!challenges.hasCertificates)
        challenges.addToken("tok", keyAuthorization: "tok.thumb")
        #expect(challenges.keyAuthorization(token: "tok") == "tok.thumb")
        challenges.removeToken("tok")
        #expect(challenges.keyAuthorization(token: "tok") == nil)
    }
}
