import AASACore
import AASAHTTP

/// One access-log line per request on stdout (SPEC 3.6). Each loop collects the lines of one
/// turn of its loop and hands them over at once, so logging costs one copy per batch.
struct AccessLog {
    let format: LogFormat
    private var pending: [UInt8] = []

    init(format: LogFormat) {
        self.format = format
        pending.reserveCapacity(16 * 1024)
    }

    struct Entry {
        var timeMilliseconds: Int64
        var client: String
        var host: String
        var method: String
        var path: String
        var status: Int
        var bytes: Int
        var durationMicroseconds: Int64
        var userAgent: String
        var proto: String
    }

    /// Who fetched, for AASA requests: Apple's CDN (`AASA-Bot`), a device fetching directly
    /// (`swcd`, `CFNetwork`), or nil (reference 3.7).
    static func fetcher(userAgent: String) -> String? {
        var ua = userAgent
        return ua.withUTF8 { bytes in
            if bytes.starts(with: "AASA-Bot".utf8) { return "apple-cdn" }
            if contains(bytes, "swcd") || contains(bytes, "CFNetwork") { return "device" }
            return nil
        }
    }

    private static func contains(_ haystack: UnsafeBufferPointer<UInt8>, _ needle: StaticString) -> Bool {
        let n = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard haystack.count >= n.count else { return false }
        for i in 0...(haystack.count - n.count) where haystack[i] == n[0] {
            if haystack[i..<(i + n.count)].elementsEqual(n) { return true }
        }
        return false
    }

    /// The time up to the seconds, made once a second: `2026-11-21T17:30:00.`
    private var secondPrefix: [UInt8] = []
    private var prefixSecond: Int64 = -1

    mutating func append(_ e: Entry) {
        let fetcher = AccessLog.fetcher(userAgent: e.userAgent)
        switch format {
        case .text:
            // Written as bytes: one line per request must not cost a pile of strings.
            let second = e.timeMilliseconds / 1000
            if second != prefixSecond {
                prefixSecond = second
                secondPrefix = Array(HTTPDate.iso8601(milliseconds: second * 1000).utf8.dropLast(4))
            }
            pending.append(contentsOf: secondPrefix)
            appendDigits(Int(e.timeMilliseconds % 1000), width: 3)
            pending.append(UInt8(ascii: "Z"))
            pending.append(0x20)
            pending.append(contentsOf: e.client.utf8)
            pending.append(0x20)
            if e.host.isEmpty { pending.append(UInt8(ascii: "-")) } else { pending.append(contentsOf: e.host.utf8) }
            pending.append(contentsOf: " \"".utf8)
            pending.append(contentsOf: e.method.utf8)
            pending.append(0x20)
            appendEscaped(e.path)
            pending.append(0x20)
            pending.append(contentsOf: e.proto.utf8)
            pending.append(contentsOf: "\" ".utf8)
            appendDigits(e.status, width: 1)
            pending.append(0x20)
            appendDigits(e.bytes, width: 1)
            pending.append(0x20)
            appendDigits(Int(e.durationMicroseconds / 1000), width: 1)
            pending.append(UInt8(ascii: "."))
            appendDigits(Int(e.durationMicroseconds % 1000), width: 3)
            pending.append(contentsOf: "ms \"".utf8)
            appendEscaped(e.userAgent)
            pending.append(UInt8(ascii: "\""))
            if let fetcher {
                pending.append(contentsOf: " fetcher=".utf8)
                pending.append(contentsOf: fetcher.utf8)
            }
            pending.append(0x0A)
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("time"); w.value(HTTPDate.iso8601(milliseconds: e.timeMilliseconds))
            w.key("client"); w.value(e.client)
            w.key("host"); w.value(e.host)
            w.key("method"); w.value(e.method)
            w.key("path"); w.value(e.path)
            w.key("status"); w.value(e.status)
            w.key("bytes"); w.value(e.bytes)
            w.key("duration_ms"); w.raw("\(e.durationMicroseconds / 1000).\(String(e.durationMicroseconds % 1000 + 1000).dropFirst())")
            w.key("user_agent"); w.value(e.userAgent)
            w.key("protocol"); w.value(e.proto)
            w.key("fetcher"); w.value(fetcher)
            w.endObject()
            pending.append(contentsOf: w.output.utf8)
            pending.append(0x0A)
        }
    }

    private mutating func appendDigits(_ n: Int, width: Int) {
        var v = max(0, n)
        var divisor = 1
        var digits = 1
        while v / divisor >= 10 { divisor *= 10; digits += 1 }
        for _ in digits..<max(digits, width) { pending.append(UInt8(ascii: "0")) }
        while divisor > 0 {
            pending.append(UInt8(ascii: "0") + UInt8(v / divisor))
            v %= divisor
            divisor /= 10
        }
    }

    /// Appends text for a quoted log field: `"` and `\` escaped, control characters as `\xNN`,
    /// so a client cannot forge a log line.
    private mutating func appendEscaped(_ text: String) {
        var text = text
        let clean = text.withUTF8 { bytes -> Bool in
            for b in bytes where b < 0x20 || b == 0x7F || b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { return false }
            pending.append(contentsOf: bytes)
            return true
        }
        if clean { return }
        for b in text.utf8 {
            switch b {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                pending.append(UInt8(ascii: "\\"))
                pending.append(b)
            case 0..<0x20, 0x7F:
                pending.append(contentsOf: "\\x".utf8)
                let hexDigits = Array("0123456789abcdef".utf8)
                pending.append(hexDigits[Int(b >> 4)])
                pending.append(hexDigits[Int(b & 0x0F)])
            default:
                pending.append(b)
            }
        }
    }

    /// Hands the turn's lines to the stdout writer thread: a copy under a lock, never a write
    /// that could block the loop (see ``LogStream``).
    mutating func flush() {
        guard !pending.isEmpty else { return }
        LogStream.standardOutput.write(pending)
        if pending.capacity > 256 * 1024 { pending = [] } else { pending.removeAll(keepingCapacity: true) }
    }
}
