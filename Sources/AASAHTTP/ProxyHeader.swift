/// The PROXY protocol header a load balancer puts before a connection's first byte, versions 1
/// (text) and 2 (binary), as specified by HAProxy (proxy-protocol.txt). Bytes in, a result out.
///
/// The parser is strict: anything that is not a complete, valid header is `.invalid`, and the
/// server closes the connection. It never asks for more bytes than the header can hold, so a
/// caller may consume everything it was given whenever the answer is `.needMore`.
public enum ProxyHeader {
    /// Where the client really is.
    public enum Source: Sendable, Equatable {
        case inet(host: String, port: Int)
        /// A UNIX socket on the balancer's side (v2 only).
        case unix(path: String)
        /// `LOCAL` (a health check from the balancer itself) or `UNKNOWN`/`UNSPEC`: use the
        /// connection's own peer address.
        case local
    }

    public enum Result: Sendable, Equatable {
        case needMore
        /// A complete header of `length` bytes.
        case header(Source, length: Int)
        case invalid(String)
    }

    /// v1 lines are at most 107 bytes, CRLF included.
    public static let maximumV1Length = 107
    static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    static let v1Prefix: [UInt8] = Array("PROXY ".utf8)

    public static func parse(_ bytes: UnsafeRawBufferPointer) -> Result {
        let b = bytes.bindMemory(to: UInt8.self)
        guard let first = b.first else { return .needMore }
        if first == 0x0D { return parseV2(b) }
        if first == UInt8(ascii: "P") { return parseV1(b) }
        return .invalid("no PROXY protocol header")
    }

    // MARK: - Version 1

    private static func parseV1(_ b: UnsafeBufferPointer<UInt8>) -> Result {
        let prefixLength = min(b.count, v1Prefix.count)
        guard b[0..<prefixLength].elementsEqual(v1Prefix[0..<prefixLength]) else { return .invalid("malformed PROXY v1 header") }
        let limit = min(b.count, maximumV1Length)
        var lineEnd: Int?
        for i in 0..<limit where b[i] == 0x0A {
            guard i > 0, b[i - 1] == 0x0D else { return .invalid("PROXY v1 header must end with CRLF") }
            lineEnd = i - 1
            break
        }
        guard let end = lineEnd else {
            return b.count >= maximumV1Length ? .invalid("PROXY v1 header longer than 107 bytes") : .needMore
        }
        let line = String(decoding: b[v1Prefix.count..<end], as: UTF8.self)
        let fields = line.split(separator: " ", omittingEmptySubsequences: false)
        switch fields.first {
        case "UNKNOWN":
            return .header(.local, length: end + 2)
        case "TCP4", "TCP6":
            guard fields.count == 5 else { return .invalid("PROXY v1 header needs protocol, two addresses and two ports") }
            let v6 = fields[0] == "TCP6"
            guard v6 ? isIPv6(fields[1]) && isIPv6(fields[2]) : isIPv4(fields[1]) && isIPv4(fields[2]) else {
                return .invalid("invalid address in PROXY v1 header")
            }
            guard let sourcePort = port(fields[3]), port(fields[4]) != nil else { return .invalid("invalid port in PROXY v1 header") }
            return .header(.inet(host: String(fields[1]), port: sourcePort), length: end + 2)
        default:
            return .invalid("unknown protocol in PROXY v1 header")
        }
    }

    private static func port(_ s: Substring) -> Int? {
        guard !s.isEmpty, s.count <= 5, s.allSatisfy({ $0.isASCII && $0.isNumber }), !(s.count > 1 && s.hasPrefix("0")),
              let p = Int(s), p <= 65535 else { return nil }
        return p
    }

    static func isIPv4(_ s: Substring) -> Bool {
        let parts = s.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { p in
            !p.isEmpty && p.count <= 3 && p.allSatisfy { $0.isASCII && $0.isNumber } && !(p.count > 1 && p.hasPrefix("0")) && Int(p)! <= 255
        }
    }

