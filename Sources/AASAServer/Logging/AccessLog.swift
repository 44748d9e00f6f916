import AASACore
import AASAHTTP

/// One access-log line per request on stdout (SPEC 3.6). Each loop collects the lines of one
/// turn of its loop and writes them with one call, so logging costs one write per batch.
struct AccessLog {
    let format: LogFormat
    private var pending = ""

    init(format: LogFormat) {
        self.format = format
        pending.reserveCapacity(4096)
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
        if userAgent.hasPrefix("AASA-Bot") { return "apple-cdn" }
        if userAgent.contains("swcd") || userAgent.contains("CFNetwork") { return "device" }
        return nil
    }

    mutating func append(_ e: Entry) {
        let time = HTTPDate.iso8601(milliseconds: e.timeMilliseconds)
        let fetcher = AccessLog.fetcher(userAgent: e.userAgent)
        let duration = Double(e.durationMicroseconds) / 1000
        switch format {
        case .text:
            pending += "\(time) \(e.client) \(e.host.isEmpty ? "-" : e.host) \"\(e.method) \(e.path) \(e.proto)\" \(e.status) \(e.bytes) \(formatMilliseconds(duration))ms \(JSONWriter.quoted(e.userAgent))"
            if let fetcher { pending += " fetcher=\(fetcher)" }
            pending += "\n"
        case .json:
            var w = JSONWriter()
            w.beginObject()
            w.key("time"); w.value(time)
            w.key("client"); w.value(e.client)
            w.key("host"); w.value(e.host)
            w.key("method"); w.value(e.method)
            w.key("path"); w.value(e.path)
            w.key("status"); w.value(e.status)
            w.key("bytes"); w.value(e.bytes)
            w.key("duration_ms"); w.raw(formatMilliseconds(duration))
            w.key("user_agent"); w.value(e.userAgent)
            w.key("protocol"); w.value(e.proto)
            w.key("fetcher"); w.value(fetcher)
            w.endObject()
            pending += w.output + "\n"
        }
    }

    mutating func flush() {
        guard !pending.isEmpty else { return }
        ConsoleOutput.write(pending, to: 1)
        pending.removeAll(keepingCapacity: pending.utf8.count < 65536)
    }

    private func formatMilliseconds(_ ms: Double) -> String {
        let thousandths = Int((ms * 1000).rounded())
        let frac = thousandths % 1000
        return "\(thousandths / 1000).\(frac < 10 ? "00" : frac < 100 ? "0" : "")\(frac)"
    }
}
