#if canImport(Glibc)
import Glibc
#endif

/// The few fields of an X.509 certificate (RFC 5280 §4.1) the server indexes, read from its DER
/// without OpenSSL: OpenSSL 3 decodes the public key of every certificate it parses through its
/// provider framework, whose global locks were a quarter of a start-up at 100 000 certificates.
/// Anything this reader does not understand returns nil, and the caller asks OpenSSL instead.
package struct CertificateDER {
    package var dnsNames: [String]
    package var notBefore: Int
    package var notAfter: Int
    /// basicConstraints says `cA: TRUE` (RFC 5280 §4.2.1.9): a CA, never a serving certificate.
    package var isCA = false
    /// The SubjectPublicKeyInfo, as encoded: compared with the key's.
    var publicKeyInfo: ArraySlice<UInt8>

    package init?(_ der: [UInt8]) {
        var top = DERReader(der[...])
        guard var certificate = top.read(tag: 0x30)?.reader, var tbs = certificate.read(tag: 0x30)?.reader else { return nil }
        if tbs.peek == 0xA0 { _ = tbs.read(tag: 0xA0) }            // version
        guard tbs.read(tag: 0x02) != nil,                           // serialNumber
              tbs.read(tag: 0x30) != nil,                           // signature
              tbs.read(tag: 0x30) != nil,                           // issuer
              var validity = tbs.read(tag: 0x30)?.reader,
              let notBefore = validity.readTime(), let notAfter = validity.readTime(),
              tbs.read(tag: 0x30) != nil,                           // subject
              let spki = tbs.read(tag: 0x30) else { return nil }
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.publicKeyInfo = spki.whole
        var names: [String] = []
        while !tbs.isEmpty {
            guard let field = tbs.readAny() else { return nil }
            // [3] EXPLICIT Extensions; [1] and [2] are unique identifiers, skipped.
            guard field.tag == 0xA3 else { continue }
            var wrapper = field.reader
            guard var extensions = wrapper.read(tag: 0x30)?.reader else { return nil }
            while !extensions.isEmpty {
                guard var ext = extensions.read(tag: 0x30)?.reader, let oid = ext.read(tag: 0x06) else { return nil }
                if ext.peek == 0x01 { _ = ext.read(tag: 0x01) }     // critical
                guard let value = ext.read(tag: 0x04) else { return nil }
                // 2.5.29.19 basicConstraints: SEQUENCE { cA BOOLEAN DEFAULT FALSE, pathLen INTEGER OPTIONAL }
                if Array(oid.content) == [0x55, 0x1D, 0x13] {
                    var inner = value.reader
                    guard var constraints = inner.read(tag: 0x30)?.reader else { return nil }
                    if constraints.peek == 0x01, let flag = constraints.read(tag: 0x01) {
                        isCA = flag.content.first.map { $0 != 0 } ?? false
                    }
                    continue
                }
                // 2.5.29.17 subjectAltName
                guard Array(oid.content) == [0x55, 0x1D, 0x11] else { continue }
                var inner = value.reader
                guard var general = inner.read(tag: 0x30)?.reader else { return nil }
                while !general.isEmpty {
                    guard let name = general.readAny() else { return nil }
                    // [2] IMPLICIT IA5String dNSName
                    if name.tag == 0x82 {
                        guard name.content.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
                        names.append(String(decoding: name.content, as: UTF8.self).lowercased())
                    }
                }
            }
        }
        dnsNames = names
    }
}

