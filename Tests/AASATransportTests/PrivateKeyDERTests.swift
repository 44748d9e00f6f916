import Foundation
import Testing
import TestCertificates
@testable import AASATransport

/// Keys read without OpenSSL (``PrivateKeyDER``) against OpenSSL's own reading of the same files:
/// the same public key, byte for byte, and the traditional DER OpenSSL writes.
@Suite struct PrivateKeyDERTests {
    static func file(_ path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    /// `openssl pkey` on `key` with `arguments`, its output file's bytes.
    static func openssl(_ arguments: [String], _ directory: String) throws -> [UInt8] {
        let r = try OpenSSLTool.run(arguments + ["-out", "out.der"], in: directory)
        #expect(r.status == 0, "\(r.output)")
        return try file(directory + "/out.der")
    }

    @Test(arguments: [("EC", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]),
                      ("EC", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"]),
                      ("RSA", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])])
    func eachUsualFormGivesOpenSSLsPublicKeyAndTraditionalDER(type: String, generate: [String]) throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try OpenSSLTool.run(generate + ["-out", "pkcs8.pem"], in: directory).status == 0)
        #expect(try OpenSSLTool.run(["pkey", "-in", "pkcs8.pem", "-traditional", "-out", "traditional.pem"], in: directory).status == 0)
        let spki = try Self.openssl(["pkey", "-in", "pkcs8.pem", "-pubout", "-outform", "DER"], directory)
        let traditional = try Self.openssl(type == "EC" ? ["ec", "-in", "pkcs8.pem", "-outform", "DER"]
                                                        : ["rsa", "-in", "pkcs8.pem", "-traditional", "-outform", "DER"], directory)
        for form in ["pkcs8.pem", "traditional.pem"] {
            let read = try #require(PrivateKeyDER(pem: try Self.file(directory + "/" + form)), "\(form)")
            #expect(read.type == type)
            #expect(read.publicKeyInfo == spki, "\(form)")
            #expect(read.der == traditional, "\(form)")
        }
    }

    @Test func whatItDoesNotKnowIsLeftToOpenSSL() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try OpenSSLTool.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"], in: directory).status == 0)
        // Encrypted, explicit curve parameters, no public point, Ed25519, two keys in one file.
        #expect(try OpenSSLTool.run(["pkey", "-in", "ec.pem", "-aes256", "-passout", "pass:x", "-out", "encrypted.pem"], in: directory).status == 0)
        #expect(try OpenSSLTool.run(["ec", "-in", "ec.pem", "-param_enc", "explicit", "-out", "explicit.pem"], in: directory).status == 0)
        #expect(try OpenSSLTool.run(["ec", "-in", "ec.pem", "-no_public", "-out", "nopublic.pem"], in: directory).status == 0)
        #expect(try OpenSSLTool.run(["genpkey", "-algorithm", "ED25519", "-out", "ed.pem"], in: directory).status == 0)
        let ec = try Self.file(directory + "/ec.pem")
        for name in ["encrypted.pem", "explicit.pem", "nopublic.pem", "ed.pem"] {
            #expect(PrivateKeyDER(pem: try Self.file(directory + "/" + name)) == nil, "\(name)")
        }
        #expect(PrivateKeyDER(pem: ec + ec) == nil)
        // Cut anywhere inside its DER, a key is not read (and nothing is read past its end).
        let der = try #require(PEMBlocks.decode(ec, label: "PRIVATE KEY").first)
        for count in 0..<der.count { #expect(PrivateKeyDER(pkcs8: Array(der[0..<count])) == nil, "\(count) bytes") }
    }

    /// The forms OpenSSL does not know are still loaded, through it; a key of another
    /// certificate is refused either way.
    @Test func aKeyWithoutItsPublicPointStillLoadsAndAMismatchIsRefused() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for name in ["a", "b"] {
            let r = try OpenSSLTool.run(["req", "-x509", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "\(name).key",
                                         "-subj", "/CN=\(name).example.org", "-addext", "subjectAltName=DNS:\(name).example.org",
                                         "-addext", "basicConstraints=critical,CA:FALSE", "-days", "30", "-out", "\(name).crt"], in: directory)
            #expect(r.status == 0, "\(r.output)")
        }
        #expect(try OpenSSLTool.run(["ec", "-in", "a.key", "-no_public", "-out", "a-nopublic.key"], in: directory).status == 0)
        let loaded = try TLSCertificate(name: "a", certificatePath: directory + "/a.crt", keyPath: directory + "/a-nopublic.key")
        #expect(loaded.dnsNames == ["a.example.org"])
        let keys = KeyReader()
        #expect(throws: TLSError.self) { try TLSCertificate(name: "x", certificatePath: directory + "/a.crt", keyPath: directory + "/b.key", keys: keys) }
        #expect(throws: TLSError.self) { try TLSCertificate(name: "y", certificatePath: directory + "/b.crt", keyPath: directory + "/a.key", keys: keys) }
        // The same reader, its right pair: loads.
        #expect(try TLSCertificate(name: "b", certificatePath: directory + "/b.crt", keyPath: directory + "/b.key", keys: keys).dnsNames == ["b.example.org"])
    }
}
