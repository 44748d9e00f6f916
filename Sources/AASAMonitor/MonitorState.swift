import AASACore
import AASAHTTP
import AASATransport
import AASAClient

/// The origin's state: `ok` when every check passes (a check that did not run, `skip`, is no
/// finding), `warn`, `failing`, or `pending` before its first check.
package enum OriginState: String, Sendable, CaseIterable {
    case ok, warn, failing, pending
}

package struct OriginStatus: Sendable {
    package var state: OriginState
    /// Wall-clock milliseconds.
    package var since: Int64
    package var checkedAt: Int64?
    package var version: String?
    package var checks: [CheckLine] = []
}

/// One entry of a domain's story: wall-clock milliseconds and what happened.
package struct StoryEvent: Sendable {
    package var at: Int64
    package var event: String
}

/// Everything the monitor knows of one domain but its CDN copy (which the schedule keeps).
package struct DomainRecord: Sendable {
    /// Events a domain's story keeps, the latest.
    package static let storyLength = 50

    package var domain: MonitoredDomain
    package var origin: OriginStatus
    /// nil with `--dal-base off`.
    package var google: GoogleStatus?
    package var story: [StoryEvent] = []
    /// The last good file the origin served; the CDN's copy is compared with it.
    package var lastGood: OriginVersion?
    /// The origin's last usable reading of `assetlinks.json` (valid, or absent); Google's list
    /// is compared with it.
    package var assetLinks: AssetLinksReading?
    /// When the origin's version last changed while watched, and to what: the CDN has not
    /// served that version yet.
    package var changedAt: Int64?
    package var changedTo: String?
    /// The last check's report, for the findings `--once` prints after `validate`.
    package var report: HostReport?

    mutating func tell(_ at: Int64, _ event: String) {
        story.append(StoryEvent(at: at, event: event))
        if story.count > DomainRecord.storyLength { story.removeFirst(story.count - DomainRecord.storyLength) }
    }
}

