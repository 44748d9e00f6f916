import AASACore
import AASAHTTP
import TestRandom
import Testing
@testable import AASAServer
import AASATransport

/// The access log's lines, byte for byte: exact lines for the usual cases, and the byte writer
/// against the String-built lines it replaced (kept below as the reference) over many fields
/// that need escaping.
@Suite struct AccessLogTests {
    private static let time: Int64 = 1_795_800_600_042  // 2026-11-27T17:30:00.042Z

    private static func line(_ format: LogFormat, request: HTTPRequest?, client: String = "192.0.2.1", status: Int = 200,
                             bytes: Int = 727, duration: Int64 = 1_234) -> String {
        let log = AccessLog(format: format)
        append(to: log, time: time, client: client, request: request, status: status, bytes: bytes, duration: duration)
        return log.pendingText
    }

    /// A request's line, or a refusal's when `request` is nil.
    static func append(to log: AccessLog, time: Int64, client: String, request: HTTPRequest?, status: Int, bytes: Int, duration: Int64) {
        if let request {
            log.append(timeMilliseconds: time, client: client, request: request, status: status, bytes: bytes, durationMicroseconds: duration)
        } else {
            log.appendRefused(timeMilliseconds: time, client: client, status: status, bytes: bytes, durationMicroseconds: duration)
        }
    }

    private static let get = HTTPRequest(method: .get, target: "/.well-known/apple-app-site-association?x=1",
                                         path: "/.well-known/apple-app-site-association", host: "example.com",
                                         version: .http11, keepAlive: true, userAgent: "AASA-Bot/1.0.0")

