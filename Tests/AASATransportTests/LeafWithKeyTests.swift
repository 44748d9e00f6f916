import COpenSSL
import Foundation
import Glibc
import Testing
import TestCertificates
@testable import AASATransport

/// Pairs parsed without OpenSSL decoding the leaf's public key (``LeafWithKey``): the client
/// receives the file's certificate byte for byte and verifies the handshake's signature with
/// it, over TLS 1.3 and 1.2; what this way does not cover is parsed as before and served the same.
struct LeafWithKeyTests {
    /// A self-signed end-entity certificate for `name` made by the openssl tool with
    /// `keyArguments` (`-newkey rsa:2048`, `-key file`, …) in `directory`; the certificate's and
    /// key's paths.
    private func selfSigned(_ name: String, in directory: String, keyArguments: [String]) throws -> (certificate: String, key: String) {
        let key = keyArguments.first == "-key" ? keyArguments[1] : "\(name).key"
        let made = try OpenSSLTool.run(["req", "-x509", "-nodes"] + keyArguments + (keyArguments.first == "-key" ? [] : ["-keyout", key])
            + ["-subj", "/CN=\(name)", "-addext", "subjectAltName=DNS:\(name)", "-addext", "basicConstraints=critical,CA:FALSE",
               "-days", "30", "-out", "\(name).crt"], in: directory)
        #expect(made.status == 0, "\(made.output)")
        return (directory + "/\(name).crt", directory + "/" + key)
    }

    /// The leaf of a certificate file, as DER.
    private func fileDER(_ path: String) throws -> [UInt8] {
        let pem = try #require(TLSCertificate.readFile(path))
        return try #require(PEMBlocks.decode(pem).first)
    }

    /// A real handshake with the project's client verifying against `caFile`, at most TLS 1.2
    /// when `tls12` is set; the certificate the client received, as DER, and whether it
    /// verified it (chain and the handshake's signature).
    private func served(_ certificate: TLSCertificate, serverName: String, caFile: String, settings: TLSServerSettings, tls12: Bool = false) throws -> (der: [UInt8]?, verified: Bool, version: String) {
        let (a, b) = TLSStreamTests.pair()
        defer { close(a); close(b) }
        let server = try TLSStream(server: settings, certificates: CertificateStore(certificates: [certificate], defaultName: certificate.name), fd: a)
        let context = try TLSClientContext(caFile: caFile)
        if tls12 { _ = aasa_SSL_CTX_set_max_proto_version(context.context, aasa_tls1_2_version()) }
        let client = try TLSStream(client: context, fd: b, serverName: serverName)
        guard TLSStreamTests.handshake(server, client) == (.done(0), .done(0)), let peer = SSL_get1_peer_certificate(client.ssl) else {
            return (nil, false, "")
        }
        defer { X509_free(peer) }
        return (KeyReader.encode { i2d_X509(peer, $0) }, client.verificationFailure == nil, String(cString: SSL_get_version(client.ssl)))
    }

    @Test(arguments: [["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"], ["-newkey", "rsa:2048"], ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-384"]])
    func anECOrRSAPairIsParsedWithoutTheLeafsKeyDecodedAndServedAsTheFileHoldsIt(keyArguments: [String]) throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try selfSigned("cold.example.org", in: directory, keyArguments: keyArguments)
        let certificate = try TLSCertificate(name: "cold", certificatePath: files.certificate, keyPath: files.key)
        let settings = TLSServerSettings(offersHTTP2: false)

        let pair = try #require(certificate.keyPair(settings.keyPairs))
        #expect(X509_get0_pubkey(pair.leaf) == pair.key, "the leaf's public key is the private key itself: no public key decoded")
        #expect(X509_check_private_key(pair.leaf, pair.key) == 1)
        #expect(KeyReader.encode { i2d_X509(pair.leaf, $0) } == (try fileDER(files.certificate)))
        #expect(ERR_peek_error() == 0, "the decoders that found nothing left no error behind")

        // The self-signed certificate as the client's only trust anchor: the handshake's
        // signature is checked against the certificate the client received.
        for tls12 in [false, true] {
            let (der, verified, version) = try served(certificate, serverName: "cold.example.org", caFile: files.certificate, settings: settings, tls12: tls12)
            #expect(der == (try fileDER(files.certificate)))
            #expect(verified)
            #expect(version == (tls12 ? "TLSv1.2" : "TLSv1.3"))
        }
    }

    /// The key's PEM forms a load reads with a kept decoder (``KeyReader``): PKCS #8, and the
    /// traditional SEC 1 and PKCS #1 that `openssl pkey -traditional` writes; each loads, is
    /// parsed the cold handshake's way and verifies; a key of another certificate is refused.
    @Test(arguments: [["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"], ["-newkey", "rsa:2048"]])
    func aKeyInEachUsualFormLoadsAndIsServed(keyArguments: [String]) throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let files = try selfSigned("forms.example.org", in: directory, keyArguments: keyArguments)
        let converted = try OpenSSLTool.run(["pkey", "-in", files.key, "-traditional", "-out", "traditional.key"], in: directory)
        #expect(converted.status == 0, "\(converted.output)")
        let traditional = try #require(TLSCertificate.readFile(directory + "/traditional.key"))
        let label = keyArguments[1] == "ec" ? "EC PRIVATE KEY" : "RSA PRIVATE KEY"
        #expect(PEMBlocks.decode(traditional, label: label).count == 1)
        let settings = TLSServerSettings(offersHTTP2: false)
        for key in [files.key, directory + "/traditional.key"] {
            let certificate = try TLSCertificate(name: "forms", certificatePath: files.certificate, keyPath: key)
            let pair = try #require(certificate.keyPair(settings.keyPairs))
            #expect(X509_check_private_key(pair.leaf, pair.key) == 1)
            let (der, verified, _) = try served(certificate, serverName: "forms.example.org", caFile: files.certificate, settings: settings)
            #expect(der == (try fileDER(files.certificate)))
            #expect(verified)
        }
        let other = try selfSigned("other.example.org", in: directory, keyArguments: keyArguments)
        #expect(throws: TLSError.self) { try TLSCertificate(name: "mixed", certificatePath: files.certificate, keyPath: other.key) }
    }

