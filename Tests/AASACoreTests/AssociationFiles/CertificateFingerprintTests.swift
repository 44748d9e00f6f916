import Testing
@testable import AASACore

@Suite struct CertificateFingerprintTests {
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
