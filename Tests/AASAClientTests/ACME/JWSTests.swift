import AASACore
import Foundation
import TestCertificates
import Testing
@testable import AASAClient

@Suite struct ACMEJWSTests {
    @Test func base64URLHasNoPaddingAndTheURLAlphabet() {
        #expect(Base64URL.encode("f") == "Zg")
        #expect(Base64URL.encode("foobar") == "Zm9vYmFy")
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64URL.decode("+/8=") == [0xFB, 0xFF], "standard base64, as some CAs print EAB keys")
        #expect(Base64URL.decode("Zm9v!") == nil)
    }

    @Test func theThumbprintOfRFC7638sExampleKeyIsTheOneTheRFCGives() {
        // RFC 7638 §3.1.
        let n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        let jwk = JWK.canonical(["n": n, "kty": "RSA", "e": "AQAB"])
        #expect(jwk.hasPrefix("{\"e\":\"AQAB\",\"kty\":\"RSA\",\"n\":\"0vx7"))
        #expect(JWK.thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
    }

    @Test func theJWKCarriesTheSamePublicPointOpenSSLReadsFromTheKey() throws {
        let dir = try OpenSSLTool.temporaryDirectory()
        let key = try P256Key.generate()
        try OpenSSLTool.write(try key.privateKeyPEM(), dir + "/key.pem")
        let r = try OpenSSLTool.run(["pkey", "-in", "key.pem", "-pubout", "-outform", "DER", "-out", "pub.der"], in: dir)
        #expect(r.status == 0, "\(r.output)")
        // SubjectPublicKeyInfo for P-256 ends with the 65-byte uncompressed point.
        let spki = [UInt8](try Data(contentsOf: URL(fileURLWithPath: dir + "/pub.der")))
        let point = Array(spki.suffix(65))
        let (x, y) = key.coordinates
        #expect(point == [4] + x + y)
        let jwk = try #require(JSONParser.parse(Array(key.jwk.utf8)).value)
        #expect(jwk["kty"]?.stringValue == "EC")
        #expect(jwk["crv"]?.stringValue == "P-256")
        #expect(Base64URL.decode(jwk["x"]?.stringValue ?? "") == x)
        #expect(Base64URL.decode(jwk["y"]?.stringValue ?? "") == y)
        #expect(key.jwk.firstIndex(of: " ") == nil, "RFC 7638: no white space")
    }

    @Test func aSignedRequestVerifiesWithOpenSSLAndNamesItsNonceAndURL() throws {
        let dir = try OpenSSLTool.temporaryDirectory()
        let key = try P256Key.generate()
        let jws = try JWS.sign(payload: #"{"termsOfServiceAgreed":true}"#, url: "https://ca.test/new-acct", nonce: "n0nce", key: key, signer: .jwk)
        let json = try #require(JSONParser.parse(jws).value)
        let protected = try #require(json["protected"]?.stringValue)
        let payload = try #require(json["payload"]?.stringValue)
        let signature = try #require(Base64URL.decode(json["signature"]?.stringValue ?? ""))
        #expect(signature.count == 64, "ES256 is r || s, 32 bytes each (RFC 7518 §3.4)")
        let header = try #require(decodedJSON(protected))
        #expect(header["alg"]?.stringValue == "ES256")
        #expect(header["nonce"]?.stringValue == "n0nce")
        #expect(header["url"]?.stringValue == "https://ca.test/new-acct")
        #expect(header["jwk"]?["x"]?.stringValue != nil)
        #expect(header["kid"] == nil)
        #expect(String(decoding: Base64URL.decode(payload) ?? [], as: UTF8.self) == #"{"termsOfServiceAgreed":true}"#)

        try OpenSSLTool.write(try key.privateKeyPEM(), dir + "/key.pem")
        _ = try OpenSSLTool.run(["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"], in: dir)
        try OpenSSLTool.write(Array("\(protected).\(payload)".utf8), dir + "/signed")
        try OpenSSLTool.write(derSignature(raw: signature), dir + "/sig.der")
        let r = try OpenSSLTool.run(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "signed"], in: dir)
        #expect(r.output.contains("Verified OK"), "\(r.output)")

        // A tampered payload does not verify.
        try OpenSSLTool.write(Array("\(protected).\(payload)x".utf8), dir + "/signed")
        #expect(try !OpenSSLTool.run(["dgst", "-sha256", "-verify", "pub.pem", "-signature", "sig.der", "signed"], in: dir).output.contains("Verified OK"))
    }

    @Test func postAsGetHasAnEmptyPayloadAndTheAccountURLAsKid() throws {
        let key = try P256Key.generate()
        let jws = try JWS.sign(payload: nil, url: "https://ca.test/order/1", nonce: "n", key: key, signer: .kid("https://ca.test/acct/7"))
        let json = try #require(JSONParser.parse(jws).value)
        #expect(json["payload"]?.stringValue == "")
        let header = try #require(decodedJSON(json["protected"]?.stringValue ?? ""))
        #expect(header["kid"]?.stringValue == "https://ca.test/acct/7")
        #expect(header["jwk"] == nil)
    }

    @Test func theExternalAccountBindingIsAnHS256MACOverTheAccountKeyThatOpenSSLComputesToo() throws {
        let dir = try OpenSSLTool.temporaryDirectory()
        let key = try P256Key.generate()
        let macKey = try #require(ACMEConfiguration.decodeMACKey("zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W"))
        let eab = JWS.externalAccountBinding(keyID: "kid-1", macKey: macKey, accountJWK: key.jwk, url: "https://ca.test/new-acct")
        let json = try #require(JSONParser.parse(Array(eab.utf8)).value)
        let protected = try #require(json["protected"]?.stringValue)
        let payload = try #require(json["payload"]?.stringValue)
        let header = try #require(decodedJSON(protected))
        #expect(header["alg"]?.stringValue == "HS256")
        #expect(header["kid"]?.stringValue == "kid-1")
        #expect(header["url"]?.stringValue == "https://ca.test/new-acct")
        #expect(header["nonce"] == nil, "RFC 8555 §7.3.4: no nonce in the inner JWS")
        #expect(String(decoding: Base64URL.decode(payload) ?? [], as: UTF8.self) == key.jwk)
        try OpenSSLTool.write(Array("\(protected).\(payload)".utf8), dir + "/signed")
        let r = try OpenSSLTool.run(["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:" + hex(macKey), "signed"], in: dir)
        let expected = hex(try #require(Base64URL.decode(json["signature"]?.stringValue ?? "")))
        #expect(r.output.contains(expected), "\(r.output) vs \(expected)")
    }

    @Test func aProblemDocumentBecomesOneLineWithItsSubproblems() throws {
        let text = #"{"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"Some identifiers were rejected","status":400,"subproblems":[{"type":"urn:ietf:params:acme:error:malformed","detail":"Invalid underscore in DNS name \"_example.org\"","identifier":{"type":"dns","value":"_example.org"}}]}"#
        let problem = try #require(ACMEProblem(json: JSONParser.parse(Array(text.utf8)).value))
        #expect(problem.status == 400)
        #expect(problem.description == #"urn:ietf:params:acme:error:rejectedIdentifier: Some identifiers were rejected (subproblems: _example.org: urn:ietf:params:acme:error:malformed: Invalid underscore in DNS name "_example.org")"#)
        #expect(ACMEProblem(json: JSONParser.parse(Array("{}".utf8)).value) == nil)
    }

    @Test func retriesBackOffFromTheBaseToSixHoursAndHonourRetryAfter() {
        let c = ACMEConfiguration()
        #expect(c.retryDelay(failures: 1, retryAfterSeconds: nil) == 60_000)
        #expect(c.retryDelay(failures: 2, retryAfterSeconds: nil) == 120_000)
        #expect(c.retryDelay(failures: 5, retryAfterSeconds: nil) == 960_000)
        #expect(c.retryDelay(failures: 40, retryAfterSeconds: nil) == 6 * 3_600_000)
        #expect(c.retryDelay(failures: 1, retryAfterSeconds: 600) == 600_000)
        #expect(ACMEClient.retryAfterSeconds("120") == 120)
        #expect(ACMEClient.retryAfterSeconds(" 5 ") == 5)
        #expect(ACMEClient.retryAfterSeconds("soon") == nil)
    }

    /// A CA's `Retry-After` reaches no arithmetic unclamped: Swift traps on overflow, and one
    /// header once stopped the whole server.
    @Test func aHugeOrDistantRetryAfterIsADay() {
        #expect(ACMEClient.retryAfterSeconds("9999999999999999") == 86_400)
        #expect(ACMEClient.retryAfterSeconds(String(repeating: "9", count: 400)) == 86_400)
        #expect(ACMEClient.retryAfterSeconds("Fri, 31 Dec 9999 23:59:59 GMT") == 86_400)
        #expect(ACMEClient.retryAfterSeconds("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(ACMEClient.retryAfterSeconds("-5") == nil)
        let c = ACMEConfiguration()
        #expect(c.retryDelay(failures: 1, retryAfterSeconds: Int.max) == 86_400_000)
        #expect(c.retryDelay(failures: 1, retryAfterSeconds: Int.min) == 60_000)
    }

    @Test func aRenewalIsNeverPutOffPastHalfTheTimeItsCertificateHasLeft() {
        let c = ACMEConfiguration()
        #expect(c.retryDelay(failures: 1, retryAfterSeconds: 86_400, expiresInMilliseconds: 10 * 3_600_000) == 5 * 3_600_000)
        #expect(c.retryDelay(failures: 1, retryAfterSeconds: 86_400, expiresInMilliseconds: 30 * 86_400_000) == 86_400_000)
        // Expired or about to: still at least the base, never a busy loop.
        #expect(c.retryDelay(failures: 9, retryAfterSeconds: nil, expiresInMilliseconds: -5_000) == 60_000)
    }
}

/// A base64url JWS part read as JSON.
private func decodedJSON(_ part: String) -> JSONValue? {
    Base64URL.decode(part).flatMap { JSONParser.parse($0).value }
}