    @Test func aPKCS8KeysTypeIsReadFromItsAlgorithmAndAnyTruncationIsNone() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var ders: [String: [UInt8]] = [:]
        for (type, arguments) in [("EC", ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]), ("RSA", ["-newkey", "rsa:2048"]),
                                  ("ED25519", ["-newkey", "ed25519"])] {
            let files = try selfSigned("\(type.lowercased()).example.org", in: directory, keyArguments: arguments)
            ders[type] = try #require(PEMBlocks.decode(try #require(TLSCertificate.readFile(files.key)), label: "PRIVATE KEY").first)
        }
        #expect(KeyReader.pkcs8Type(try #require(ders["EC"])) == "EC")
        #expect(KeyReader.pkcs8Type(try #require(ders["RSA"])) == "RSA")
        #expect(KeyReader.pkcs8Type(try #require(ders["ED25519"])) == nil)
        // Cut anywhere, a key names no type (the outer length no longer holds), and nothing is
        // read past its end.
        let ec = try #require(ders["EC"])
        for count in 0..<ec.count { #expect(KeyReader.pkcs8Type(Array(ec[0..<count])) == nil, "\(count) bytes") }
        #expect(KeyReader.pkcs8Type([0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF]) == nil)
    }

    @Test func aCASignedLeafIsParsedThisWayAndVerifiesWithItsChain() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let chainFile = directory + "/site.crt"
        let leaf = try #require(TLSCertificate.readFile(TestPKI.certificate))
        let ca = try #require(TLSCertificate.readFile(TestPKI.caFile))
        #expect(FileManager.default.createFile(atPath: chainFile, contents: Data(leaf + ca)))
        let certificate = try TLSCertificate(name: "site", certificatePath: chainFile, keyPath: TestPKI.key)
        let settings = TLSServerSettings(offersHTTP2: false)
        let pair = try #require(certificate.keyPair(settings.keyPairs))
        #expect(X509_get0_pubkey(pair.leaf) == pair.key)
        // Signature information is what OpenSSL's security level checks for a leaf that is not
        // self-signed; it must be there although the fingerprint could not be computed.
        var secbits: Int32 = 0
        #expect(X509_get_signature_info(pair.leaf, nil, nil, &secbits, nil) == 1)
        #expect(secbits == 128)
        for tls12 in [false, true] {
            let (der, verified, _) = try served(certificate, serverName: "www.example.com", caFile: TestPKI.caFile, settings: settings, tls12: tls12)
            #expect(der == (try fileDER(TestPKI.certificate)))
            #expect(verified)
        }
    }

    @Test func anEd25519KeyAndALeafThatWouldNotEncodeBackAreParsedAsBeforeAndServedTheSame() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // One key, its point compressed in the certificate and not in the key file: the leaf's
        // key would encode back uncompressed, so not as the file holds it.
        #expect(try OpenSSLTool.run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "plain.key"], in: directory).status == 0)
        #expect(try OpenSSLTool.run(["ec", "-in", "plain.key", "-conv_form", "compressed", "-out", "compressed.key"], in: directory).status == 0)
        let compressed = try selfSigned("compressed.example.org", in: directory, keyArguments: ["-key", "compressed.key"])
        let ed = try selfSigned("ed.example.org", in: directory, keyArguments: ["-newkey", "ed25519"])
        let cases = [
            ("ed.example.org", ed.certificate, ed.key),
            ("compressed.example.org", compressed.certificate, directory + "/plain.key"),
        ]
        for (name, certificatePath, keyPath) in cases {
            let certificate = try TLSCertificate(name: name, certificatePath: certificatePath, keyPath: keyPath)
            let settings = TLSServerSettings(offersHTTP2: false)
            let pair = try #require(certificate.keyPair(settings.keyPairs), "\(name)")
            #expect(X509_get0_pubkey(pair.leaf) != pair.key, "\(name): parsed the usual way")
            #expect(X509_check_private_key(pair.leaf, pair.key) == 1, "\(name)")
            let (der, verified, _) = try served(certificate, serverName: name, caFile: certificatePath, settings: settings)
            #expect(der == (try fileDER(certificatePath)), "\(name)")
            #expect(verified, "\(name)")
        }
    }

    @Test func aLeafWhosePointIsCompressedInBothFilesIsParsedThisWay() throws {
        let directory = try OpenSSLTool.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try OpenSSLTool.run(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "plain.key"], in: directory).status == 0)
        #expect(try OpenSSLTool.run(["ec", "-in", "plain.key", "-conv_form", "compressed", "-out", "compressed.key"], in: directory).status == 0)
        let files = try selfSigned("compressed.example.org", in: directory, keyArguments: ["-key", "compressed.key"])
        let certificate = try TLSCertificate(name: "compressed", certificatePath: files.certificate, keyPath: files.key)
        let settings = TLSServerSettings(offersHTTP2: false)
        let pair = try #require(certificate.keyPair(settings.keyPairs))
        #expect(X509_get0_pubkey(pair.leaf) == pair.key, "the key file keeps the point's form, so the leaf encodes back")
        let (der, verified, _) = try served(certificate, serverName: "compressed.example.org", caFile: files.certificate, settings: settings)
        #expect(der == (try fileDER(files.certificate)))
        #expect(verified)
    }
}

