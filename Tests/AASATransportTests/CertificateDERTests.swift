import COpenSSL
import Foundation
import TestCertificates
import Testing
@testable import AASATransport

@Suite struct CertificateDERTests {
    /// The fields read from the DER are those OpenSSL reads, for a CA-issued leaf and for
    /// self-signed ones with one name and a wildcard.
    /// PEM's base64 (RFC 7468), against Foundation's decoder: random bytes in 64-column lines,
    /// and what must be refused.
    @Test func base64DecodesAsFoundationDoesAndRefusesWhatIsNotBase64() {
        var generator = SystemRandomNumberGenerator()
        for length in [1, 2, 3, 4, 47, 48, 49, 300, 1000] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Data(bytes).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            #expect(PEMBlocks.base64(Array(text.utf8)[...]) == bytes, "\(length)")
        }
        #expect(PEMBlocks.base64(Array("QUJD\r\n RA==\n".utf8)[...]) == Array("ABCD".utf8))
        #expect(PEMBlocks.base64(Array("QUJD*RA==".utf8)[...]) == nil, "not a base64 character")
        #expect(PEMBlocks.base64(Array("QQ==QUJD".utf8)[...]) == nil, "data after the padding")
        #expect(PEMBlocks.base64(Array("====".utf8)[...]) == nil, "nothing decoded")
    }

    @Test func theNamesAndDatesReadFromTheDERAreThoseOpenSSLReads() throws {
        let sites = try ManySites()
        try sites.addCertificate(name: "wild", dnsNames: ["*.Example.org", "example.org"])
        try sites.addCertificate(name: "one", dnsNames: ["one.example.net"])
        for path in [TestPKI.certificate, sites.certs + "/wild.crt", sites.certs + "/one.crt"] {
            let pem = try #require(TLSCertificate.readFile(path))
            let ders = PEMBlocks.decode(pem)
            let first = try #require(ders.first)
            let fields = try #require(CertificateDER(first), "\(path)")
            let bio = BIO_new_mem_buf(pem, Int32(pem.count))
            defer { BIO_free(bio) }
            let x509 = try #require(PEM_read_bio_X509(bio, nil, nil, nil))
            defer { X509_free(x509) }
            #expect(fields.dnsNames == X509Fields.dnsNames(x509), "\(path)")
            #expect(fields.notAfter == X509Fields.notAfter(x509) && fields.notBefore == X509Fields.notBefore(x509), "\(path)")
        }
    }

    @Test func aKeyOfAnotherCertificateIsStillRefused() throws {
        let sites = try ManySites()
        try sites.addCertificate(name: "one", dnsNames: ["one.example.net"])
        #expect(throws: TLSError.self) {
            _ = try TLSCertificate(name: "mixed", certificatePath: sites.certs + "/one.crt", keyPath: TestPKI.key)
        }
        let good = try TLSCertificate(name: "one", certificatePath: sites.certs + "/one.crt", keyPath: sites.certs + "/one.key")
        #expect(good.dnsNames == ["one.example.net"])
        #expect(good.keyPair(TLSKeyPairCache()) != nil, "its chain and key are parsed from the DER")
    }

    @Test func truncatedOrGarbledDERIsNotReadAndOpenSSLDecides() throws {
        let pem = try #require(TLSCertificate.readFile(TestPKI.certificate))
        let der = try #require(PEMBlocks.decode(pem).first)
        #expect(CertificateDER(Array(der.prefix(der.count / 2))) == nil)
        #expect(CertificateDER([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]) == nil)
        #expect(CertificateDER([]) == nil)
    }
}
