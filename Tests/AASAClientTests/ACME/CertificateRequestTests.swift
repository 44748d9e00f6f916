import Foundation
import TestCertificates
import Testing
@testable import AASAClient

/// The CSR an ACME order finalizes with (RFC 8555 §7.4), read back by the `openssl` command.
@Suite struct CertificateRequestTests {
    @Test func theCertificateRequestIsSignedByItsNewKeyAndAsksForTheHostOnly() throws {
        let dir = try OpenSSLTool.temporaryDirectory()
        let request = try CertificateRequest(host: "two.example.net")
        try OpenSSLTool.write(request.der, dir + "/csr.der")
        let r = try OpenSSLTool.run(["req", "-in", "csr.der", "-inform", "DER", "-verify", "-noout", "-text"], in: dir)
        #expect(r.output.contains("verify OK") || r.output.contains("Certificate request self-signature verify OK"), "\(r.output)")
        #expect(r.output.contains("DNS:two.example.net"))
        #expect(r.output.contains("CN = two.example.net") || r.output.contains("CN=two.example.net"))
        // Its public key is the key that will serve the certificate.
        try OpenSSLTool.write(try request.key.privateKeyPEM(), dir + "/key.pem")
        let fromKey = try OpenSSLTool.run(["pkey", "-in", "key.pem", "-pubout"], in: dir).output
        let fromRequest = try OpenSSLTool.run(["req", "-in", "csr.der", "-inform", "DER", "-noout", "-pubkey"], in: dir).output
        #expect(!fromKey.isEmpty && fromKey == fromRequest)
    }
}