/// The monitor's state: the shared CDN schedule (which keeps each domain's CDN copy and decides
/// when each domain is next checked), the domains' records, and the counters of `/metrics`.
package struct MonitorState {
    package var schedule: CDNSchedule
    package var records: [String: DomainRecord] = [:]
    /// `aasa_monitor_checks_total{check,result}`.
    package var checks: [String: [String: Int]] = [:]
    package var propagation = Histogram(bounds: [60, 300, 900, 1800, 3600, 7200, 14_400, 28_800, 43_200, 86_400, 172_800, 345_600])
    /// The domains file was read once (`/readyz`).
    package var ready = false
    /// First results past 20 of a state are counted, not logged, until every domain has one.
    private var firstOrigin = FirstResults<OriginState>()
    private var firstCDN = FirstResults<CDNStatus.State>()
    private var firstGoogle = FirstResults<GoogleStatus.State>()
    let googleOn: Bool

    package init(settings: CDNSchedule.Settings, googleOn: Bool) {
        schedule = CDNSchedule(settings: settings)
        self.googleOn = googleOn
    }

    /// Brings the watched domains in line with the file: new ones scheduled (spread over the
    /// interval at the first call), removed ones dropped, changed words kept.
    package mutating func setDomains(_ domains: [MonitoredDomain], now: Int64, wall: Int64) {
        var watched: [CDNSchedule.Watched] = []
        var keep = Set<String>()
        for d in domains {
            keep.insert(d.host)
            if records[d.host] == nil {
                records[d.host] = DomainRecord(domain: d, origin: OriginStatus(state: .pending, since: wall),
                                               google: googleOn ? .pending(since: wall) : nil)
            } else {
                records[d.host]!.domain = d
            }
            let served: any CDNReference = records[d.host]!.lastGood ?? schedule.sites[d.host]?.served ?? OriginVersion()
            watched.append(.init(key: d.host, host: d.host, served: served))
        }
        for host in records.keys where !keep.contains(host) { records[host] = nil }
        _ = schedule.update(watched, now: now, wall: wall)
        ready = true
    }

    private mutating func count(_ check: String, _ result: String) {
        checks[check, default: [:]][result, default: 0] += 1
    }

    /// Records one check's findings; returns the changes to log. Findings of a check the
    /// schedule gave up on (or of a domain dropped meanwhile) are ignored.
    package mutating func finish(_ check: CDNSchedule.Check, _ findings: DomainFindings, now: Int64, wall: Int64) -> [WatchLogLine] {
        guard schedule.sites[check.key]?.checking == check.token, var record = records[check.key] else {
            _ = schedule.finish(check, findings.cdn, now: now, wall: wall)
            return []
        }
        var changes: [WatchLogLine] = []
        let host = check.host

        // The origin's version: the CDN's copy is compared with the last good file from now on.
        var cdnEvents: [CDNSchedule.Event] = []
        if let good = findings.good, good.etag != record.lastGood?.etag {
            if let previous = record.lastGood {
                record.tell(wall, "the origin's version changed from \(previous.etag) to \(good.etag)")
                record.changedAt = wall
                record.changedTo = good.etag
                // Re-evaluated at once against the copy last fetched, and checked again soon.
                cdnEvents += schedule.update([.init(key: check.key, host: host, served: good)], gone: [], now: now, wall: wall)
            } else {
                record.tell(wall, "the origin serves version \(good.etag)")
                schedule.adopt(good, for: check.key)
            }
            record.lastGood = good
        }
        let previousCDN = schedule.sites[check.key]?.status
        cdnEvents += schedule.finish(check, findings.cdn, now: now, wall: wall)

        // origin
        let statuses = findings.checks.map(\.status)
        let state: OriginState = statuses.contains(.fail) ? .failing : statuses.contains(.warn) ? .warn : .ok
        let old = record.origin
        let reason = findings.checks.first { $0.status == (state == .failing ? .fail : .warn) }.map { "\($0.name): \($0.message)" }
        record.origin = OriginStatus(state: state, since: state == old.state ? old.since : wall, checkedAt: wall,
                                     version: findings.good?.etag ?? findings.report.file.map { OriginVersion(file: $0, etag: findings.report.etag).etag } ?? old.version,
                                     checks: findings.checks)
        // What `--once` prints after `validate`; the file itself is in `lastGood`, as bytes.
        var report = findings.report
        report.file = nil
        record.report = report
        count("origin", state.rawValue)
        if let blocked = findings.botBlocked { count("bot-blocked", blocked ? "fail" : "pass") }
        if state != old.state {
            record.tell(wall, "origin \(old.state.rawValue) -> \(state.rawValue)" + (reason.map { ": \($0)" } ?? ""))
            if old.state != .pending || firstOrigin.count(state) {
                changes.append(.change("origin", host: host, from: old.state.rawValue, to: state.rawValue, afterMilliseconds: wall - old.since,
                                       reason: reason, bad: state == .failing || state == .warn))
            }
        }

        // cdn
        for event in cdnEvents {
            let (from, to, after): (String, CDNStatus.State, Int64)
            switch event {
            case .checked(let s):
                count("cdn", s.rawValue)
                continue
            case .first(_, _, let state): (from, to, after) = ("pending", state, wall - (previousCDN?.since ?? wall))
            case .changed(_, let f, let t, let a): (from, to, after) = (f.rawValue, t, a)
            }
            let reason = to == .current ? caughtUp(&record, key: check.key, wall: wall) : nil
            let detail = reason.map { ": \($0)" } ?? schedule.sites[check.key]?.status.detail(originKnown: record.lastGood != nil) ?? ""
            record.tell(wall, "cdn \(from) -> \(to.rawValue)\(detail)")
            if case .first = event, !firstCDN.count(to) { continue }
            changes.append(.change("cdn", host: host, from: from, to: to.rawValue, afterMilliseconds: after, reason: reason, bad: to != .current))
        }

        // google
        var unusable: String?
        if case .unusable(let why) = findings.assetLinks { unusable = why } else { record.assetLinks = findings.assetLinks }
        if let answer = findings.google, let oldGoogle = record.google {
            let g = GoogleView.judge(answer, origin: record.assetLinks, unusable: unusable)
            var status = GoogleStatus(state: g.state, since: g.state == oldGoogle.state ? oldGoogle.since : wall, checkedAt: wall)
            status.differs = g.differs
            status.detail = g.detail
            record.google = status
            count("google", g.state.rawValue)
            if g.state != oldGoogle.state {
                let why = g.detail ?? (g.differs.isEmpty ? nil : g.differs.joined(separator: "; "))
                record.tell(wall, "google \(oldGoogle.state.rawValue) -> \(g.state.rawValue)" + (why.map { ": \($0)" } ?? ""))
                if oldGoogle.state != .pending || firstGoogle.count(g.state) {
                    changes.append(.change("google", host: host, from: oldGoogle.state.rawValue, to: g.state.rawValue,
                                           afterMilliseconds: wall - oldGoogle.since, reason: why, bad: g.state == .stale || g.state == .failing))
                }
            }
        }
        records[check.key] = record
        return changes + summaries()
    }

    /// When the CDN, now `current`, serves the version the origin changed to: how long that took,
    /// from the check that saw the origin's new version to this one (observed once in the
    /// histogram); nil when no change is waiting for it.
    private mutating func caughtUp(_ record: inout DomainRecord, key: String, wall: Int64) -> String? {
        guard let changedAt = record.changedAt, let version = record.changedTo, schedule.sites[key]?.served.etag == version else { return nil }
        let took = wall - changedAt
        propagation.observe(Double(took) / 1000)
        record.changedAt = nil
        record.changedTo = nil
        return "the origin's version \(version) served by Apple's CDN after \(durationText(milliseconds: took))"
    }

    /// Checks the schedule gave up on (no answer within the bound): their CDN state becomes
    /// `unreachable` (timeout); the origin keeps its last state.
    package mutating func expire(now: Int64, wall: Int64) -> [WatchLogLine] {
        var changes: [WatchLogLine] = []
        let events = schedule.expire(now: now, wall: wall)
        if events.isEmpty { return [] }
        for event in events {
            switch event {
            case .checked(let s): count("cdn", s.rawValue)
            case .first(_, let host, let to):
                records[host]?.tell(wall, "cdn pending -> \(to.rawValue): the check got no answer in time")
                if firstCDN.count(to) {
                    changes.append(.change("cdn", host: host, from: "pending", to: to.rawValue, afterMilliseconds: 0, reason: "timeout", bad: true))
                }
            case .changed(let host, let from, let to, let after):
                records[host]?.tell(wall, "cdn \(from.rawValue) -> \(to.rawValue): the check got no answer in time")
                changes.append(.change("cdn", host: host, from: from.rawValue, to: to.rawValue, afterMilliseconds: after, reason: "timeout", bad: true))
            }
        }
        return changes + summaries()
    }

    /// Once every domain has its first result: how many more of each state were not logged.
    private mutating func summaries() -> [WatchLogLine] {
        guard schedule.pendingCount == 0 else { return [] }
        var out: [WatchLogLine] = []
        func add(_ check: String, _ counts: [(String, Int)]) {
            for (state, more) in counts { out.append(WatchLogLine(.info, "\(check): \(more) more domains \(state) at their first check")) }
        }
        add("origin", firstOrigin.finish().map { ($0.0.rawValue, $0.1) })
        add("cdn", firstCDN.finish().map { ($0.0.rawValue, $0.1) })
        add("google", firstGoogle.finish().map { ($0.0.rawValue, $0.1) })
        return out
    }
}

/// A Prometheus histogram: cumulative buckets by upper bound, a sum and a count.
package struct Histogram: Sendable {
    package let bounds: [Double]
    package private(set) var buckets: [Int]
    package private(set) var sum = 0.0
    package private(set) var count = 0

    package init(bounds: [Double]) {
        self.bounds = bounds
        buckets = Array(repeating: 0, count: bounds.count)
    }

    package mutating func observe(_ value: Double) {
        for (i, bound) in bounds.enumerated() where value <= bound { buckets[i] += 1 }
        sum += value
        count += 1
    }
}
