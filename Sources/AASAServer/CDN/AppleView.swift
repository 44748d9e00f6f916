import AASACore
import AASAClient
import AASAHTTP

/// What Apple sees of each site, beside what the server serves: the last fetches by Apple's
/// CDN and by devices, the copy the CDN holds (when the watch is on), and both told as one
/// story (docs/apple-view.md).
final class AppleView: Sendable {
    let fetches = FetchRecords()
    /// nil with `--cdn-watch off`.
    let cdn: CDNWatch?

    init(cdn: CDNWatch? = nil) {
        self.cdn = cdn
    }

    /// Everything a whole listing needs, each lock taken once.
    struct Listing {
        var fetches: [String: FetchRecords.Entry]
        /// nil when the watch is off.
        var cdn: [String: CDNStatus]?
    }

    func listing() -> Listing {
        Listing(fetches: fetches.all(), cdn: cdn?.statuses())
    }

    /// A site entry's `fetches`, `cdn` and `story` fields.
    static func write(_ site: Site, _ listing: Listing, to w: inout JSONWriter) {
        let key = site.name.description
        let entry = listing.fetches[key]
        w.key("fetches")
        w.beginObject()
        w.key("appleCDN")
        if let f = entry?.appleCDN { f.write(to: &w) } else { w.null() }
        w.key("device")
        if let f = entry?.device { f.write(to: &w) } else { w.null() }
        w.endObject()
        let cdn = listing.cdn?[key]
        w.key("cdn")
        if let cdn { cdn.write(to: &w) } else { w.null() }
        w.key("story"); w.value(SiteStory.line(SiteStory.events(site, fetches: entry, cdn: cdn)))
    }
}

/// A site's story from its file to the devices: when the file served changed, when Apple's CDN
/// and a device last fetched it and what they got, and what the CDN holds now.
enum SiteStory {
    struct Event: Equatable {
        /// Wall-clock milliseconds.
        var at: Int64
        /// `changed`, `appleCDN`, `device` or `cdn`.
        var kind: String
        /// Before the time: "Apple fetched".
        var label: String
        /// After the time: ", got it (200, version …)".
        var detail: String
    }

    static func events(_ site: Site, fetches: FetchRecords.Entry?, cdn: CDNStatus?) -> [Event] {
        var out: [Event] = []
        let served = site.served
        if let served {
            out.append(Event(at: Int64(served.lastModified) * 1000, kind: "changed", label: "file changed",
                             detail: " (version \(served.version))"))
        } else {
            out.append(Event(at: 0, kind: "changed", label: "no AASA file served", detail: ""))
        }
        if let f = fetches?.appleCDN {
            out.append(Event(at: f.at, kind: "appleCDN", label: "Apple fetched", detail: ", " + got(f, served: served)))
        }
        if let f = fetches?.device {
            out.append(Event(at: f.at, kind: "device", label: "a device fetched", detail: ", " + got(f, served: served)))
        }
        if let cdn {
            switch cdn.state {
            case .current:
                out.append(Event(at: cdn.since, kind: "cdn", label: "CDN current since", detail: ""))
            case .stale:
                var age = ""
                if let a = cdn.age, let m = cdn.maxAge { age = " (age \(humanSeconds(a)) of \(humanSeconds(m)))" }
                else if let a = cdn.age { age = " (age \(humanSeconds(a)))" }
                out.append(Event(at: cdn.checkedAt ?? cdn.since, kind: "cdn", label: "CDN still old at", detail: age))
            case .failing:
                var why = cdn.httpStatus.map { String($0) } ?? ""
                if let reason = cdn.failureReason { why += ", " + reason }
                out.append(Event(at: cdn.since, kind: "cdn", label: "CDN failing since", detail: " (\(why))"))
            case .unreachable:
                out.append(Event(at: cdn.since, kind: "cdn", label: "CDN unreachable since", detail: " (\(cdn.failureReason ?? "?"))"))
            case .pending:
                out.append(Event(at: Int64.max, kind: "cdn", label: "CDN not checked yet", detail: ""))
            }
        }
        return out.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    /// What a fetch got, against the version served now.
    private static func got(_ f: FetchRecords.Fetch, served: ServedVersion?) -> String {
        guard f.status == 200 || f.status == 304 else { return "got \(f.status)" }
        guard let version = f.version else { return "got \(f.status)" }
        if version == served?.version { return "got it (\(f.status), version \(version))" }
        return "got an older version (\(f.status), version \(version))"
    }

    /// One line: "file changed T (version …) → Apple fetched T, got it (200, version …) → …".
    static func line(_ events: [Event]) -> String {
        events.map { e in
            e.at == 0 || e.at == Int64.max ? e.label + e.detail : "\(e.label) \(HTTPDate.iso8601(milliseconds: e.at))\(e.detail)"
        }.joined(separator: " → ")
    }

    static func write(_ events: [Event], to w: inout JSONWriter) {
        w.beginArray()
        for e in events {
            w.beginObject()
            w.key("at"); w.value(e.at == 0 || e.at == Int64.max ? nil : HTTPDate.iso8601(milliseconds: e.at))
            w.key("kind"); w.value(e.kind)
            w.key("label"); w.value(e.label)
            w.key("detail"); w.value(e.detail)
            w.endObject()
        }
        w.endArray()
    }
}

/// `30 min`, `6 h`, `1 h 30 min`, `45 s`.
func humanSeconds(_ s: Int) -> String {
    if s >= 3600 { return s % 3600 / 60 == 0 ? "\(s / 3600) h" : "\(s / 3600) h \(s % 3600 / 60) min" }
    if s >= 60 { return "\(s / 60) min" }
    return "\(s) s"
}
