/// The few DER encodings the ACME pieces write by hand (X.690 §8): a CSR's extension request
/// and the acmeIdentifier extension value. OpenSSL's stack macros cannot be called from Swift,
/// and these structures are small enough to spell out.
package enum DER {
    static package let sequence: UInt8 = 0x30
    static package let octetString: UInt8 = 0x04
    static let objectIdentifier: UInt8 = 0x06
    /// GeneralName's dNSName, `[2] IMPLICIT IA5String` (RFC 5280 §4.2.1.6).
    static package let dnsName: UInt8 = 0x82

    /// One tag-length-value, with the definite length form (§8.1.3).
    static package func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out = [tag]
        let n = content.count
        if n < 0x80 {
            out.append(UInt8(n))
        } else {
            var lengthBytes: [UInt8] = []
            var m = n
            while m > 0 { lengthBytes.insert(UInt8(m & 0xFF), at: 0); m >>= 8 }
            out.append(0x80 | UInt8(lengthBytes.count))
            out += lengthBytes
        }
        return out + content
    }

    /// id-ce-subjectAltName, 2.5.29.17.
    static let subjectAltNameOID: [UInt8] = [0x55, 0x1D, 0x11]

    /// `Extensions ::= SEQUENCE OF Extension` holding one non-critical subjectAltName with the
    /// given DNS names: the value of a CSR's extensionRequest attribute (RFC 2985 §5.4.2).
    static func subjectAltNameExtensions(_ names: [String]) -> [UInt8] {
        let generalNames = tlv(sequence, names.flatMap { tlv(dnsName, Array($0.utf8)) })
        let ext = tlv(sequence, tlv(objectIdentifier, subjectAltNameOID) + tlv(octetString, generalNames))
        return tlv(sequence, ext)
    }
}
