import AASACore
import Testing
@testable import AASAClient
@testable import AASAMonitor

private let v1 = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/old/*"}]}]}}"#
private let v2 = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/new/*"}]}]}}"#
private let second: Int64 = 1_000_000

/// What one check found: the origin serving `file` with `etag`, the CDN holding `cdn`, the
/// origin's assetlinks.json read as `assetLinks`, Google answering `google`.
private func findings(_ file: String, etag: String, cdn: String, assetLinks: AssetLinksReading = .absent,
                      google: GoogleAnswer = .listed([])) -> DomainFindings {
    var report = HostReport(host: "example.com", url: "https://example.com/.well-known/apple-app-site-association")
    for name in HostReport.checkNames where name != "cdn" { report.set(name, .pass, "fine") }
    let aasa = AASAFile(bytes: Array(file.utf8))
    report.file = aasa
    report.etag = etag
    return DomainFindings(report: report, checks: report.checks.filter { $0.name != "cdn" }, good: OriginVersion(file: aasa, etag: etag),
                          botBlocked: nil, cdn: CDNAnswer(outcome: .response(status: 200, body: Array(cdn.utf8))),
                          assetLinks: assetLinks, google: google)
}

/// Runs one check of example.com at `time` seconds, answering it with `f`.
private func check(_ state: inout MonitorState, at time: Int64, _ f: DomainFindings) -> [WatchLogLine] {
    guard let c = state.schedule.start(now: time * second) else { Issue.record("no check due at \(time) s"); return [] }
    return state.finish(c, f, now: time * second, wall: time * 1000)
}

@Suite struct MonitorStateTests {
    @Test func anOriginChangeIsToldAndTheCDNCatchingUpSaysHowLongItTook() {
        var state = MonitorState(settings: .init(intervalSeconds: 3600, rate: 2), googleOn: true)
        state.setDomains([MonitoredDomain(host: "example.com", line: 1)], now: 0, wall: 0)
        let first = check(&state, at: 0, findings(v1, etag: "\"1\"", cdn: v1))
        #expect(first.compactMap(\.change).map { "\($0.check) \($0.from) -> \($0.to)" } == ["origin pending -> ok", "cdn pending -> current", "google pending -> absent"])
        #expect(state.records["example.com"]?.origin.version == "\"1\"")

        // The origin changes; the CDN still holds the old file an hour later.
        let changed = check(&state, at: 3600, findings(v2, etag: "\"2\"", cdn: v1))
        #expect(changed.compactMap(\.change).map { "\($0.check) \($0.from) -> \($0.to)" } == ["cdn current -> stale"])
        let story = state.records["example.com"]!.story.map(\.event)
        #expect(story.contains("the origin's version changed from \"1\" to \"2\""))
        #expect(state.schedule.sites["example.com"]?.status.differs.isEmpty == false)

        // Checked again soon after the change (within min(60 s, interval)), then the CDN catches up.
        #expect(state.schedule.nextWake(now: 3600 * second)! <= 3660 * second)
        _ = check(&state, at: 3660, findings(v2, etag: "\"2\"", cdn: v1))
        let caughtUp = check(&state, at: 7260, findings(v2, etag: "\"2\"", cdn: v2))
        #expect(state.schedule.sites["example.com"]?.status.state == .current)
        // The change of state itself says how long that took, in the story and in the log.
        #expect(state.records["example.com"]!.story.last?.event == "cdn stale -> current: the origin's version \"2\" served by Apple's CDN after 1h1m")
        #expect(caughtUp.map(\.message) == ["cdn: example.com stale -> current after 1h1m: the origin's version \"2\" served by Apple's CDN after 1h1m"])
        #expect(state.propagation.count == 1)
        #expect(state.propagation.sum == 3660)
        #expect(state.checks["cdn"]?["current"] == 2)
        #expect(state.checks["cdn"]?["stale"] == 2)
    }

    @Test func theStoryKeepsTheLast50Events() {
        var state = MonitorState(settings: .init(intervalSeconds: 1, rate: 1000), googleOn: false)
        state.setDomains([MonitoredDomain(host: "example.com", line: 1)], now: 0, wall: 0)
        for i in 0..<60 {
            _ = check(&state, at: Int64(i) * 2, findings(i % 2 == 0 ? v1 : v2, etag: "\"\(i)\"", cdn: v1))
        }
        let story = state.records["example.com"]!.story
        #expect(story.count == DomainRecord.storyLength)
        #expect(story.contains { $0.event == "the origin's version changed from \"58\" to \"59\"" })
    }

    @Test func aDomainRemovedFromTheFileIsDroppedAndItsLateFindingsIgnored() {
        var state = MonitorState(settings: .init(intervalSeconds: 3600, rate: 2), googleOn: false)
        state.setDomains([MonitoredDomain(host: "example.com", line: 1)], now: 0, wall: 0)
        let c = state.schedule.start(now: 0)!
        state.setDomains([], now: second, wall: 1000)
        #expect(state.finish(c, findings(v1, etag: "\"1\"", cdn: v1), now: 2 * second, wall: 2000).isEmpty)
        #expect(state.records.isEmpty)
    }

    @Test func googleIsComparedWithTheLastValidAssetLinksWhenTheFileTurnsBadAndPendingWhenThereWasNone() {
        let a = GoogleView.App(packageName: "com.example.app", fingerprint: "AA:BB")
        var state = MonitorState(settings: .init(intervalSeconds: 10, rate: 1000), googleOn: true)
        state.setDomains([MonitoredDomain(host: "example.com", line: 1)], now: 0, wall: 0)
        // HTML from the first check on: nothing to compare Google's (empty) list with.
        _ = check(&state, at: 0, findings(v1, etag: "\"1\"", cdn: v1, assetLinks: .unusable("assetlinks.json: 1 error")))
        #expect(state.records["example.com"]?.google?.state == .pending)
        // A valid file, then HTML again: Google is still compared with the valid one.
        _ = check(&state, at: 10, findings(v1, etag: "\"1\"", cdn: v1, assetLinks: .statements([a]), google: .listed([a])))
        #expect(state.records["example.com"]?.google?.state == .current)
        _ = check(&state, at: 20, findings(v1, etag: "\"1\"", cdn: v1, assetLinks: .unusable("assetlinks.json: 1 error"), google: .listed([])))
        #expect(state.records["example.com"]?.google?.state == .stale)
        #expect(state.records["example.com"]?.google?.differs == ["Google does not list com.example.app (AA:BB) yet"])
    }
}
