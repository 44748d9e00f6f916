import AASAHTTP
import TestRandom
import Testing
@testable import AASASessions

/// The response side of HPACK's dynamic table (RFC 7541 §4, §6.1, §6.3) against libnghttp2's
/// inflater kept over a connection, as a client's session keeps it: every block decodes to the
/// head's fields and the date, whatever heads, dates and SETTINGS_HEADER_TABLE_SIZE values come
/// in between, and a head sent again costs an index a field.
@Suite struct EncoderTableTests {
    /// libnghttp2's inflater over one connection's blocks, each block's fields as `name: value`.
    private final class Inflater {
        private let inflater = HPACKInflater()

        /// The client's SETTINGS_HEADER_TABLE_SIZE, acknowledged by the server.
        func changeTableSize(_ size: Int) { inflater.changeTableSize(size) }

        func inflate(_ block: ArraySlice<UInt8>) -> [String]? {
            inflater.fields(Array(block))?.map { $0.name + ": " + $0.value }
        }
    }

    private static func head(_ status: HTTPStatus = .ok, etag: String, extra: [(name: String, value: String)] = [],
                             contentLength: Int? = 727) -> ResponseHead {
        ResponseHead(status: status, fields: [("content-type", "application/json"), ("etag", etag),
                                              ("cache-control", "public, max-age=3600")] + extra,
                     contentLength: contentLength)
    }

    private static func expected(_ head: ResponseHead, fields: [(name: String, value: String)], date: [UInt8]) -> [String] {
        [":status: \(head.status.rawValue)"] + fields.map { "\($0.name): \($0.value)" }
            + (head.contentLength.map { ["content-length: \($0)"] } ?? []) + ["date: " + String(decoding: date, as: UTF8.self)]
    }

    private static func date(_ second: Int) -> [UInt8] {
        Array("Fri, 27 Nov 2026 23:\(10 + second / 60):\(10 + second % 50) GMT".utf8)
    }

    /// The block `table` writes, without the frame header's nine bytes.
    private static func block(_ table: inout EncoderTable, _ head: ResponseHead, _ date: [UInt8]) -> ArraySlice<UInt8> {
        var out: [UInt8] = []
        table.write(head, date: date, into: &out)
        #expect(out.count > ResponseHead.frameHeaderLength)
        return out[ResponseHead.frameHeaderLength...]
    }

    @Test func aHeadSentAgainIsItsStatusAndAnIndexAField() {
        var table = EncoderTable()
        let inflater = Inflater()
        let fields: [(name: String, value: String)] = [("content-type", "application/json"), ("etag", "\"e1\""),
                                                       ("cache-control", "public, max-age=3600")]
        let head = Self.head(etag: "\"e1\"")
        let today = Self.date(0)
        let first = Self.block(&table, head, today)
        #expect(inflater.inflate(first) == Self.expected(head, fields: fields, date: today))
        #expect(first.count == head.http2Block.count + 2 + today.count)
        let second = Self.block(&table, head, today)
        #expect(inflater.inflate(second) == Self.expected(head, fields: fields, date: today))
        // `:status` 200 (one byte), four fields, the date: six bytes.
        let indexes: [UInt8] = [0x88, 0x80 | 66, 0x80 | 65, 0x80 | 64, 0x80 | 63, 0x80 | 62]
        #expect(Array(second) == indexes)
        // A new second: the date is inserted again, and the head's indexes move by one.
        let later = Self.date(1)
        #expect(inflater.inflate(Self.block(&table, head, later)) == Self.expected(head, fields: fields, date: later))
        let third = Self.block(&table, head, later)
        let moved: [UInt8] = [0x88, 0x80 | 67, 0x80 | 66, 0x80 | 65, 0x80 | 64, 0x80 | 62]
        #expect(Array(third) == moved)
        #expect(inflater.inflate(third) == Self.expected(head, fields: fields, date: later))
    }

    @Test func aTableSizeOfZeroIsAnnouncedAndEveryBlockStillDecodes() {
        var table = EncoderTable()
        let inflater = Inflater()
        let head = Self.head(etag: "\"z\"")
        let fields: [(name: String, value: String)] = [("content-type", "application/json"), ("etag", "\"z\""),
                                                       ("cache-control", "public, max-age=3600")]
        #expect(inflater.inflate(Self.block(&table, head, Self.date(0))) == Self.expected(head, fields: fields, date: Self.date(0)))
        table.limitAnnounced(0)
        inflater.changeTableSize(0)
        let first = Self.block(&table, head, Self.date(0))
        #expect(first.first == 0x20, "a size update to 0 begins the block")
        for _ in 0..<3 {
            #expect(inflater.inflate(first) == Self.expected(head, fields: fields, date: Self.date(0)))
        }
        #expect(Self.block(&table, head, Self.date(0)).count == head.http2Block.count + 2 + 29, "nothing is held: literals again")
    }

    /// libnghttp2 refuses a block that does not begin with the size updates a smaller
    /// SETTINGS_HEADER_TABLE_SIZE calls for (§4.2), and one whose indexes point past its table.
    @Test func randomHeadsDatesAndTableSizesAlwaysDecode() {
        var random = SplitMix(seed: 36)
        let statuses: [HTTPStatus] = [.ok, .ok, .notModified, .notFound, .misdirectedRequest]
        let sizes = [0, 40, 100, 300, 512, 1000, 4096, 4096, 65536]
        for connection in 0..<40 {
            var table = EncoderTable()
            let inflater = Inflater()
            var heads: [(ResponseHead, [(name: String, value: String)])] = []
            for i in 0..<6 {
                let big = random.next() % 4 == 0 ? String(repeating: "v", count: Int(random.next() % 5000)) : "x\(i)"
                let fields: [(name: String, value: String)] = [("content-type", "application/json"), ("etag", "\"\(connection).\(i)\""),
                                                               ("cache-control", "public, max-age=3600"), ("x-\(i)", big)]
                let status = statuses[Int(random.next() % UInt64(statuses.count))]
                heads.append((Self.head(status, etag: "\"\(connection).\(i)\"", extra: [("x-\(i)", big)],
                                        contentLength: status == .notModified ? nil : 727), fields))
            }
            var second = 0
            for _ in 0..<60 {
                switch random.next() % 10 {
                case 0:
                    // One or two SETTINGS before the next block.
                    for _ in 0...(random.next() % 2) {
                        let size = sizes[Int(random.next() % UInt64(sizes.count))]
                        table.limitAnnounced(size)
                        inflater.changeTableSize(size)
                    }
                case 1: second += 1
                default: break
                }
                let (head, fields) = heads[Int(random.next() % UInt64(heads.count))]
                let block = Self.block(&table, head, Self.date(second))
                #expect(inflater.inflate(block) == Self.expected(head, fields: fields, date: Self.date(second)),
                        "connection \(connection)")
            }
        }
    }
}