/// Keys several certificates share are parsed once while in use (``SharedPrivateKeys``).
struct SharedPrivateKeysTests {
    @Test func sitesWithOneKeyShareOneParsedKeyAndEachIsServedItsOwnCertificate() throws {
        // ManySites gives every site's certificate the same key.
        let sites = try ManySites()
        var certificates: [TLSCertificate] = []
        for i in 0..<3 {
            try sites.addCertificate(name: "site\(i)", dnsNames: [ManySites.host(i)])
            certificates.append(try TLSCertificate(name: "site\(i)", certificatePath: sites.certs + "/site\(i).crt", keyPath: sites.certs + "/site\(i).key"))
        }
        let settings = TLSServerSettings(offersHTTP2: false)
        let pairs = try certificates.map { try #require($0.keyPair(settings.keyPairs)) }
        #expect(pairs[1].key == pairs[0].key && pairs[2].key == pairs[0].key, "one parsed key")
        #expect(pairs[1].leaf != pairs[0].leaf)
        #expect(settings.keyPairs.sharedKeys.count == 1)
        let store = CertificateStore(certificates: certificates, defaultName: "site0")
        for i in 0..<3 {
            let (a, b) = TLSStreamTests.pair()
            defer { close(a); close(b) }
            let server = try TLSStream(server: settings, certificates: store, fd: a)
            let client = try TLSStream(client: TLSClientContext(verifyPeer: false, alpn: ["http/1.1"]), fd: b, serverName: ManySites.host(i))
            #expect(TLSStreamTests.handshake(server, client) == (.done(0), .done(0)))
            let peer = try #require(SSL_get1_peer_certificate(client.ssl))
            defer { X509_free(peer) }
            let pem = try #require(TLSCertificate.readFile(sites.certs + "/site\(i).crt"))
            let file = try #require(PEMBlocks.decode(pem).first)
            #expect(KeyReader.encode { i2d_X509(peer, $0) } == file, "site \(i)")
        }
    }

    @Test func atMostCapacityKeysAreKeptTheLeastRecentlyUsedGoingFirst() throws {
        let keys = SharedPrivateKeys()
        let ders: [[UInt8]] = try (0...SharedPrivateKeys.capacity).map { _ in
            let key = try #require(aasa_EVP_EC_gen_p256())
            defer { EVP_PKEY_free(key) }
            return try #require(KeyReader.encode { i2d_PrivateKey(key, $0) })
        }
        var parses = 0
        func get(_ der: [UInt8]) throws {
            let key = try #require(keys.key(der) { der in
                parses += 1
                return der.withUnsafeBufferPointer { buffer in
                    var p = buffer.baseAddress
                    return aasa_d2i_builtin_private_key(aasa_evp_pkey_ec(), &p, buffer.count)
                }
            })
            EVP_PKEY_free(key)
        }
        for der in ders.dropLast() { try get(der) }
        #expect(keys.count == SharedPrivateKeys.capacity)
        try get(ders[0])
        #expect(parses == SharedPrivateKeys.capacity, "kept, not parsed again")
        try get(ders[SharedPrivateKeys.capacity])
        #expect(keys.count == SharedPrivateKeys.capacity)
        try get(ders[0])
        #expect(parses == SharedPrivateKeys.capacity + 1, "used last, so kept")
        try get(ders[1])
        #expect(parses == SharedPrivateKeys.capacity + 2, "the least recently used went first")
    }
}