    @Test func aTextLineHasTheTimeClientHostRequestStatusSizeDurationAgentAndFetcher() {
        #expect(AccessLogTests.line(.text, request: AccessLogTests.get) ==
                "2026-11-27T17:30:00.042Z 192.0.2.1 example.com \"GET /.well-known/apple-app-site-association?x=1 HTTP/1.1\" 200 727 1.234ms \"AASA-Bot/1.0.0\" fetcher=apple-cdn\n")
    }

    @Test func aJSONLineHasTheSameFields() {
        #expect(AccessLogTests.line(.json, request: AccessLogTests.get) ==
                "{\"time\":\"2026-11-27T17:30:00.042Z\",\"client\":\"192.0.2.1\",\"host\":\"example.com\",\"method\":\"GET\",\"path\":\"/.well-known/apple-app-site-association?x=1\",\"status\":200,\"bytes\":727,\"duration_ms\":1.234,\"user_agent\":\"AASA-Bot/1.0.0\",\"protocol\":\"HTTP/1.1\",\"fetcher\":\"apple-cdn\"}\n")
    }

    @Test func aRefusedRequestIsLoggedWithDashes() {
        #expect(AccessLogTests.line(.text, request: nil, status: 400, bytes: 12, duration: 0) ==
                "2026-11-27T17:30:00.042Z 192.0.2.1 - \"- - HTTP/1.1\" 400 12 0.000ms \"\"\n")
        #expect(AccessLogTests.line(.json, request: nil, status: 400, bytes: 12, duration: 0) ==
                "{\"time\":\"2026-11-27T17:30:00.042Z\",\"client\":\"192.0.2.1\",\"host\":\"\",\"method\":\"-\",\"path\":\"-\",\"status\":400,\"bytes\":12,\"duration_ms\":0.000,\"user_agent\":\"\",\"protocol\":\"HTTP/1.1\",\"fetcher\":null}\n")
    }

    @Test func quotesBackslashesAndControlCharactersCannotForgeALine() {
        var request = AccessLogTests.get
        request.target = "/a\"b\\c"
        request.userAgent = "x\n2026-01-01T00:00:00.000Z forged\u{7F}"
        let text = AccessLogTests.line(.text, request: request)
        #expect(text.contains(" /a\\\"b\\\\c HTTP/1.1\" "))
        #expect(text.contains("\"x\\x0a2026-01-01T00:00:00.000Z forged\\x7f\"\n"))
        #expect(text.split(separator: "\n").count == 1)
        let json = AccessLogTests.line(.json, request: request)
        #expect(json.contains("\"user_agent\":\"x\\n2026-01-01T00:00:00.000Z forged\\u007F\""))
    }

    @Test func aTargetOverTheLimitIsCut() {
        var request = AccessLogTests.get
        request.target = "/" + String(repeating: "a", count: 3000)
        let text = AccessLogTests.line(.text, request: request)
        #expect(text.contains(" /" + String(repeating: "a", count: 2047) + " HTTP/1.1\""))
    }

    @Test func theSameAgentAsOurOwnCheckAndAsApplesBotIsToldApartLineAfterLine() {
        // The end of a line is remembered by its agent: whether the request is our own check
        // must be part of what it is remembered by.
        let log = AccessLog(format: .text)
        var request = AccessLogTests.get
        for round in 0..<4 {
            request.isOwnCheck = round % 2 == 1
            let before = log.pendingText.utf8.count
            let fetcher = log.append(timeMilliseconds: AccessLogTests.time, client: "192.0.2.1", request: request, status: 200,
                                     bytes: 727, durationMicroseconds: 1_234)
            let line = String(decoding: log.pendingText.utf8.dropFirst(before), as: UTF8.self)
            #expect(line.hasSuffix(request.isOwnCheck ? " fetcher=aasa-check\n" : " fetcher=apple-cdn\n"))
            #expect(fetcher?.description == (request.isOwnCheck ? nil : "apple-cdn"))
        }
    }

    @Test func moreClientsThanTheLogRemembersEachGetTheirOwnLine() {
        // Twelve clients in turn, each with its own Strings (as each connection's parser makes
        // them), over eight remembered pieces: every piece is replaced again and again.
        let log = AccessLog(format: .text)
        let requests = (0..<12).map { i in
            HTTPRequest(method: .get, target: "/file\(i)", path: "/file\(i)", host: "host\(i).example.com", version: .http11,
                        keepAlive: true, userAgent: "agent number \(i) of twelve")
        }
        for round in 0..<60 {
            let i = round % 12 == 0 ? 0 : (round * 7) % 12
            let before = log.pendingText.utf8.count
            log.append(timeMilliseconds: AccessLogTests.time, client: "192.0.2.\(i)", request: requests[i], status: 200, bytes: i,
                       durationMicroseconds: 1_000)
            let line = String(decoding: log.pendingText.utf8.dropFirst(before), as: UTF8.self)
            #expect(line == "2026-11-27T17:30:00.042Z 192.0.2.\(i) host\(i).example.com \"GET /file\(i) HTTP/1.1\" 200 \(i) 1.000ms \"agent number \(i) of twelve\"\n")
        }
    }

    @Test func everyLineIsTheSameAsTheStringBuiltOne() {
        // Fields of every length up to a few words, from bytes that escape in one format, the
        // other, both or neither, and multi-byte characters (U+2028 among them).
        let pieces = ["a", "Z", "/", " ", "\"", "\\", "\n", "\r", "\t", "\u{1}", "\u{1F}", "\u{7F}", "<", ">", "&", "s", "C",
                      "swcd", "CFNetwork", "AASA-Bot", "é", "\u{2028}", "\u{2029}", "–", "😀", "\u{80}", "0123456789"]
        var random = SplitMix(seed: 7)
        let versions: [HTTPVersion] = [.http10, .http11, .http2]
        let methods: [HTTPMethod] = [.get, .head, .other("PO\"ST")]
        // One log per format for 16 lines at a time: a log remembers what it found in the last
        // agent and target, and a line must be right whether they are new, the same or returning.
        var logs: [LogFormat: AccessLog] = [:]
        var previousAgent: String?
        var previousTarget = "/"
        for round in 0..<3000 {
            func field() -> String {
                var s = ""
                for _ in 0..<Int(random.next() % 12) { s += pieces[Int(random.next() % UInt64(pieces.count))] }
                return s
            }
            let ua = round % 3 == 1 ? previousAgent : round % 7 == 0 ? nil : (round % 5 == 0 ? "AASA-Bot" : "") + field()
            previousAgent = ua
            let target = round % 3 == 2 ? previousTarget : field()
            previousTarget = target
            let request = round % 50 == 0 ? nil : HTTPRequest(
                method: methods[round % 3], target: target, path: "/", host: round % 4 == 0 ? nil : field(),
                version: versions[round % 3], keepAlive: true, userAgent: ua)
            let time = AccessLogTests.time + Int64(random.next() % 100_000_000)
            let client = round % 3 == 0 ? "::1" : field()
            let status = Int(random.next() % 600), bytes = Int(random.next() % 200_000)
            let duration = Int64(random.next() % 5_000_000)
            for format in LogFormat.allCases {
                if round % 16 == 0 { logs[format] = AccessLog(format: format) }
                let log = logs[format]!
                let before = log.pendingText.utf8.count
                AccessLogTests.append(to: log, time: time, client: client, request: request, status: status, bytes: bytes,
                                      duration: duration)
                let expected = ReferenceLine.line(format, time: time, client: client, request: request, status: status,
                                                  bytes: bytes, duration: duration)
                let line = String(decoding: log.pendingText.utf8.dropFirst(before), as: UTF8.self)
                #expect(line == expected)
                if line != expected { return }
            }
        }
    }
}

