import AASACore
import AASATransport
import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

/// One access-log line per request on stdout (docs/serving.md, "Logs and signals"). Each loop
/// collects the lines of one turn of its loop and hands them over at once, so logging costs one
/// copy per batch.
///
/// A line is written as bytes straight into memory reserved for its longest possible form (every
/// quoted byte escaped), through a ``LineWriter`` that checks nothing per byte: no String is
/// made per request, and the date's text only once a second. Most of a line repeats from one
/// request to the next (a keep-alive client asks for the same file with the same agent): the run
/// from the time to the status (client, host, method, target, version) and the run after the
/// duration (agent, protocol, fetcher) are each remembered as bytes with the fields they were
/// made of, a few of each (``Pieces``), so a line is usually four copies and three numbers:
/// about 530 instructions (callgrind, `append` and what it calls), where writing every field
/// cost about 950 and building the line from Strings about 3,700.
final package class AccessLog {
    package let format: LogFormat
    /// The lines of this turn: `count` bytes of `capacity`.
    private var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var count = 0
    /// The time up to the seconds, made once a second: `2026-11-21T17:30:00.`
    private var secondPrefix: [UInt8] = []
    private var prefixSecond: Int64 = -1
    /// From the time's `Z` to the status, and from the duration's unit to the end of the line.
    private let middles = Pieces()
    private let tails = Pieces()

    private static let initialCapacity = 16 * 1024
    /// Kept across turns up to this size; a burst of long lines does not pin more.
    private static let retainedCapacity = 256 * 1024
    /// The longest target logged, in bytes (longer ones are cut).
    static let maxPath = 2048

    package init(format: LogFormat) {
        self.format = format
        capacity = AccessLog.initialCapacity
        storage = .allocate(capacity: capacity)
    }

    deinit {
        storage.deallocate()
        middles.deallocate()
        tails.deallocate()
    }

    /// The lines not yet handed over (for tests).
    var pendingText: String { String(decoding: UnsafeBufferPointer(start: storage, count: count), as: UTF8.self) }

    /// Who fetched, for AASA requests: Apple's CDN (`AASA-Bot`), a device fetching directly
    /// (`swcd`, `CFNetwork`), or nil (docs/aasa-reference.md §3.7).
    static package func fetcher(userAgent: String) -> String? {
        var ua = userAgent
        return ua.withUTF8 { fetcher(userAgent: $0)?.description }
    }

    static package func fetcher(userAgent bytes: UnsafeBufferPointer<UInt8>) -> StaticString? {
        if matches(bytes, at: 0, "AASA-Bot") { return "apple-cdn" }
        // Most agents hold neither an `s` nor a `C`: one pass over words rules both out.
        guard ByteScan.contains(bytes, anyOf: UInt8(ascii: "s"), UInt8(ascii: "C")) else { return nil }
        for i in bytes.indices {
            switch bytes[i] {
            case UInt8(ascii: "s"): if matches(bytes, at: i, "swcd") { return "device" }
            case UInt8(ascii: "C"): if matches(bytes, at: i, "CFNetwork") { return "device" }
            default: continue
            }
        }
        return nil
    }

    private static func matches(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int, _ text: StaticString) -> Bool {
        let n = text.utf8CodeUnitCount
        return bytes.count - i >= n && memcmp(bytes.baseAddress! + i, text.utf8Start, n) == 0
    }

    /// Appends the line for one answered request, and returns who fetched
    /// (``fetcher(userAgent:)``), so the agent is scanned once per request. The request is
    /// borrowed: an optional parameter made a copy of it per line (six retains and releases).
    @discardableResult
    package func append(timeMilliseconds: Int64, client: String, request: HTTPRequest, status: Int, bytes: Int,
                        durationMicroseconds: Int64) -> StaticString? {
        updateSecond(timeMilliseconds)
        let methodKey: UInt64
        switch request.method {
        case .get: methodKey = 1
        case .head: methodKey = 2
        case .other:
            // Rare, and its name is a String of its own: written field by field.
            return writeUnremembered(timeMilliseconds: timeMilliseconds, client: client, request: request, status: status,
                                     bytes: bytes, durationMicroseconds: durationMicroseconds)
        }
        let version = request.version.key
        let middleKey = PieceKey(client, request.host, request.target, methodKey << 8 | version)
        let tailKey = PieceKey(request.userAgent, nil, nil, (request.isOwnCheck ? 1 : 0) << 8 | version)
        var middle = middles.find(middleKey)
        var tail = tails.find(tailKey)
        if middle < 0 || tail < 0 {
            // Long fields are not remembered, so that a slot never holds more than a few
            // kilobytes (a hostile 16 KB Host would otherwise stay).
            if client.utf8.count + (request.host?.utf8.count ?? 0) + request.target.utf8.count > Pieces.longestRemembered
                || request.userAgent?.utf8.count ?? 0 > Pieces.longestRemembered {
                return writeUnremembered(timeMilliseconds: timeMilliseconds, client: client, request: request, status: status,
                                         bytes: bytes, durationMicroseconds: durationMicroseconds)
            }
            if middle < 0 { middle = rememberMiddle(middleKey, client: client, request: request) }
            if tail < 0 {
                tail = rememberTail(tailKey, userAgent: request.userAgent, ownCheck: request.isOwnCheck, version: request.version)
            }
        }
        let m = middles.slot(middle), t = tails.slot(tail)
        // The numbers: at most 20 digits each, and the fixed text between them.
        reserve(secondPrefix.count + m.count + t.count + 128)
        var w = LineWriter(at: storage + count)
        if format == .json { w.ascii("{\"time\":\"") }
        w.bytes(secondPrefix)
        w.threeDigits(Int(timeMilliseconds % 1000))
        w.bytes(UnsafeBufferPointer(start: m.bytes, count: m.count))
        writeNumbers(&w, status: status, bytes: bytes, durationMicroseconds: durationMicroseconds)
        w.bytes(UnsafeBufferPointer(start: t.bytes, count: t.count))
        count = w.at - storage
        return t.returned
    }

    /// Appends the line for a request refused before it was parsed: no host, method, target or agent.
    package func appendRefused(timeMilliseconds: Int64, client: String, status: Int, bytes: Int, durationMicroseconds: Int64) {
        updateSecond(timeMilliseconds)
        write(timeMilliseconds: timeMilliseconds, client: client, host: nil, method: nil, target: "-", status: status,
              bytes: bytes, durationMicroseconds: durationMicroseconds, userAgent: nil, version: .http11, ownCheck: false)
    }

    private func updateSecond(_ timeMilliseconds: Int64) {
        let second = timeMilliseconds / 1000
        if second != prefixSecond {
            prefixSecond = second
            secondPrefix = Array(HTTPDate.iso8601(milliseconds: second * 1000).utf8.dropLast(4))
        }
    }

    /// Cut by characters, so a line stays valid UTF-8; rare (a target of over 2 KiB).
    private static func logged(target: String) -> String {
        target.utf8.count <= AccessLog.maxPath ? target : String(target.prefix(AccessLog.maxPath))
    }

    private func writeUnremembered(timeMilliseconds: Int64, client: String, request: HTTPRequest, status: Int, bytes: Int,
                                   durationMicroseconds: Int64) -> StaticString? {
        write(timeMilliseconds: timeMilliseconds, client: client, host: request.host, method: request.method,
              target: AccessLog.logged(target: request.target), status: status, bytes: bytes,
              durationMicroseconds: durationMicroseconds, userAgent: request.userAgent, version: request.version,
              ownCheck: request.isOwnCheck)
    }

    /// The middle of a line for these fields, written into a free slot of ``middles``.
    private func rememberMiddle(_ key: PieceKey, client: String, request: HTTPRequest) -> Int {
        let target = AccessLog.logged(target: request.target)
        return client.withBytes { clientBytes in
        (request.host ?? "").withBytes { hostBytes in
        AccessLog.withBytes(of: request.method) { methodBytes in
        target.withBytes { targetBytes in
            middles.remember(key, fields: (client, request.host, request.target),
                             longest: 128 + 6 * (clientBytes.count + hostBytes.count + methodBytes.count + targetBytes.count)) { w in
                writeMiddle(&w, client: clientBytes, host: hostBytes, method: methodBytes, target: targetBytes,
                            version: request.version)
            }
        }}}}
    }

    /// The end of a line for this agent, written into a free slot of ``tails``, with who fetched.
    private func rememberTail(_ key: PieceKey, userAgent: String?, ownCheck: Bool, version: HTTPVersion) -> Int {
        (userAgent ?? "").withBytes { agent in
            // `aasa check` or `aasa monitor` as Apple's bot: logged as itself, and no fetcher
            // for the fetch record (docs/apple-view.md, "Fetch record").
            let found = AccessLog.fetcher(userAgent: agent)
            let logged: StaticString? = ownCheck ? "aasa-check" : found
            return tails.remember(key, fields: (userAgent, nil, nil), longest: 128 + 6 * agent.count,
                                  returned: ownCheck ? nil : found) { w in
                writeTail(&w, userAgent: agent, fetcher: logged, version: version)
            }
        }
    }

    /// `method` nil: a refusal's `-`. A missing host is written `-` in the text format and as
    /// an empty string in JSON; a missing agent as empty in both.
    @discardableResult
    private func write(timeMilliseconds: Int64, client: String, host: String?, method: HTTPMethod?, target: String, status: Int,
                       bytes: Int, durationMicroseconds: Int64, userAgent: String?, version: HTTPVersion,
                       ownCheck: Bool) -> StaticString? {
        client.withBytes { client in
        (host ?? "").withBytes { host in
        AccessLog.withBytes(of: method) { method in
        target.withBytes { target in
        (userAgent ?? "").withBytes { userAgent in
            // A JSON escape is at most 6 bytes a byte (`\u001F`), a text one 4 (`\x1F`); 256 covers
            // the keys, the time, the numbers and the rest.
            reserve(secondPrefix.count + 256 + 6 * (client.count + host.count + method.count + target.count + userAgent.count))
            var w = LineWriter(at: storage + count)
            let found = AccessLog.fetcher(userAgent: userAgent)
            let fetcher: StaticString? = ownCheck ? "aasa-check" : found
            if format == .json { w.ascii("{\"time\":\"") }
            w.bytes(secondPrefix)
            w.threeDigits(Int(timeMilliseconds % 1000))
            writeMiddle(&w, client: client, host: host, method: method, target: target, version: version)
            writeNumbers(&w, status: status, bytes: bytes, durationMicroseconds: durationMicroseconds)
            writeTail(&w, userAgent: userAgent, fetcher: fetcher, version: version)
            count = w.at - storage
            return ownCheck ? nil : found
        }}}}}
    }

    /// From the time's `Z` to the status: `Z client host "GET /path HTTP/1.1" `, or in JSON
    /// `Z","client":…,"path":"/path","status":`.
    private func writeMiddle(_ w: inout LineWriter, client: UnsafeBufferPointer<UInt8>, host: UnsafeBufferPointer<UInt8>,
                             method: UnsafeBufferPointer<UInt8>, target: UnsafeBufferPointer<UInt8>, version: HTTPVersion) {
        switch format {
        case .text:
            w.ascii("Z ")
            w.bytes(client)
            w.byte(0x20)
            if host.isEmpty { w.byte(UInt8(ascii: "-")) } else { w.bytes(host) }
            w.ascii(" \"")
            w.bytes(method)
            w.byte(0x20)
            w.textEscaped(target)
            w.byte(0x20)
            w.ascii(version.logText)
            w.ascii("\" ")
        case .json:
            // The same bytes as JSONWriter gives, field for field.
            w.ascii("Z\",\"client\":\"")
            w.jsonEscaped(client)
            w.ascii("\",\"host\":\"")
            w.jsonEscaped(host)
            w.ascii("\",\"method\":\"")
            w.jsonEscaped(method)
            w.ascii("\",\"path\":\"")
            w.jsonEscaped(target)
            w.ascii("\",\"status\":")
        }
    }

    /// The status, the size and the duration, and what separates them.
    @inline(__always)
    private func writeNumbers(_ w: inout LineWriter, status: Int, bytes: Int, durationMicroseconds: Int64) {
        w.decimal(status)
        if format == .json { w.ascii(",\"bytes\":") } else { w.byte(0x20) }
        w.decimal(bytes)
        if format == .json { w.ascii(",\"duration_ms\":") } else { w.byte(0x20) }
        w.decimal(Int(durationMicroseconds / 1000))
        w.byte(UInt8(ascii: "."))
        w.threeDigits(Int(durationMicroseconds % 1000))
    }

    /// From the duration's unit to the end of the line: `ms "agent" fetcher=…` and the line
    /// feed, or in JSON `,"user_agent":…,"fetcher":…}` and the line feed.
    private func writeTail(_ w: inout LineWriter, userAgent: UnsafeBufferPointer<UInt8>, fetcher: StaticString?,
                           version: HTTPVersion) {
        switch format {
        case .text:
            w.ascii("ms \"")
            w.textEscaped(userAgent)
            w.byte(UInt8(ascii: "\""))
            if let fetcher {
                w.ascii(" fetcher=")
                w.ascii(fetcher)
            }
        case .json:
            w.ascii(",\"user_agent\":\"")
            w.jsonEscaped(userAgent)
            w.ascii("\",\"protocol\":\"")
            w.ascii(version.logText)
            w.ascii("\",\"fetcher\":")
            if let fetcher {
                w.byte(UInt8(ascii: "\""))
                w.ascii(fetcher)
                w.ascii("\"}")
            } else {
                w.ascii("null}")
            }
        }
        w.byte(0x0A)
    }

    /// A method's name (`-` for none), from the program's own bytes for GET and HEAD.
    private static func withBytes<R>(of method: HTTPMethod?, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        let name: StaticString
        switch method {
        case .get: name = "GET"
        case .head: name = "HEAD"
        case .other(let text): return text.withBytes(body)
        case nil: name = "-"
        }
        return body(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
    }

    /// Room for `bytes` more after the pending lines.
    private func reserve(_ bytes: Int) {
        guard count + bytes > capacity else { return }
        let grown = max(capacity * 2, count + bytes)
        let bigger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        bigger.moveInitialize(from: storage, count: count)
        storage.deallocate()
        storage = bigger
        capacity = grown
    }

    /// Hands the turn's lines to the stdout writer thread: a copy under a lock, never a write
    /// that could block the loop (see ``LogStream``).
    package func flush() {
        guard count > 0 else { return }
        LogStream.standardOutput.write(UnsafeRawBufferPointer(start: storage, count: count))
        count = 0
        if capacity > AccessLog.retainedCapacity {
            storage.deallocate()
            capacity = AccessLog.initialCapacity
            storage = .allocate(capacity: capacity)
        }
    }
}

extension HTTPVersion {
    /// ``text`` without a String.
    fileprivate var logText: StaticString {
        switch self {
        case .http10: return "HTTP/1.0"
        case .http11: return "HTTP/1.1"
        case .http2: return "HTTP/2.0"
        }
    }

    /// A number for ``PieceKey``.
    fileprivate var key: UInt64 {
        switch self {
        case .http10: return 1
        case .http11: return 2
        case .http2: return 3
        }
    }
}

extension String {
    /// The UTF-8 bytes in place (native and small strings), copied only for a foreign one.
    fileprivate func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(utf8).withUnsafeBufferPointer(body)
    }
}

