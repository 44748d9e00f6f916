import Testing
@testable import AASAHTTP

private func parse(_ bytes: [UInt8]) -> ProxyHeader.Result { bytes.withUnsafeBytes { ProxyHeader.parse($0) } }
private func parse(_ text: String) -> ProxyHeader.Result { parse(Array(text.utf8)) }

/// A v2 header: signature, version/command, family, length, then `body`.
private func v2(command: UInt8 = 1, family: UInt8, _ body: [UInt8]) -> [UInt8] {
    ProxyHeader.v2Signature + [0x20 | command, family, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
}

private let ipv4Block: [UInt8] = [203, 0, 113, 7, 10, 0, 0, 1, 0xC3, 0x50, 0x01, 0xBB] // 203.0.113.7:50000 -> 10.0.0.1:443

@Suite struct ProxyHeaderTests {
    @Test func readsVersion1() {
        let line = "PROXY TCP4 203.0.113.7 10.0.0.1 50000 443\r\n"
        #expect(parse(line + "GET / HTTP/1.1\r\n") == .header(.inet(host: "203.0.113.7", port: 50000), length: line.utf8.count))
        #expect(parse("PROXY TCP6 2001:db8::1 ::1 50000 443\r\n") == .header(.inet(host: "2001:db8::1", port: 50000), length: 38))
        #expect(parse("PROXY UNKNOWN\r\n") == .header(.local, length: 15))
        #expect(parse("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n") == .header(.local, length: 35))
    }

    @Test func readsVersion2WithEveryFamily() {
        #expect(parse(v2(family: 0x11, ipv4Block)) == .header(.inet(host: "203.0.113.7", port: 50000), length: 28))
        let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8] + Array(repeating: 0, count: 11) + [1] + Array(repeating: 0, count: 15) + [1] + [0xC3, 0x50, 0x01, 0xBB]
        #expect(parse(v2(family: 0x21, v6)) == .header(.inet(host: "2001:db8::1", port: 50000), length: 52))
        let path = Array("/run/lb.sock".utf8)
        let unix = path + Array(repeating: 0, count: 108 - path.count) + Array(repeating: 0, count: 108)
        #expect(parse(v2(family: 0x31, unix)) == .header(.unix(path: "/run/lb.sock"), length: 232))
        #expect(parse(v2(command: 0, family: 0x00, [])) == .header(.local, length: 16), "LOCAL, as in health checks")
        #expect(parse(v2(family: 0x00, [])) == .header(.local, length: 16))
    }

    @Test func skipsTLVsButChecksTheirLengths() {
        let tlvs: [UInt8] = [0x01, 0x00, 0x02, 0x68, 0x32, 0x04, 0x00, 0x00] // ALPN "h2", an empty NOOP
        #expect(parse(v2(family: 0x11, ipv4Block + tlvs)) == .header(.inet(host: "203.0.113.7", port: 50000), length: 36))
        guard case .invalid = parse(v2(family: 0x11, ipv4Block + [0x01, 0x00, 0x09, 0x00])) else { Issue.record("overlong TLV accepted"); return }
    }

    @Test func asksForMoreOnlyWhileEverythingSeenIsHeader() {
        let line = Array("PROXY TCP4 203.0.113.7 10.0.0.1 50000 443\r\n".utf8)
        for n in 0..<line.count { #expect(parse(Array(line[0..<n])) == .needMore) }
        let binary = v2(family: 0x11, ipv4Block)
        for n in 0..<binary.count { #expect(parse(Array(binary[0..<n])) == .needMore) }
    }

    @Test(arguments: [
        "GET / HTTP/1.1\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n", "PROXY TCP5 1.2.3.4 5.6.7.8 1 2\r\n",
        "PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n", "PROXY TCP4 1.2.3.4 5.6.7.8 01 2\r\n",
        "PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", "PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n", "PROXY TCP6 1:2:3 ::1 1 2\r\n",
        "PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n", "proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n",
        "PROXY TCP4 " + String(repeating: "1", count: 120) + "\r\n",
    ])
    func rejectsBadVersion1Headers(text: String) {
        guard case .invalid = parse(text) else { Issue.record("accepted \(text.debugDescription)"); return }
    }

    @Test func rejectsBadVersion2Headers() {
        var badVersion = v2(family: 0x11, ipv4Block)
        badVersion[12] = 0x11
        var badCommand = v2(family: 0x11, ipv4Block)
        badCommand[12] = 0x22
        var badSignature = v2(family: 0x11, ipv4Block)
        badSignature[5] = 0x01
        for bytes in [badVersion, badCommand, badSignature, v2(family: 0x11, [1, 2, 3]), v2(family: 0x21, ipv4Block), v2(family: 0x44, ipv4Block),
                      v2(family: 0x31, [UInt8](repeating: 0, count: 100))] {
            guard case .invalid = parse(bytes) else { Issue.record("accepted \(bytes)"); continue }
        }
        guard case .invalid = parse([0x16, 0x03, 0x01]) else { Issue.record("TLS accepted as PROXY"); return }
    }

    @Test func writesIPv6AddressesCanonically() {
        #expect(ProxyHeader.isIPv6("::"))
        #expect(ProxyHeader.isIPv6("::ffff:1.2.3.4"))
        #expect(!ProxyHeader.isIPv6("1::2::3"))
        let mapped: [UInt8] = Array(repeating: 0, count: 10) + [0xFF, 0xFF, 192, 0, 2, 1]
        #expect(mapped.withUnsafeBufferPointer { ProxyHeader.ipv6Text($0[0..<16]) } == "192.0.2.1")
    }
}
