import AASAHTTP
import CNghttp2
@testable import AASASessions

/// Answers every request with what `answer` builds, and remembers what it was asked.
final class FakeDispatch: RequestDispatch {
    var requests: [HTTPRequest] = []
    var refusals: [HTTPError] = []
    var answer: (HTTPRequest) -> Response

    init(answer: @escaping (HTTPRequest) -> Response = { Response.message(.ok, "hello\n", request: $0) }) {
        self.answer = answer
    }

    func respond(to request: HTTPRequest, startedMicroseconds: Int64) -> Response {
        requests.append(request)
        return answer(request)
    }

    func refuse(_ error: HTTPError, startedMicroseconds: Int64) -> Response {
        refusals.append(error)
        return Response.message(error.status, error.reason + "\n", request: nil)
    }
}

/// A response like a site's: JSON, an ETag, a body of `size` bytes.
func siteResponse(size: Int, for request: HTTPRequest, status: HTTPStatus = .ok) -> Response {
    let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let head = ResponseHead(status: status, fields: [("content-type", "application/json"), ("etag", "\"v1\""),
                                                     ("cache-control", "public, max-age=3600")],
                            contentLength: size)
    return Response(head: head, body: body, sendsBody: request.method != .head && status != .notModified)
}

/// A server session in memory, with a fake clock and dispatch; `read` plays the connection
/// writing the output out.
final class ServerUnderTest {
    let clock = LoopClock(now: 1_000_000, wallSecond: 1_700_000_000)
    let dispatch: FakeDispatch
    let session: HTTP2Session
    var output = Output()

    init(configuration: HTTP2Configuration = HTTP2Configuration(), dispatch: FakeDispatch = FakeDispatch()) {
        self.dispatch = dispatch
        self.session = HTTP2Session(configuration: configuration, clock: clock, dispatch: dispatch)
    }

    func receive(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { session.receive($0, output: &output) }
    }

    /// Takes what the session queued; with `all`, keeps writing as the session produces more.
    func read(all: Bool = true) -> [UInt8] {
        var bytes: [UInt8] = []
        repeat {
            bytes += output.buffer[output.sent...]
            output.reset()
            session.resume(output: &output)
        } while all && !output.isEmpty
        return bytes
    }
}

/// One frame as it travels (RFC 9113 §4.1).
struct Frame: Equatable {
    var type: UInt8
    var flags: UInt8 = 0
    var stream: UInt32 = 0
    var payload: [UInt8] = []

    static let data: UInt8 = 0, headers: UInt8 = 1, rstStream: UInt8 = 3, settings: UInt8 = 4, ping: UInt8 = 6,
               goAway: UInt8 = 7, windowUpdate: UInt8 = 8, continuation: UInt8 = 9
    static let endStream: UInt8 = 1, ack: UInt8 = 1, endHeaders: UInt8 = 4

    var bytes: [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF), type, flags] + be32(stream) + payload
    }

    /// The error code of a GOAWAY or RST_STREAM.
    var errorCode: UInt32? {
        switch type {
        case Frame.goAway: return readBE32(payload, at: 4)
        case Frame.rstStream: return readBE32(payload, at: 0)
        default: return nil
        }
    }

    /// GOAWAY's last stream id.
    var lastStreamID: UInt32? { type == Frame.goAway ? readBE32(payload, at: 0) & 0x7FFF_FFFF : nil }

    static func parse(_ bytes: [UInt8]) -> [Frame] {
        var frames: [Frame] = []
        var i = 0
        while i + 9 <= bytes.count {
            let n = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 9 + n <= bytes.count else { break }
            frames.append(Frame(type: bytes[i + 3], flags: bytes[i + 4], stream: readBE32(bytes, at: i + 5) & 0x7FFF_FFFF,
                                payload: Array(bytes[(i + 9)..<(i + 9 + n)])))
            i += 9 + n
        }
        return frames
    }
}

func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
func readBE32(_ b: [UInt8], at i: Int) -> UInt32 {
    UInt32(b[i]) << 24 | UInt32(b[i + 1]) << 16 | UInt32(b[i + 2]) << 8 | UInt32(b[i + 3])
}

/// Hand-made client frames: the preface, SETTINGS, requests in HPACK literals (RFC 7541 §6.2.2).
enum Wire {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func settings(_ entries: [(UInt16, UInt32)] = [], ack: Bool = false) -> [UInt8] {
        Frame(type: Frame.settings, flags: ack ? Frame.ack : 0,
              payload: entries.flatMap { [UInt8($0.0 >> 8), UInt8($0.0 & 0xFF)] + be32($0.1) }).bytes
    }

