/// Checks Apple Pay's domain verification file, `apple-developer-merchantid-domain-association`.
///
/// Apple gives the merchant this file in the developer account (or a payment platform passes it
/// on) and its servers fetch `https://DOMAIN/.well-known/apple-developer-merchantid-domain-association`
/// to verify the domain ("Preparing merchant domains for verification", Apple Pay Web Merchant
/// Registration API). The content is Apple's and is compared as given, so it is served byte for
/// byte and only checked for what breaks it in transit: nothing there, too much, or bytes that
/// are not plain ASCII text (an editor's byte-order mark, a re-encoding, a binary file).
enum MerchantIDFile {
    static func diagnostics(_ bytes: [UInt8], map: SourceMap) -> [Diagnostic] {
        let start = SourcePosition(line: 1, column: 1)
        var out: [Diagnostic] = []
        let limit = AssociationFileKind.merchantID.maximumSize
        if bytes.count > limit {
            out.append(Diagnostic(.fileTooLarge, "the file is \(bytes.count) bytes; Apple's verification file is a few kilobytes and at most \(limit) bytes (64 KiB) are served",
                                  at: start, path: .root))
        }
        if bytes.allSatisfy(isWhiteSpace) {
            out.append(Diagnostic(.emptyFile, "the file is empty; it must hold the verification text Apple gave you, unchanged", at: start, path: .root))
            return out
        }
        if let i = bytes.firstIndex(where: { !(isWhiteSpace($0) || (0x21...0x7E).contains($0)) }) {
            let what = bytes.starts(with: [0xEF, 0xBB, 0xBF]) && i == 0
                ? "a UTF-8 byte-order mark"
                : "byte 0x\(hex(UInt32(bytes[i]), width: 2))"
            out.append(Diagnostic(.merchantIDInvalidByte,
                                  "\(what) is not printable ASCII; Apple's file is plain ASCII text and must be served exactly as downloaded",
                                  at: map.position(of: i), path: .root))
        }
        return out
    }

    /// Space, tab, line feed, vertical tab, form feed and carriage return.
    private static func isWhiteSpace(_ b: UInt8) -> Bool {
        b == 0x20 || (0x09...0x0D).contains(b)
    }
}
