import Testing
@testable import AASACore

@Suite struct WebOriginTests {
    @Test(arguments: ["https://example.com", "https://example.com:8443", "https://EXAMPLE.com", "https://a-b.c_d.example",
                      "https://[::1]:8443", "https://127.0.0.1", "https://xn--bcher-kva.example", "https://localhost"])
    func anOriginIsSchemeHostAndPort(origin: String) {
        #expect(WebOrigin.check(origin, schemes: ["https"]) == .valid)
    }

    @Test(arguments: [
        ("http://example.com", "scheme"), ("HTTPS://example.com", "lower case"), ("example.com", "expected"),
        ("https://", "no host"), ("https://user@example.com", "user info"), ("https://example.com/a", "path"),
        ("https://example.com?x=1", "query"), ("https://example.com/?x=1", "query"), ("https://example.com#f", "fragment"),
        ("https://example.com:0", "port"), ("https://example.com:65536", "port"), ("https://example.com:", "port"),
        ("https://bücher.example", "punycode"), ("https://example.com.", "dot"), ("https://-a.example", "valid host"),
        ("https://a..example", "valid host"), ("https://[::1", "']'"), (" https://example.com", "white space"),
    ])
    func anythingElseIsRefusedWithTheReason(origin: String, reason: String) {
        guard case .invalid(let why) = WebOrigin.check(origin, schemes: ["https"]) else {
            Issue.record("\(origin) was accepted")
            return
        }
        #expect(why.contains(reason), "\(why)")
    }

    @Test func aTrailingSlashIsReportedApart() {
        #expect(WebOrigin.check("https://example.com/", schemes: ["https"]) == .trailingSlash)
        #expect(WebOrigin.check("http://example.com:8080/", schemes: ["https", "http"]) == .trailingSlash)
    }

    @Test func packageNamesAreJavaStyleIdentifiers() {
        for good in ["com.example.app", "com.example_1.App2", "a.b"] {
            #expect(AndroidPackageName.problem(good) == nil, "\(good)")
        }
        for bad in ["example", "com..example", "com.1example", "com.example-app", "com.example.", ".com.example", "com.exämple"] {
            #expect(AndroidPackageName.problem(bad) != nil, "\(bad)")
        }
    }

    @Test func fingerprintsAre32UpperCaseHexPairs() {
        #expect(CertificateFingerprint.check(fingerprint) == .valid)
        #expect(CertificateFingerprint.check(fingerprint.lowercased()) == .lowercase)
        let sha1 = "DA:39:A3:EE:5E:6B:4B:0D:32:55:BF:EF:95:60:18:90:AF:D8:07:09"
        #expect(CertificateFingerprint.check(sha1) == .invalid("it has 20 byte pairs, a SHA-1 fingerprint; Android compares SHA-256 fingerprints (32 pairs)"))
        guard case .invalid(let noColons) = CertificateFingerprint.check(fingerprint.replacing(":", with: "")) else {
            Issue.record("accepted without colons")
            return
        }
        #expect(noColons.contains("joined by ':'"))
        #expect(CertificateFingerprint.check(fingerprint.replacing(":", with: "-")) != .valid)
        #expect(CertificateFingerprint.check(fingerprint + ":") != .valid)
        #expect(CertificateFingerprint.check("GG" + fingerprint.dropFirst(2)) != .valid)
    }
}