    /// The client's connection preface: magic and an empty SETTINGS.
    static let clientStart = preface + settings()

    static func integer(_ value: Int, prefixBits: Int, first: UInt8) -> [UInt8] {
        let max = (1 << prefixBits) - 1
        if value < max { return [first | UInt8(value)] }
        var out = [first | UInt8(max)]
        var v = value - max
        while v >= 128 {
            out.append(UInt8(v % 128 + 128))
            v /= 128
        }
        out.append(UInt8(v))
        return out
    }

    /// A literal field, new name, not indexed (or indexed: added to the dynamic table).
    static func literal(_ name: String, _ value: String, indexed: Bool = false) -> [UInt8] {
        integer(0, prefixBits: indexed ? 6 : 4, first: indexed ? 0x40 : 0x00)
            + integer(name.utf8.count, prefixBits: 7, first: 0) + Array(name.utf8)
            + integer(value.utf8.count, prefixBits: 7, first: 0) + Array(value.utf8)
    }

    static func requestBlock(method: String = "GET", path: String = "/.well-known/apple-app-site-association",
                             authority: String? = "example.com", extra: [(String, String)] = []) -> [UInt8] {
        var block = literal(":method", method) + literal(":scheme", "https") + literal(":path", path)
        if let authority { block += literal(":authority", authority) }
        for (n, v) in extra { block += literal(n, v) }
        return block
    }

    static func headers(stream: UInt32, block: [UInt8], endStream: Bool = true, endHeaders: Bool = true) -> [UInt8] {
        Frame(type: Frame.headers, flags: (endStream ? Frame.endStream : 0) | (endHeaders ? Frame.endHeaders : 0),
              stream: stream, payload: block).bytes
    }

    static func get(stream: UInt32, path: String = "/.well-known/apple-app-site-association", authority: String? = "example.com",
                    method: String = "GET", extra: [(String, String)] = [], endStream: Bool = true) -> [UInt8] {
        headers(stream: stream, block: requestBlock(method: method, path: path, authority: authority, extra: extra), endStream: endStream)
    }

    static func data(stream: UInt32, count: Int, endStream: Bool = false) -> [UInt8] {
        Frame(type: Frame.data, flags: endStream ? Frame.endStream : 0, stream: stream, payload: [UInt8](repeating: 0x61, count: count)).bytes
    }

    static func rstStream(_ stream: UInt32, code: UInt32 = 8) -> [UInt8] {
        Frame(type: Frame.rstStream, stream: stream, payload: be32(code)).bytes
    }

    static func ping(_ n: UInt8 = 0) -> [UInt8] { Frame(type: Frame.ping, payload: [UInt8](repeating: n, count: 8)).bytes }

    static func windowUpdate(stream: UInt32 = 0, _ increment: UInt32) -> [UInt8] {
        Frame(type: Frame.windowUpdate, stream: stream, payload: be32(increment)).bytes
    }
}

/// A real HTTP/2 client (nghttp2's client session) in memory: it decodes the server's HPACK,
/// checks its framing, and keeps flow control going with WINDOW_UPDATE as it reads.
final class H2Client {
    private var session: OpaquePointer!
    var fields: [Int32: [(name: String, value: String)]] = [:]
    var bodies: [Int32: [UInt8]] = [:]
    var dataFrames: [Int32: Int] = [:]
    var closed: [Int32: UInt32] = [:]
    var goAway: (lastStream: Int32, code: UInt32)?

    init() {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            let client = H2Client.from(user)
            client.fields[frame!.pointee.hd.stream_id, default: []].append(
                (String(decoding: UnsafeBufferPointer(start: name, count: nameLength), as: UTF8.self),
                 String(decoding: UnsafeBufferPointer(start: value, count: valueLength), as: UTF8.self)))
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, count, user in
            H2Client.from(user).bodies[stream, default: []] += UnsafeBufferPointer(start: data, count: count)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            let client = H2Client.from(user)
            let hd = frame!.pointee.hd
            if hd.type == UInt8(NGHTTP2_DATA.rawValue) { client.dataFrames[hd.stream_id, default: 0] += 1 }
            if hd.type == UInt8(NGHTTP2_GOAWAY.rawValue) {
                client.goAway = (frame!.pointee.goaway.last_stream_id, frame!.pointee.goaway.error_code)
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, code, user in
            H2Client.from(user).closed[stream] = code
            return 0
        }
        var session: OpaquePointer?
        nghttp2_session_client_new(&session, callbacks, Unmanaged.passUnretained(self).toOpaque())
        self.session = session
        nghttp2_submit_settings(session, 0, nil, 0)
    }

