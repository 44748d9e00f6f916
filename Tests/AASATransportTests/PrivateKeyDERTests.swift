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

    /// The shape alone is not a key: a PKCS #1 key cut short is not read, and a SEC 1 key whose
    /// secret is another key's (the public point its certificate's) is read for its shape but
    /// refused by the whole check the write API makes before storing one.
    @Test func aKeyThatOnlyLooksRightIsCaughtBeforeItIsStored() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let rsa = try OpenSSLTool.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem"], in: directory)
        #expect(rsa.status == 0)
        let pkcs1 = try Self.openssl(["rsa", "-in", "rsa.pem", "-traditional", "-outform", "DER"], directory)
        var top = DERReader(pkcs1[...])
        let sequence = top.read(tag: 0x30)
        var fields = try #require(sequence?.reader)
        var first: [[UInt8]] = []
        for _ in 0..<3 { if let element = fields.read(tag: 0x02) { first.append(Array(element.whole)) } }
        #expect(first.count == 3)
        let short = DERWriter.sequence(first + [[0x02, 0x01, 0x01]])
        #expect(PrivateKeyDER(pkcs1: short[...]) == nil)
        #expect(PrivateKeyDER(pkcs1: pkcs1[...]) != nil)
        // Two EC keys; the first's secret with the second's public point.
        for name in ["a", "b"] {
            let r = try OpenSSLTool.run(["req", "-x509", "-nodes", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-keyout", "\(name).key",
                                         "-subj", "/CN=\(name).example.org", "-addext", "subjectAltName=DNS:\(name).example.org",
                                         "-days", "30", "-out", "\(name).crt"], in: directory)
            #expect(r.status == 0, "\(r.output)")
        }
        let a = try #require(PrivateKeyDER(pem: try Self.file(directory + "/a.key")))
        let b = try #require(PrivateKeyDER(pem: try Self.file(directory + "/b.key")))
        func parts(_ der: [UInt8]) throws -> [[UInt8]] {
            var outer = DERReader(der[...])
            let sequence = outer.read(tag: 0x30)
            var inner = try #require(sequence?.reader)
            var out: [[UInt8]] = []
            while let element = inner.readAny() { out.append(Array(element.whole)) }
            return out
        }
        let (pa, pb) = (try parts(a.der), try parts(b.der))
        let mixed = DERWriter.sequence([pa[0], pa[1], pa[2], pb[3]])
        let pem = "-----BEGIN EC PRIVATE KEY-----\n" + Data(mixed).base64EncodedString(options: .lineLength64Characters) + "\n-----END EC PRIVATE KEY-----\n"
        try pem.write(toFile: directory + "/mixed.key", atomically: false, encoding: .utf8)
        #expect(PrivateKeyDER(pem: Array(pem.utf8))?.publicKeyInfo == b.publicKeyInfo, "read for its shape")
        #expect(KeyReader.pairProblem(certificatePath: directory + "/b.crt", keyPath: directory + "/mixed.key") != nil)
        #expect(KeyReader.pairProblem(certificatePath: directory + "/b.crt", keyPath: directory + "/b.key") == nil)
        #expect(KeyReader.pairProblem(certificatePath: directory + "/b.crt", keyPath: directory + "/a.key") != nil)
    }
}
