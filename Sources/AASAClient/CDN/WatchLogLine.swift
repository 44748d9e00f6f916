import AASACore
import AASAHTTP
import AASATransport

/// One log line of a watch: the server's CDN watch and `aasa monitor` write the same lines
/// (docs/apple-view.md, docs/monitor.md). A change of state is `cdn: HOST stale -> current after
/// 3h12m` (the monitor adds `: REASON` when it has one); with `--log-format json`, an object with
/// the message and `check`, `host`, `from`, `to`, `after`. Anything else (a site's first result,
/// the count that ends a pass's first results) is a plain line.
package struct WatchLogLine: Sendable {
    package struct Change: Sendable, Equatable {
        package var check: String
        package var host: String
        package var from: String
        package var to: String
        package var after: String
    }

    package var level: Log.Level
    package var message: String
    /// The JSON log's fields, for a change of state.
    package var change: Change?

    /// A plain line.
    package init(_ level: Log.Level, _ message: String) {
        self.level = level
        self.message = message
    }

    /// A change of a check's state: `bad` when the new state is one a team must act on.
    package static func change(_ check: String, host: String, from: String, to: String, afterMilliseconds: Int64,
                               reason: String? = nil, bad: Bool) -> WatchLogLine {
        let after = durationText(milliseconds: afterMilliseconds)
        var line = WatchLogLine(bad ? .warning : .info, "\(check): \(host) \(from) -> \(to) after \(after)" + (reason.map { ": \($0)" } ?? ""))
        line.change = Change(check: check, host: host, from: from, to: to, after: after)
        return line
    }

    package func write(to log: Log) {
        guard level >= log.minimum else { return }
        guard log.format == .json, let change else {
            switch level {
            case .debug: log.debug(message)
            case .info: log.info(message)
            case .warning: log.warning(message)
            case .error: log.error(message)
            }
            return
        }
        var w = JSONWriter()
        w.beginObject()
        w.key("time"); w.value(HTTPDate.iso8601(milliseconds: wallClockMilliseconds()))
        w.key("level"); w.value(level.rawValue)
        w.key("message"); w.value(message)
        w.key("check"); w.value(change.check)
        w.key("host"); w.value(change.host)
        w.key("from"); w.value(change.from)
        w.key("to"); w.value(change.to)
        w.key("after"); w.value(change.after)
        w.endObject()
        LogStream.standardError.write(w.output + "\n")
    }
}

extension CDNStatus {
    /// What a state means, after a colon, for a log line, the monitor's story and `--once`:
    /// what differs for `stale`, the CDN's status and failure headers for `failing`, the cause
    /// for `unreachable`; empty otherwise. `originKnown` is false while the monitor has read no
    /// good file from the origin: a copy compared with nothing is not "an older version".
    package func detail(originKnown: Bool = true) -> String {
        switch state {
        case .stale where !originKnown: return ": the origin has served no good file to compare the CDN's copy with"
        case .stale: return ": the CDN still serves an older version (\(differs.joined(separator: "; ")))"
        case .failing:
            var text = ": the CDN answers \(httpStatus ?? 0)"
            if let failureReason { text += ", Apple-Failure-Reason: \(failureReason)" }
            if let failureDetails { text += ", Apple-Failure-Details: \(failureDetails)" }
            return text
        case .unreachable: return ": \(failureReason ?? "") (\(failureDetails ?? ""))"
        case .current, .pending: return ""
        }
    }
}