/// Definite-length DER, tag by tag (single-byte tags: all that a certificate's fields use).
package struct DERReader {
    package struct Element {
        package var tag: UInt8
        package var content: ArraySlice<UInt8>
        /// Tag, length and content.
        package var whole: ArraySlice<UInt8>
        package var reader: DERReader { DERReader(content) }
    }

    private var bytes: ArraySlice<UInt8>

    package init(_ bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    package var isEmpty: Bool { bytes.isEmpty }
    package var peek: UInt8? { bytes.first }

    mutating func readAny() -> Element? {
        var i = bytes.startIndex
        guard i < bytes.endIndex else { return nil }
        let tag = bytes[i]
        guard tag & 0x1F != 0x1F else { return nil }
        i += 1
        guard i < bytes.endIndex else { return nil }
        var length = Int(bytes[i])
        i += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 3, bytes.endIndex - i >= count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[i])
                i += 1
            }
        }
        guard bytes.endIndex - i >= length else { return nil }
        let element = Element(tag: tag, content: bytes[i..<(i + length)], whole: bytes[bytes.startIndex..<(i + length)])
        bytes = bytes[(i + length)...]
        return element
    }

    mutating package func read(tag: UInt8) -> Element? {
        guard peek == tag else { return nil }
        return readAny()
    }

    /// UTCTime (YYMMDDHHMMSSZ, RFC 5280 §4.1.2.5.1) or GeneralizedTime (YYYYMMDDHHMMSSZ) as
    /// seconds since 1970.
    mutating func readTime() -> Int? {
        guard let element = readAny(), element.tag == 0x17 || element.tag == 0x18 else { return nil }
        let digits = Array(element.content)
        let yearDigits = element.tag == 0x17 ? 2 : 4
        guard digits.count == yearDigits + 11, digits.last == UInt8(ascii: "Z"),
              digits.dropLast().allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        func number(_ at: Int, _ n: Int) -> Int { digits[at..<(at + n)].reduce(0) { $0 * 10 + Int($1 - 0x30) } }
        var year = number(0, yearDigits)
        if yearDigits == 2 { year += year < 50 ? 2000 : 1900 }
        var tm = Glibc.tm()
        tm.tm_year = Int32(year - 1900)
        tm.tm_mon = Int32(number(yearDigits, 2) - 1)
        tm.tm_mday = Int32(number(yearDigits + 2, 2))
        tm.tm_hour = Int32(number(yearDigits + 4, 2))
        tm.tm_min = Int32(number(yearDigits + 6, 2))
        tm.tm_sec = Int32(number(yearDigits + 8, 2))
        return Int(timegm(&tm))
    }
}

/// PEM blocks of one label, decoded (RFC 7468), in the order of the file.
package enum PEMBlocks {
    static package func decode(_ text: [UInt8], label: String = "CERTIFICATE") -> [[UInt8]] {
        let begin = Array("-----BEGIN \(label)-----".utf8)
        let end = Array("-----END \(label)-----".utf8)
        var out: [[UInt8]] = []
        var i = 0
        while out.count < 16, let start = find(begin, in: text, from: i) {
            let bodyStart = start + begin.count
            guard let stop = find(end, in: text, from: bodyStart) else { break }
            guard let der = base64(text[bodyStart..<stop]) else { return [] }
            out.append(der)
            i = stop + end.count
        }
        return out
    }

    /// Standard base64 (RFC 4648 §4) with the line breaks of PEM; nil on anything else.
    static func base64(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var failed = false
        let out = [UInt8](unsafeUninitializedCapacity: text.count * 3 / 4 + 3) { output, count in
            count = 0
            // The table's storage, fetched once: a global's accessor per byte was half the decode.
            base64Values.withUnsafeBufferPointer { table in text.withUnsafeBufferPointer { input in
                var buffer: UInt32 = 0
                var bits = 0
                var padding = 0
                for c in input {
                    let v = table[Int(c)]
                    if v < 64 {
                        guard padding == 0 else { failed = true; return }
                        buffer = buffer << 6 | UInt32(v)
                        bits += 6
                        if bits >= 8 {
                            bits -= 8
                            output[count] = UInt8(truncatingIfNeeded: buffer >> UInt32(bits))
                            count += 1
                        }
                    } else if v == pad {
                        padding += 1
                    } else if v != space {
                        failed = true
                        return
                    }
                }
            } }
        }
        return failed || out.isEmpty ? nil : out
    }

    private static let pad: UInt8 = 0xFE
    private static let space: UInt8 = 0xFD
    /// Each byte's 6-bit value; `pad` for `=`, `space` for whitespace, 0xFF for anything else.
    private static let base64Values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() { table[Int(c)] = UInt8(i) }
        table[Int(UInt8(ascii: "="))] = pad
        for c: UInt8 in [0x0A, 0x0D, 0x20, 0x09] { table[Int(c)] = space }
        return table
    }()

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard !needle.isEmpty, from >= 0, needle.count <= haystack.count else { return nil }
        return haystack.withUnsafeBufferPointer { h in
            needle.withUnsafeBufferPointer { n in
                var i = from
                while i + n.count <= h.count {
                    // memchr to the next candidate byte, memcmp for the rest.
                    guard let hit = memchr(h.baseAddress! + i, Int32(n[0]), h.count - n.count + 1 - i) else { return nil }
                    i = h.baseAddress!.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(h.baseAddress! + i, n.baseAddress!, n.count) == 0 { return i }
                    i += 1
                }
                return nil
            }
        }
    }
}