    static func isIPv6(_ s: Substring) -> Bool {
        guard s.count >= 2, s.count <= 45, s.contains(":") else { return false }
        var groups = 0
        var compressed = false
        var rest = Substring(s)
        if rest.hasPrefix("::") { compressed = true; rest = rest.dropFirst(2) }
        if rest.isEmpty { return true }
        let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
        for (i, part) in parts.enumerated() {
            if part.isEmpty {
                // One "::" at most, and only in the middle or at the end.
                if compressed { return false }
                compressed = true
                continue
            }
            if i == parts.count - 1, part.contains(".") {
                guard isIPv4(part) else { return false }
                groups += 2
                continue
            }
            guard part.count <= 4, part.allSatisfy(\.isHexDigit) else { return false }
            groups += 1
        }
        return compressed ? groups < 8 : groups == 8
    }

    // MARK: - Version 2

    private static func parseV2(_ b: UnsafeBufferPointer<UInt8>) -> Result {
        let prefixLength = min(b.count, v2Signature.count)
        guard b[0..<prefixLength].elementsEqual(v2Signature[0..<prefixLength]) else { return .invalid("malformed PROXY v2 signature") }
        guard b.count >= 16 else { return .needMore }
        let versionCommand = b[12]
        guard versionCommand >> 4 == 2 else { return .invalid("PROXY v2 header with version \(versionCommand >> 4)") }
        let command = versionCommand & 0x0F
        guard command <= 1 else { return .invalid("PROXY v2 header with unknown command \(command)") }
        let family = b[13]
        let length = Int(b[14]) << 8 | Int(b[15])
        let total = 16 + length
        guard b.count >= total else { return .needMore }
        if command == 0 { return .header(.local, length: total) } // LOCAL: the balancer's own connection
        let addresses = UnsafeBufferPointer(rebasing: b[16..<total])
        switch family {
        case 0x11, 0x12: // TCP or UDP over IPv4
            guard length >= 12 else { return .invalid("PROXY v2 IPv4 address block too short") }
            let host = addresses[0..<4].map(String.init).joined(separator: ".")
            return tlvsValid(addresses, from: 12) ? .header(.inet(host: host, port: Int(addresses[8]) << 8 | Int(addresses[9])), length: total)
                : .invalid("malformed PROXY v2 TLV")
        case 0x21, 0x22: // TCP or UDP over IPv6
            guard length >= 36 else { return .invalid("PROXY v2 IPv6 address block too short") }
            return tlvsValid(addresses, from: 36) ? .header(.inet(host: ipv6Text(addresses[0..<16]), port: Int(addresses[32]) << 8 | Int(addresses[33])), length: total)
                : .invalid("malformed PROXY v2 TLV")
        case 0x31, 0x32: // UNIX stream or datagram
            guard length >= 216 else { return .invalid("PROXY v2 UNIX address block too short") }
            let path = String(decoding: addresses[0..<108].prefix { $0 != 0 }, as: UTF8.self)
            return tlvsValid(addresses, from: 216) ? .header(.unix(path: path), length: total) : .invalid("malformed PROXY v2 TLV")
        case 0x00:
            return .header(.local, length: total)
        default:
            return .invalid("PROXY v2 header with unknown address family 0x\(String(family, radix: 16))")
        }
    }

    /// TLVs are skipped, but their lengths must add up exactly to the end of the header.
    private static func tlvsValid(_ block: UnsafeBufferPointer<UInt8>, from start: Int) -> Bool {
        var i = start
        while i < block.count {
            guard i + 3 <= block.count else { return false }
            i += 3 + (Int(block[i + 1]) << 8 | Int(block[i + 2]))
        }
        return i == block.count
    }

    /// RFC 5952 text for an IPv6 address: lower case, the longest run of zero groups as `::`.
    static func ipv6Text(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        let a = Array(bytes)
        let groups = (0..<8).map { Int(a[2 * $0]) << 8 | Int(a[2 * $0 + 1]) }
        if groups[0..<5].allSatisfy({ $0 == 0 }) && groups[5] == 0xFFFF {
            return "\(a[12]).\(a[13]).\(a[14]).\(a[15])" // IPv4-mapped: the IPv4 client it is
        }
        var bestStart = -1, bestLength = 0, runStart = -1
        for i in 0...8 {
            if i < 8 && groups[i] == 0 {
                if runStart < 0 { runStart = i }
            } else if runStart >= 0 {
                if i - runStart > bestLength && i - runStart >= 2 { bestStart = runStart; bestLength = i - runStart }
                runStart = -1
            }
        }
        func hex(_ range: Range<Int>) -> String { groups[range].map { String($0, radix: 16) }.joined(separator: ":") }
        if bestStart < 0 { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }
}