/// A cursor over memory reserved beforehand for everything it will write.
struct LineWriter {
    var at: UnsafeMutablePointer<UInt8>

    mutating func byte(_ b: UInt8) {
        at.initialize(to: b)
        at += 1
    }

    mutating func bytes(_ b: UnsafeBufferPointer<UInt8>) {
        guard let base = b.baseAddress else { return }
        at.initialize(from: base, count: b.count)
        at += b.count
    }

    mutating func bytes(_ b: [UInt8]) { b.withUnsafeBufferPointer { bytes($0) } }

    mutating func ascii(_ s: StaticString) { bytes(UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)) }

    /// `n` in decimal; a negative `n` as 0.
    mutating func decimal(_ n: Int) {
        if n >= 0, n < 1000 {
            // Statuses, most sizes, most durations: no loop.
            if n >= 100 { return threeDigits(n) }
            if n >= 10 {
                byte(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: n / 10))
            }
            return byte(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: n % 10))
        }
        var v = UInt(max(0, n))
        var length = 1
        var rest = v / 10
        while rest > 0 {
            length += 1
            rest /= 10
        }
        var p = at + length
        for _ in 0..<length {
            p -= 1
            p.initialize(to: UInt8(ascii: "0") + UInt8(truncatingIfNeeded: v % 10))
            v /= 10
        }
        at += length
    }

    /// `n` (0-999) as three digits, zero-padded: milliseconds; a negative `n` as 000.
    mutating func threeDigits(_ n: Int) {
        let v = UInt(max(0, n))
        at[0] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: v / 100)
        at[1] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: v / 10 % 10)
        at[2] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: v % 10)
        at += 3
    }

    private static let hexDigits: StaticString = "0123456789abcdef"
    private static let upperHexDigits: StaticString = "0123456789ABCDEF"

    /// Text for a quoted field of the text format: `"` and `\` escaped, control characters as
    /// `\xNN`, so a client cannot forge a log line.
    mutating func textEscaped(_ text: UnsafeBufferPointer<UInt8>) {
        guard ByteScan.needsTextEscape(text) else { return bytes(text) }
        for b in text {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                byte(UInt8(ascii: "\\"))
                byte(b)
            case 0..<0x20, 0x7F:
                byte(UInt8(ascii: "\\"))
                byte(UInt8(ascii: "x"))
                byte(LineWriter.hexDigits.utf8Start[Int(b >> 4)])
                byte(LineWriter.hexDigits.utf8Start[Int(b & 0x0F)])
            default:
                byte(b)
            }
        }
    }

    /// Text inside a JSON string, escaped as ``JSONWriter/quoted(_:htmlSafe:)`` does (HTML-safe):
    /// RFC 8259 §7's escapes, `<`, `>` and `&`, U+2028 and U+2029. The text is valid UTF-8 (a
    /// Swift String's), so working on bytes gives the same output as working on scalars.
    mutating func jsonEscaped(_ text: UnsafeBufferPointer<UInt8>) {
        guard ByteScan.needsJSONEscape(text) else { return bytes(text) }
        var i = 0
        while i < text.count {
            let b = text[i]
            i += 1
            switch b {
            case UInt8(ascii: "\""): ascii("\\\"")
            case UInt8(ascii: "\\"): ascii("\\\\")
            case UInt8(ascii: "\n"): ascii("\\n")
            case UInt8(ascii: "\r"): ascii("\\r")
            case UInt8(ascii: "\t"): ascii("\\t")
            case 0..<0x20, 0x7F, UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: "&"):
                ascii("\\u00")
                byte(LineWriter.upperHexDigits.utf8Start[Int(b >> 4)])
                byte(LineWriter.upperHexDigits.utf8Start[Int(b & 0x0F)])
            case 0xE2 where i + 1 < text.count && text[i] == 0x80 && (text[i + 1] == 0xA8 || text[i + 1] == 0xA9):
                // U+2028 LINE SEPARATOR, U+2029 PARAGRAPH SEPARATOR
                ascii(text[i + 1] == 0xA8 ? "\\u2028" : "\\u2029")
                i += 2
            default:
                byte(b)
            }
        }
    }
}