/// The access-log line as the server built it from Strings before it wrote bytes (commit fb44ad5).
private enum ReferenceLine {
    static func line(_ format: LogFormat, time: Int64, client: String, request: HTTPRequest?, status: Int, bytes: Int,
                     duration: Int64) -> String {
        let target = request?.target ?? "-"
        let host = request?.host ?? "", method = request?.method.text ?? "-"
        let path = target.utf8.count <= 2048 ? target : String(target.prefix(2048))
        let userAgent = request?.userAgent ?? "", proto = request?.version.text ?? "HTTP/1.1"
        let fetcher = fetcherOf(userAgent)
        switch format {
        case .text:
            var out = HTTPDate.iso8601(milliseconds: time) + " " + client + " " + (host.isEmpty ? "-" : host)
            out += " \"" + method + " " + escaped(path) + " " + proto + "\" " + String(status) + " " + String(bytes) + " "
            out += String(duration / 1000) + "." + String(String(duration % 1000 + 1000).dropFirst())
            out += "ms \"" + escaped(userAgent) + "\"" + (fetcher.map { " fetcher=" + $0 } ?? "") + "\n"
            return out
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("time"); w.value(HTTPDate.iso8601(milliseconds: time))
            w.key("client"); w.value(client)
            w.key("host"); w.value(host)
            w.key("method"); w.value(method)
            w.key("path"); w.value(path)
            w.key("status"); w.value(status)
            w.key("bytes"); w.value(bytes)
            w.key("duration_ms"); w.raw("\(duration / 1000).\(String(duration % 1000 + 1000).dropFirst())")
            w.key("user_agent"); w.value(userAgent)
            w.key("protocol"); w.value(proto)
            w.key("fetcher"); w.value(fetcher)
            w.endObject()
            return w.output + "\n"
        }
    }

    private static func fetcherOf(_ userAgent: String) -> String? {
        let bytes = Array(userAgent.utf8)
        func contains(_ needle: String) -> Bool {
            let n = Array(needle.utf8)
            guard bytes.count >= n.count else { return false }
            return (0...(bytes.count - n.count)).contains { bytes[$0..<($0 + n.count)].elementsEqual(n) }
        }
        if bytes.starts(with: "AASA-Bot".utf8) { return "apple-cdn" }
        return contains("swcd") || contains("CFNetwork") ? "device" : nil
    }

    private static func escaped(_ text: String) -> String {
        var out: [UInt8] = []
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                out += [UInt8(ascii: "\\"), b]
            case 0..<0x20, 0x7F:
                let hexDigits = Array("0123456789abcdef".utf8)
                out += Array("\\x".utf8) + [hexDigits[Int(b >> 4)], hexDigits[Int(b & 0x0F)]]
            default:
                out.append(b)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
