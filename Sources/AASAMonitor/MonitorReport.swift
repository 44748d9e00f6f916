import AASACore
import AASAHTTP
import AASAClient
import AASATransport

/// What the monitor shows: `/status` (and `--once --format json`), the text of `--once`, and
/// `/metrics` (docs/monitor.md).
package enum MonitorReport {
    /// `/status`: the summary of every domain, then the domains listed (in byte order of name),
    /// and the name to ask `after` for the next page.
    package static func status(_ state: MonitorState, listed hosts: [String], next: String?) -> String {
        render(page(state, listed: hosts, next: next))
    }

    /// A `/status` answer copied out of the state: the summary's counts and the listed domains'
    /// records (values that share their storage with the state's), so that it is rendered
    /// outside the state's lock. A page of 1 000 domains is 1.7 MB of JSON, and the scheduler
    /// and every check that finishes wait for that lock.
    package struct StatusPage: Sendable {
        var summary: Summary
        var domains: [(record: DomainRecord, cdn: CDNStatus?)]
        var next: String?
    }

    struct Summary: Sendable {
        var domains: Int
        var origin: [OriginState: Int]
        var cdn: [CDNStatus.State: Int]
        /// nil with `--dal-base off`.
        var google: [GoogleStatus.State: Int]?
    }

    /// Under the state's lock: what ``render(_:)`` needs, in time linear in the domains watched
    /// (the counts) and in those listed.
    package static func page(_ state: MonitorState, listed hosts: [String], next: String?) -> StatusPage {
        var origin: [OriginState: Int] = [:]
        var google: [GoogleStatus.State: Int] = [:]
        for record in state.records.values {
            origin[record.origin.state, default: 0] += 1
            if let g = record.google { google[g.state, default: 0] += 1 }
        }
        let summary = Summary(domains: state.records.count, origin: origin, cdn: state.schedule.counts(), google: state.googleOn ? google : nil)
        let domains = hosts.compactMap { host in state.records[host].map { (record: $0, cdn: state.schedule.sites[host]?.status) } }
        return StatusPage(summary: summary, domains: domains, next: next)
    }

    package static func render(_ page: StatusPage) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("summary")
        write(page.summary, to: &w)
        w.key("domains")
        w.beginArray()
        for d in page.domains { write(d.record, cdn: d.cdn, to: &w) }
        w.endArray()
        w.key("next"); w.value(page.next)
        w.endObject()
        return w.output
    }

    static func write(_ summary: Summary, to w: inout JSONWriter) {
        w.beginObject()
        w.key("domains"); w.value(summary.domains)
        for s in OriginState.allCases { w.key(s.rawValue); w.value(summary.origin[s] ?? 0) }
        w.key("cdn")
        w.beginObject()
        for s in CDNStatus.State.allCases { w.key(s.rawValue); w.value(summary.cdn[s] ?? 0) }
        w.endObject()
        w.key("google")
        w.beginObject()
        if let google = summary.google {
            for s in GoogleStatus.State.allCases { w.key(s.rawValue); w.value(google[s] ?? 0) }
        }
        w.endObject()
        w.endObject()
    }

    static func write(_ record: DomainRecord, cdn: CDNStatus?, to w: inout JSONWriter) {
        w.beginObject()
        w.key("host"); w.value(record.domain.host)
        w.key("origin")
        w.beginObject()
        w.key("state"); w.value(record.origin.state.rawValue)
        w.key("since"); w.value(HTTPDate.iso8601(milliseconds: record.origin.since))
        w.key("checkedAt"); w.value(record.origin.checkedAt.map { HTTPDate.iso8601(milliseconds: $0) })
        w.key("version"); w.value(record.origin.version)
        w.key("checks")
        CheckLine.write(record.origin.checks, to: &w)
        w.endObject()
        w.key("cdn")
        if let cdn { cdn.write(to: &w) } else { w.null() }
        w.key("google")
        if let g = record.google { g.write(to: &w) } else { w.null() }
        w.key("story")
        w.beginArray()
        for e in record.story {
            w.beginObject()
            w.key("at"); w.value(HTTPDate.iso8601(milliseconds: e.at))
            w.key("event"); w.value(e.event)
            w.endObject()
        }
        w.endArray()
        w.endObject()
    }

    /// `--once` as text: one line per check as `aasa check` prints them (`HOST: check: status:
    /// message`), the validator's findings after `validate`, then `cdn` and `google` as checks
    /// whose message starts with their state, and a summary line. Control characters a peer
    /// sent are escaped.
    package static func text(_ state: MonitorState, hosts: [String]) -> String {
        var text = ""
        func line(_ s: String) { text += s.escapingControlCharacters + "\n" }
        var failing = 0
        var warn = 0
        for host in hosts {
            guard let record = state.records[host] else { continue }
            if record.origin.state == .failing { failing += 1 }
            if record.origin.state == .warn { warn += 1 }
            for c in record.origin.checks {
                line("\(host): \(c.name): \(c.status.rawValue): \(c.message)")
                guard c.name == "validate", let r = record.report else { continue }
                for d in r.diagnostics {
                    line("\(r.url):\(d.line):\(d.column): \(d.severity.rawValue): \(d.message) [\(d.code.rawValue)]")
                }
                if r.unlistedDiagnostics > 0 { line("\(r.url): note: \(counted(r.unlistedDiagnostics, "more finding", "more findings")) not shown") }
            }
            if let cdn = state.schedule.sites[host]?.status {
                let verdict: CheckStatus = switch cdn.state {
                case .current: .pass
                case .stale: .warn
                case .failing, .unreachable: .fail
                case .pending: .skip
                }
                line("\(host): cdn: \(verdict.rawValue): \(cdn.state.rawValue)\(cdn.detail(originKnown: record.lastGood != nil))")
            }
            if let g = record.google {
                let verdict: CheckStatus = switch g.state {
                case .current, .absent: .pass
                case .stale: .warn
                case .failing: .fail
                case .pending: .skip
                }
                let why = g.detail ?? (g.differs.isEmpty ? nil : g.differs.joined(separator: "; "))
                line("\(host): google: \(verdict.rawValue): \(g.state.rawValue)" + (why.map { ": \($0)" } ?? ""))
            }
        }
        line("\(counted(hosts.count, "domain")): \(hosts.count - failing - warn) ok, \(warn) warn, \(failing) failing")
        return text
    }

    /// `/metrics`, Prometheus text format 0.0.4.
    package static func metrics(_ state: MonitorState) -> String {
        var out = "# HELP aasa_monitor_domains Watched domains by the state of each check.\n# TYPE aasa_monitor_domains gauge\n"
        var origin: [OriginState: Int] = [:]
        var google: [GoogleStatus.State: Int] = [:]
        for record in state.records.values {
            origin[record.origin.state, default: 0] += 1
            if let g = record.google { google[g.state, default: 0] += 1 }
        }
        for s in OriginState.allCases { out += "aasa_monitor_domains{check=\"origin\",state=\"\(s.rawValue)\"} \(origin[s] ?? 0)\n" }
        let cdn = state.schedule.counts()
        for s in CDNStatus.State.allCases { out += "aasa_monitor_domains{check=\"cdn\",state=\"\(s.rawValue)\"} \(cdn[s] ?? 0)\n" }
        if state.googleOn {
            for s in GoogleStatus.State.allCases { out += "aasa_monitor_domains{check=\"google\",state=\"\(s.rawValue)\"} \(google[s] ?? 0)\n" }
        }
        out += "# HELP aasa_monitor_checks_total Checks run, by check and result.\n# TYPE aasa_monitor_checks_total counter\n"
        var results: [(String, [String])] = [("origin", ["ok", "warn", "failing"]), ("bot-blocked", ["pass", "fail"]),
                                             ("cdn", ["current", "stale", "failing", "unreachable"])]
        if state.googleOn { results.append(("google", ["current", "stale", "failing", "absent"])) }
        for (check, names) in results {
            for name in names { out += "aasa_monitor_checks_total{check=\"\(check)\",result=\"\(name)\"} \(state.checks[check]?[name] ?? 0)\n" }
        }
        // Domains whose origin's last check found the bot blocked: the alert's gauge.
        let blocked = state.records.values.count { $0.origin.checks.contains { $0.name == "bot-blocked" && $0.status == .fail } }
        out += "# HELP aasa_monitor_bot_blocked Domains whose origin answers Apple's bot differently from browsers.\n# TYPE aasa_monitor_bot_blocked gauge\n"
        out += "aasa_monitor_bot_blocked \(blocked)\n"
        // The oldest origin change the CDN has not caught up with, per domain, as an age.
        out += "# HELP aasa_monitor_cdn_behind_seconds Longest time since an origin change that Apple's CDN does not serve yet.\n# TYPE aasa_monitor_cdn_behind_seconds gauge\n"
        let now = wallClockMilliseconds() / 1000
        let behind = state.records.values.compactMap(\.changedAt).map { max(0, now - $0 / 1000) }.max() ?? 0
        out += "aasa_monitor_cdn_behind_seconds \(behind)\n"
        let h = state.propagation
        out += "# HELP aasa_monitor_propagation_seconds From an origin change to Apple's CDN serving it.\n# TYPE aasa_monitor_propagation_seconds histogram\n"
        for (i, bound) in h.bounds.enumerated() { out += "aasa_monitor_propagation_seconds_bucket{le=\"\(Int(bound))\"} \(h.buckets[i])\n" }
        out += "aasa_monitor_propagation_seconds_bucket{le=\"+Inf\"} \(h.count)\n"
        out += "aasa_monitor_propagation_seconds_sum \(h.sum)\n"
        out += "aasa_monitor_propagation_seconds_count \(h.count)\n"
        return out
    }
}