    deinit { nghttp2_session_del(session) }

    private static func from(_ user: UnsafeMutableRawPointer?) -> H2Client {
        Unmanaged<H2Client>.fromOpaque(user!).takeUnretainedValue()
    }

    @discardableResult
    func request(method: String = "GET", path: String = "/.well-known/apple-app-site-association",
                 authority: String? = "Example.COM:8443", extra: [(String, String)] = []) -> Int32 {
        var list: [(String, String)] = [(":method", method), (":scheme", "https"), (":path", path)]
        if let authority { list.append((":authority", authority)) }
        list += extra
        var flat: [UInt8] = []
        var spans: [(Int, Int, Int, Int)] = []
        for (name, value) in list {
            spans.append((flat.count, name.utf8.count, flat.count + name.utf8.count, value.utf8.count))
            flat += name.utf8
            flat += value.utf8
        }
        return flat.withUnsafeMutableBufferPointer { bytes in
            let nva = spans.map { nghttp2_nv(name: bytes.baseAddress! + $0.0, value: bytes.baseAddress! + $0.2, namelen: $0.1, valuelen: $0.3, flags: 0) }
            return nghttp2_submit_request(session, nil, nva, nva.count, nil, nil)
        }
    }

    func send() -> [UInt8] {
        var bytes: [UInt8] = []
        while true {
            var data: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &data)
            guard n > 0, let data else { break }
            bytes += UnsafeBufferPointer(start: data, count: n)
        }
        return bytes
    }

    func receive(_ bytes: [UInt8]) {
        let n = bytes.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
        precondition(n == bytes.count, "client rejected the server's bytes: \(n)")
    }

    /// Exchanges bytes with `server` until neither side has more to say.
    func talk(to server: ServerUnderTest) {
        var rounds = 0
        while rounds < 1000 {
            rounds += 1
            let out = send()
            if !out.isEmpty { server.receive(out) }
            let back = server.read()
            if !back.isEmpty { receive(back) }
            if out.isEmpty && back.isEmpty { break }
        }
    }

    func status(_ stream: Int32) -> String? { fields[stream]?.first { $0.name == ":status" }?.value }
    func field(_ name: String, _ stream: Int32) -> String? { fields[stream]?.first { $0.name == name }?.value }
}

/// libnghttp2's HPACK inflater (the reference decoder), kept over one connection's blocks.
final class HPACKInflater {
    private var inflater: OpaquePointer?
    init() { precondition(nghttp2_hd_inflate_new(&inflater) == 0) }
    deinit { nghttp2_hd_inflate_del(inflater) }

    /// The decoder's SETTINGS_HEADER_TABLE_SIZE changed (acknowledged by its peer).
    func changeTableSize(_ size: Int) { precondition(nghttp2_hd_inflate_change_table_size(inflater, size) == 0) }

    /// The fields of one whole block, in order; nil when libnghttp2 refuses it.
    func fields(_ block: [UInt8]) -> [(name: String, value: String)]? {
        var fields: [(name: String, value: String)] = []
        var at = 0
        for _ in 0...block.count {
            var nv = nghttp2_nv()
            var flags: Int32 = 0
            let n = block.withUnsafeBufferPointer {
                nghttp2_hd_inflate_hd2(inflater, &nv, &flags, $0.baseAddress.map { $0 + at }, $0.count - at, 1)
            }
            if n < 0 { return nil }
            at += n
            if flags & Int32(NGHTTP2_HD_INFLATE_EMIT.rawValue) != 0 {
                fields.append((String(decoding: UnsafeBufferPointer(start: nv.name, count: nv.namelen), as: UTF8.self),
                               String(decoding: UnsafeBufferPointer(start: nv.value, count: nv.valuelen), as: UTF8.self)))
            }
            if flags & Int32(NGHTTP2_HD_INFLATE_FINAL.rawValue) != 0 {
                nghttp2_hd_inflate_end_headers(inflater)
                return fields
            }
        }
        return nil
    }
}
