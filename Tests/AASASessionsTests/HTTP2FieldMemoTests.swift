import AASAHTTP
import Testing
@testable import AASASessions

/// What the session remembers of a dynamic table entry (``FieldMemo``) is the entry's alone: an
/// entry evicted and replaced at the same index is read afresh, a field refused is refused at
/// every use, and a remembered field still has its place checked (RFC 9113 §8.2, §8.3).
private let protocolError: UInt32 = 0x1
/// `:method GET` and `:scheme https` from the static table, as clients send them.
private let getHTTPS: [UInt8] = [0x82, 0x87]
/// The dynamic table emptied, then its size set back (RFC 7541 §6.3): every entry evicted.
private let emptyTable: [UInt8] = [0x20] + Wire.integer(4_096, prefixBits: 5, first: 0x20)
private let path = Wire.literal(":path", "/.well-known/apple-app-site-association")

@Suite struct HTTP2FieldMemoTests {
    /// Sends each block as a new stream's whole request; returns the streams reset with
    /// PROTOCOL_ERROR, by position in `blocks`.
    private static func send(_ blocks: [[UInt8]], to server: ServerUnderTest) -> [Int] {
        server.receive(Wire.clientStart)
        var reset: [Int] = []
        for (n, block) in blocks.enumerated() {
            let stream = UInt32(2 * n + 1)
            server.receive(Wire.headers(stream: stream, block: block))
            let frames = Frame.parse(server.read())
            #expect(!frames.contains { $0.type == Frame.goAway }, "block \(n) ended the connection")
            if frames.contains(where: { $0.type == Frame.rstStream && $0.stream == stream && $0.errorCode == protocolError }) {
                reset.append(n)
            }
        }
        return reset
    }

    @Test func anEntryReplacedAtTheSameIndexIsReadAsTheNewField() {
        let server = ServerUnderTest()
        let first = getHTTPS + path + Wire.literal(":authority", "example.com", indexed: true)
            + Wire.literal("user-agent", "one", indexed: true)
        // 62 is the newest entry (user-agent), 63 the one before (:authority).
        let again = getHTTPS + path + [0xBF, 0xBE]
        let replaced = emptyTable + getHTTPS + path + Wire.literal(":authority", "Other.example.net", indexed: true)
            + Wire.literal("user-agent", "two", indexed: true)
        // The same bytes as `first` again: a new entry that equals the one evicted.
        let back = emptyTable + first
        let reset = HTTP2FieldMemoTests.send([first, again, replaced, again, back, again], to: server)
        #expect(reset.isEmpty)
        let requests = server.dispatch.requests
        #expect(requests.map(\.host) == ["example.com", "example.com", "other.example.net", "other.example.net",
                                          "example.com", "example.com"])
        #expect(requests.map(\.userAgent) == ["one", "one", "two", "two", "one", "one"])
    }

    @Test func anEntryEvictedByNewerOnesIsNotTakenForItsSuccessor() {
        let server = ServerUnderTest()
        // Entries of 32 + 10 + 2,000 bytes: the second evicts the first (4,096 bytes in all).
        let long = String(repeating: "a", count: 2_000)
        let first = getHTTPS + path + Wire.literal(":authority", "example.com", indexed: true)
            + Wire.literal("user-agent", long, indexed: true)
        // Now 62 is the agent, 63 :authority; a new agent pushes :authority out, and 63 is the
        // old agent.
        let pushed = getHTTPS + path + Wire.literal(":authority", "example.com") + Wire.literal("user-agent", long + "b", indexed: true)
        let reads63 = getHTTPS + path + Wire.literal(":authority", "example.com") + [0xBF]
        let reset = HTTP2FieldMemoTests.send([first, pushed, reads63], to: server)
        #expect(reset.isEmpty)
        #expect(server.dispatch.requests.map(\.userAgent) == [long, long + "b", long])
        #expect(server.dispatch.requests.map(\.host) == ["example.com", "example.com", "example.com"])
    }

    @Test func anIndexedFieldThatIsRefusedIsRefusedAtEveryUse() {
        let server = ServerUnderTest()
        let authority = Wire.literal(":authority", "example.com")
        var blocks: [[UInt8]] = []
        // Each refused field added to the table, then sent by index; then the entry replaced by
        // a valid field of the kind the session remembers, which must be read as valid.
        for refused in [("connection", "close"), ("te", "gzip"), ("X-Upper", "1"), ("user-agent", " padded"),
                        ("accept", "a\u{0}b"), ("content-length", "12a")] {
            blocks.append(emptyTable + getHTTPS + path + authority + Wire.literal(refused.0, refused.1, indexed: true))
            blocks.append(getHTTPS + path + authority + [0xBE])
            blocks.append(getHTTPS + path + authority + [0xBE])
        }
        blocks.append(emptyTable + getHTTPS + path + authority + Wire.literal("accept", "*/*", indexed: true))
        blocks.append(getHTTPS + path + authority + [0xBE])
        let reset = HTTP2FieldMemoTests.send(blocks, to: server)
        #expect(reset == Array(0..<18))
        #expect(server.dispatch.requests.count == 2)
    }

    @Test func aRememberedFieldStillHasItsPlaceChecked() {
        let server = ServerUnderTest()
        let first = getHTTPS + path + Wire.literal(":authority", "example.com", indexed: true)
            + Wire.literal("accept", "*/*", indexed: true)
        let blocks: [[UInt8]] = [
            first,
            // :authority (63) after a regular field (62).
            getHTTPS + path + [0xBE, 0xBF],
            // :authority twice.
            getHTTPS + path + [0xBF, 0xBF],
            // :method GET after a regular field, and twice.
            [0x87] + path + [0xBF, 0xBE, 0x82],
            getHTTPS + [0x82] + path + [0xBF],
            // :scheme https twice.
            getHTTPS + [0x87] + path + [0xBF],
            // No :method at all, only remembered fields.
            [0x87] + path + [0xBF, 0xBE],
            // And right again.
            getHTTPS + path + [0xBF, 0xBE],
        ]
        let reset = HTTP2FieldMemoTests.send(blocks, to: server)
        #expect(reset == [1, 2, 3, 4, 5, 6])
        #expect(server.dispatch.requests.count == 2)
    }

    @Test func aMethodEntryOtherThanGetIsReadEachTime() {
        let server = ServerUnderTest()
        let authority = Wire.literal(":authority", "example.com")
        let blocks: [[UInt8]] = [
            Wire.literal(":method", "HEAD", indexed: true) + [0x87] + path + authority,
            [0xBE, 0x87] + path + authority,
            emptyTable + Wire.literal(":method", "GET", indexed: true) + [0x87] + path + authority,
            [0xBE, 0x87] + path + authority,
            emptyTable + Wire.literal(":method", "CONNECT", indexed: true) + authority,
            [0xBE] + authority,
            [0xBE, 0x87] + path + authority,
        ]
        let reset = HTTP2FieldMemoTests.send(blocks, to: server)
        #expect(reset == [6], "CONNECT with :scheme and :path is malformed")
        #expect(server.dispatch.requests.map(\.method) == [.head, .head, .get, .get, .other("CONNECT"), .other("CONNECT")])
    }
}
