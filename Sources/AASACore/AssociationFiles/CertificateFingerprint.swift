/// SHA-256 certificate fingerprints as `keytool -printcert` and Google's API write them:
/// 32 bytes as upper-case hex pairs joined by `:` ("CertificateInfo", digitalassetlinks v1 reference).
enum CertificateFingerprint {
    enum Result: Equatable {
        case valid
        case lowercase
        case invalid(String)
    }

    static func check(_ text: String) -> Result {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 1, text.utf8.count == 64, text.utf8.allSatisfy(isASCIIHexDigit) {
            return .invalid("write the 32 bytes as hex pairs joined by ':' (14:6D:E9:…)")
        }
        guard parts.allSatisfy({ $0.utf8.count == 2 && $0.utf8.allSatisfy(isASCIIHexDigit) }) else {
            return .invalid("expected 32 hex byte pairs joined by ':' (14:6D:E9:…)")
        }
        guard parts.count == 32 else {
            if parts.count == 20 { return .invalid("it has 20 byte pairs, a SHA-1 fingerprint; Android compares SHA-256 fingerprints (32 pairs)") }
            return .invalid("it has \(parts.count) byte pairs; a SHA-256 fingerprint has 32")
        }
        if text.utf8.contains(where: { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "f") }) { return .lowercase }
        return .valid
    }
}
