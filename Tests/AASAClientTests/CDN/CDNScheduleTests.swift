import AASACore
import AASAHTTP
import Testing
@testable import AASAClient

private let oldFile = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/old/*"}]}]}}"#
private let newFile = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/new/*"}]}]}}"#

/// A version of a site's file as the schedule sees it: its bytes, their AASA reading and a
/// strong validator of its bytes (the server's `ServedVersion` and the monitor's `OriginVersion`
/// are the real ones).
private final class FileVersion: CDNReference {
    let bytes: [UInt8]
    let etag: String
    var aasaFile: AASAFile? { AASAFile(bytes: bytes) }

    init(_ json: String) {
        bytes = Array(json.utf8)
        etag = "\"" + SHA256Digest.hash(bytes).prefix(8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined() + "\""
    }
}

private func version(_ json: String) -> FileVersion { FileVersion(json) }

private func ok(_ json: String, age: Int? = nil, maxAge: Int? = nil) -> CDNAnswer {
    CDNAnswer(outcome: .response(status: 200, body: Array(json.utf8)), age: age, maxAge: maxAge)
}

private let second: Int64 = 1_000_000

/// Runs the schedule on a fake clock from `start` in steps of `step`, answering every check at
/// once with `answer` (events to `events`); returns the start times of the checks, by site.
private func drive(_ schedule: inout CDNSchedule, from start: Int64 = 0, until end: Int64, step: Int64 = 1000,
                   events: ([CDNSchedule.Event]) -> Void = { _ in },
                   answer: (CDNSchedule.Check) -> CDNAnswer?) -> [(time: Int64, key: String)] {
    var starts: [(Int64, String)] = []
    var now = start
    while now <= end {
        while let check = schedule.start(now: now) {
            starts.append((now, check.key))
            if let a = answer(check) { events(schedule.finish(check, a, now: now, wall: now / 1000)) }
        }
        now += step
    }
    return starts
}

@Suite struct CDNScheduleTests {
    @Test func siteKOfSIsFirstCheckedAtKIntervalsOverS() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 100, rate: 100))
        let v = version(oldFile)
        _ = s.update((0..<10).map { .init(key: "site\($0).example", host: "site\($0).example", served: v) }, now: 0, wall: 0)
        let starts = drive(&s, until: 99 * second) { _ in ok(oldFile) }
        #expect(starts.map(\.time) == (0..<10).map { Int64($0) * 10 * second })
        #expect(starts.map(\.key) == (0..<10).map { "site\($0).example" })
    }

    @Test func noOneSecondWindowHoldsMoreStartsThanTheRate() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 1, rate: 5))
        let v = version(oldFile)
        _ = s.update((0..<200).map { .init(key: "s\($0)", host: "s\($0)", served: v) }, now: 0, wall: 0)
        let times = drive(&s, until: 30 * second) { _ in ok(oldFile) }.map(\.time)
        #expect(times.count > 100, "checks keep starting")
        for (i, t) in times.enumerated() {
            let inWindow = times[i...].prefix { $0 < t + second }.count
            #expect(inWindow <= 5, "\(inWindow) starts in the second from \(t)")
        }
    }

    @Test func checksUnderWayAreBoundedAndTheRestWait() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 1, rate: 1000, timeoutMilliseconds: 10_000))
        let v = version(oldFile)
        _ = s.update((0..<500).map { .init(key: "s\($0)", host: "s\($0)", served: v) }, now: 0, wall: 0)
        // Nothing ever answers (a hanging CDN).
        let starts = drive(&s, until: 5 * second) { _ in nil }
        #expect(starts.count == s.settings.maxInFlight)
        #expect(s.inFlight == 64)
        #expect(s.nextWake(now: 5 * second) == nil, "nothing to wake for until a check ends")
    }

    @Test func aCheckThatNeverEndsIsGivenUpAsATimeoutAndItsLateAnswerIgnored() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 600, rate: 2, timeoutMilliseconds: 2000))
        _ = s.update([.init(key: "a", host: "a", served: version(oldFile))], now: 0, wall: 0)
        let started0 = s.start(now: 0)
        let check = try #require(started0)
        #expect(s.expire(now: 2 * second, wall: 2000).isEmpty)
        let events = s.expire(now: 3 * second, wall: 3000)
        #expect(events.contains(.checked(.unreachable)))
        #expect(s.sites["a"]?.status.failureReason == "timeout")
        #expect(s.inFlight == 0)
        #expect(s.finish(check, ok(oldFile), now: 4 * second, wall: 4000).isEmpty)
        #expect(s.sites["a"]?.status.state == .unreachable)
    }

    @Test func aSiteAddedAtRunTimeIsCheckedWithinAMinute() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 21_600, rate: 2))
        let v = version(oldFile)
        _ = s.update([.init(key: "a", host: "a", served: v)], now: 0, wall: 0)
        #expect(s.start(now: 0)?.key == "a")
        _ = s.update([.init(key: "a", host: "a", served: v), .init(key: "b", host: "b", served: v)], now: 10 * second, wall: 10_000)
        #expect(s.sites["b"]?.status.state == .pending)
        #expect(s.sites["b"]!.due <= 70 * second)
    }

    @Test func aStaleCopyIsCheckedAgainWhenTheCDNWillHaveRefreshedIt() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 21_600, rate: 2))
        _ = s.update([.init(key: "a", host: "a", served: version(newFile))], now: 0, wall: 0)
        let started0 = s.start(now: 0)
        var check = try #require(started0)
        // max-age 21600, Age 20000: the CDN refreshes in 1600 s, sooner than interval/10 (2160 s).
        _ = s.finish(check, ok(oldFile, age: 20_000, maxAge: 21_600), now: second, wall: 1000)
        #expect(s.sites["a"]?.status.state == .stale)
        #expect(s.sites["a"]!.due == 2160 * second)
        let again = s.start(now: 2160 * second)
        check = try #require(again)
        // Age 1000: the copy lives 20 600 s more.
        _ = s.finish(check, ok(oldFile, age: 1000, maxAge: 21_600), now: 2161 * second, wall: 2_161_000)
        #expect(s.sites["a"]!.due == (2160 + 20_600) * second)
        #expect(s.sites["a"]?.status.age == 1000)
        #expect(s.sites["a"]?.status.maxAge == 21_600)
    }

    @Test func otherStatesFollowTheRegularInterval() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 600, rate: 2))
        _ = s.update([.init(key: "a", host: "a", served: version(oldFile))], now: 0, wall: 0)
        let started0 = s.start(now: 0)
        let check = try #require(started0)
        let failing = CDNAnswer(outcome: .response(status: 404, body: []), failureReason: "SWCERR00301 Timeout", maxAge: 3600)
        _ = s.finish(check, failing, now: second, wall: 1000)
        #expect(s.sites["a"]?.status.state == .failing)
        #expect(s.sites["a"]?.status.failureReason == "SWCERR00301 Timeout")
        #expect(s.sites["a"]!.due == 600 * second)
    }

    @Test func aNewVersionIsJudgedAtOnceAgainstTheLastCopyAndCheckedAgainSoon() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 21_600, rate: 2))
        _ = s.update([.init(key: "a", host: "a", served: version(oldFile))], now: 0, wall: 0)
        let started0 = s.start(now: 0)
        let check = try #require(started0)
        var events = s.finish(check, ok(newFile), now: second, wall: 1000)
        #expect(events == [.checked(.stale), .first(key: "a", host: "a", state: .stale)])
        #expect(s.sites["a"]?.status.differs.isEmpty == false)
        // The file is edited to what the CDN holds: current at once, and checked within a minute.
        events = s.update([.init(key: "a", host: "a", served: version(newFile))], now: 100 * second, wall: 100_000)
        #expect(events == [.changed(host: "a", from: .stale, to: .current, afterMilliseconds: 99_000)])
        #expect(s.sites["a"]?.status.state == .current)
        #expect(s.sites["a"]?.status.differs == [])
        #expect(s.sites["a"]?.status.since == 100_000)
        #expect(s.sites["a"]!.due <= 160 * second)
        // The same version again (a rejected edit, a reload of another site) changes nothing.
        let due = s.sites["a"]!.due
        #expect(s.update([.init(key: "a", host: "a", served: version(newFile))], now: 120 * second, wall: 120_000).isEmpty)
        #expect(s.sites["a"]!.due == due)
    }

    /// Issue 39's conditions: 120 sites, `--cdn-interval 240 --cdn-rate 2` (min(60 s, interval)
    /// is 60 s, not the interval), the stale site's copy cached 6 hours, and an edit to the
    /// CDN's JSON in other bytes reaching the watch as a change of that site alone.
    @Test func aStaleSiteAmongManyEditedToMatchIsCheckedWithinAMinuteWhileTheOthersKeepTheirSchedule() throws {
        let keys = (0..<120).map { "s\($0).example" }
        // 66th in byte order: first checked at 65·240/120 = 130 s, in the middle of the first pass.
        let target = "s5.example"
        let served = version(newFile)
        let answer = { (check: CDNSchedule.Check) in ok(check.key == target ? oldFile : newFile, age: 120, maxAge: 21_600) }
        func schedule() -> CDNSchedule {
            var s = CDNSchedule(settings: .init(intervalSeconds: 240, rate: 2))
            _ = s.update(keys.map { .init(key: $0, host: $0, served: served) }, now: 0, wall: 0)
            return s
        }
        let edited = 140 * second
        let end = edited + 72 * second

        var plain = schedule()
        let unedited = drive(&plain, until: end, step: 10_000, answer: answer)

        var s = schedule()
        var changes: [CDNSchedule.Event] = []
        let keep = { (events: [CDNSchedule.Event]) in changes += events.filter { if case .changed = $0 { true } else { false } } }
        var starts = drive(&s, until: edited - 1, step: 10_000, events: keep, answer: answer)
        #expect(s.sites[target]?.status.state == .stale)
        #expect(starts.filter { $0.key == target }.map(\.time) == [130 * second])
        let compact = oldFile.replacingOccurrences(of: ": ", with: ":") + "\n"
        keep(s.update([.init(key: target, host: target, served: version(compact))], gone: [], now: edited, wall: edited / 1000))
        #expect(s.sites[target]?.status.state == .current, "judged at once against the copy last fetched")
        starts += drive(&s, from: edited, until: end, step: 10_000, events: keep, answer: answer)

        let rechecks = starts.filter { $0.key == target && $0.time > edited }.map(\.time)
        #expect(rechecks.count == 1 && rechecks[0] <= edited + 60 * second, "\(rechecks.map { $0 / second }) s")
        #expect(s.sites[target]!.status.checkedAt! > edited / 1000)
        #expect(s.sites[target]?.status.state == .current)
        #expect(changes == [.changed(host: target, from: .stale, to: .current, afterMilliseconds: 10_000)])
        // The others: the same checks, each at most one start (1/rate and a tenth) later for
        // the one that took a slot.
        let spacing = s.settings.spacingMicroseconds
        for key in keys where key != target {
            let mine = starts.filter { $0.key == key }.map(\.time)
            let before = unedited.filter { $0.key == key }.map(\.time)
            #expect(mine.count == before.count, "\(key)")
            for (a, b) in zip(mine, before) { #expect(a >= b && a <= b + spacing, "\(key): \(a) against \(b)") }
        }
    }

    @Test func sitesThatGoAwayAreNoLongerWatched() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 60, rate: 2))
        let v = version(oldFile)
        _ = s.update([.init(key: "a", host: "a", served: v), .init(key: "b", host: "b", served: v)], now: 0, wall: 0)
        #expect(s.pendingCount == 2)
        _ = s.update([.init(key: "b", host: "b", served: v)], now: second, wall: 1000)
        #expect(s.sites["a"] == nil)
        #expect(s.pendingCount == 1)
        #expect(s.counts()[.pending] == 1)
        // Back a minute later: checked within min(60 s, interval) of its return, not at its old time.
        _ = s.update([.init(key: "a", host: "a", served: v), .init(key: "b", host: "b", served: v)], now: 60 * second, wall: 60_000)
        #expect(s.sites["a"]?.status.state == .pending)
        #expect(s.sites["a"]!.due >= 60 * second)
        #expect(s.start(now: 0) == nil, "the heap entry of the site that went away is stale")
        #expect(s.start(now: 30 * second)?.key == "b")
        #expect(s.start(now: 60 * second)?.key == "a")
    }
}

extension CDNScheduleTests {
    @Test func anEditAwayFromACurrentCopyIsStaleAtOnce() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 600, rate: 2))
        let old = version(oldFile)
        _ = s.update([.init(key: "a", host: "a", served: old)], now: 0, wall: 0)
        let started = s.start(now: 0)
        let check = try #require(started)
        _ = s.finish(check, ok(oldFile), now: second, wall: 1000)
        #expect(s.sites["a"]?.status.state == .current)
        let events = s.update([.init(key: "a", host: "a", served: version(newFile))], now: 2 * second, wall: 2000)
        #expect(events == [.changed(host: "a", from: .current, to: .stale, afterMilliseconds: 1000)])
        #expect(s.sites["a"]?.status.differs.isEmpty == false)
    }

    @Test func anUpdateOfTheChangesAloneKeepsEveryOtherSite() {
        var s = CDNSchedule(settings: .init(intervalSeconds: 600, rate: 2))
        let v = version(oldFile)
        _ = s.update((0..<5).map { .init(key: "s\($0)", host: "s\($0)", served: v) }, now: 0, wall: 0)
        let dues = s.sites.mapValues(\.due)
        // s1's version changed, s3 stopped serving: nothing is said of the others.
        _ = s.update([.init(key: "s1", host: "s1", served: version(newFile))], gone: ["s3"], now: second, wall: 1000)
        #expect(Set(s.sites.keys) == ["s0", "s1", "s2", "s4"])
        #expect(s.sites["s1"]?.served.etag == version(newFile).etag)
        for key in ["s0", "s2", "s4"] { #expect(s.sites[key]?.due == dues[key]) }
        #expect(s.pendingCount == 4)
    }

    @Test func withoutSpreadingTheFirstPassEverySiteIsDueAtOncePacedByTheRateAlone() {
        var settings = CDNSchedule.Settings(intervalSeconds: 3600, rate: 10)
        settings.onePass = true
        var s = CDNSchedule(settings: settings)
        let v = version(oldFile)
        _ = s.update((0..<5).map { .init(key: "s\($0)", host: "s\($0)", served: v) }, now: 0, wall: 0)
        let starts = drive(&s, until: second) { _ in ok(oldFile) }
        #expect(starts.map(\.key) == ["s0", "s1", "s2", "s3", "s4"])
        // 1/rate apart, and a tenth more.
        #expect(starts.map(\.time) == [0, 110_000, 220_000, 330_000, 440_000])
    }

    @Test func inOnePassEachSiteIsCheckedOnceEvenWhenItsVersionChangesOrTheIntervalPasses() throws {
        var settings = CDNSchedule.Settings(intervalSeconds: 1, rate: 10)
        settings.onePass = true
        var s = CDNSchedule(settings: settings)
        _ = s.update((0..<3).map { .init(key: "s\($0)", host: "s\($0)", served: version(oldFile)) }, now: 0, wall: 0)
        let started = s.start(now: 0)
        let first = try #require(started)
        _ = s.finish(first, ok(oldFile), now: 1000, wall: 1)
        // s0's version changes while the others are still checked: re-evaluated, not re-checked.
        let events = s.update([.init(key: "s0", host: "s0", served: version(newFile))], gone: [], now: 2000, wall: 2)
        #expect(events == [.changed(host: "s0", from: .current, to: .stale, afterMilliseconds: 1)])
        // Many intervals go by while the pass lasts: s1 and s2 are checked, s0 is not again.
        let starts = drive(&s, from: 3000, until: 10 * second) { _ in ok(oldFile) }
        #expect(starts.map(\.key) == ["s1", "s2"])
        #expect(s.pendingCount == 0)
        #expect(s.nextWake(now: 10 * second) == nil)
    }

    @Test func anAdoptedVersionIsComparedWithButNotCheckedAgainSoon() throws {
        var s = CDNSchedule(settings: .init(intervalSeconds: 600, rate: 2))
        _ = s.update([.init(key: "a", host: "a", served: version(oldFile))], now: 0, wall: 0)
        let started = s.start(now: 0)
        let check = try #require(started)
        s.adopt(version(newFile), for: "a")
        _ = s.finish(check, ok(newFile), now: second, wall: 1000)
        #expect(s.sites["a"]?.status.state == .current)
        #expect(s.nextWake(now: second) == 600 * second)
    }
}

@Suite struct CDNAnswerTests {
    @Test func maxAgeAndAgeAreReadAsTheCDNSendsThem() {
        #expect(CDNAnswer.maxAge("max-age=21600") == 21_600)
        #expect(CDNAnswer.maxAge("public, max-age=3600, must-revalidate") == 3600)
        #expect(CDNAnswer.maxAge("no-cache") == nil)
        #expect(CDNAnswer.maxAge(nil) == nil)
        #expect(CDNAnswer.seconds(" 120 ") == 120)
        #expect(CDNAnswer.seconds("-1") == nil)
        // A peer's number too large for arithmetic is not taken.
        #expect(CDNAnswer.seconds("99999999999999999999") == nil)
    }

    @Test func aClientFailureNamesItsCause() {
        #expect(CDNAnswer(error: HTTPClientError(phase: .resolve, message: "x")).outcome == .unreachable(cause: "dns", message: "x"))
        #expect(CDNAnswer(error: HTTPClientError(phase: .connect, message: "x")).outcome == .unreachable(cause: "connect", message: "x"))
        #expect(CDNAnswer(error: HTTPClientError(phase: .tls, message: "x")).outcome == .unreachable(cause: "tls", message: "x"))
        #expect(CDNAnswer(error: HTTPClientError(phase: .response, message: "x", isTimeout: true)).outcome == .unreachable(cause: "timeout", message: "x"))
        #expect(CDNAnswer(error: HTTPClientError(phase: .connect, message: "x", isTimeout: true)).outcome == .unreachable(cause: "timeout", message: "x"))
    }

    @Test func anAnswerWhoseBodyBrokeOffStillCountsAsAnAnswer() {
        let head = HTTPResponseHead(version: "HTTP/1.1", status: 200, reason: "OK", fields: [("Cache-Control", "max-age=21600"), ("Age", "5")])
        let answer = CDNAnswer(error: HTTPClientError(phase: .response, message: "over the limit", head: head))
        #expect(answer.outcome == .response(status: 200, body: []))
        #expect(answer.maxAge == 21_600)
        let (state, differs) = answer.evaluate(served: AASAFile(bytes: Array(oldFile.utf8)))
        #expect(state == .stale)
        #expect(differs == ["the CDN's copy is not JSON"])
        // A head and then silence is a timeout all the same.
        let late = CDNAnswer(error: HTTPClientError(phase: .response, message: "slow", isTimeout: true, head: head))
        #expect(late.outcome == .unreachable(cause: "timeout", message: "slow"))
    }

    @Test func aPendingStatusHasNullsButStateAndSince() {
        var w = JSONWriter()
        CDNStatus.pending(since: 0).write(to: &w)
        #expect(w.output == #"{"state":"pending","since":"1970-01-01T00:00:00.000Z","checkedAt":null,"httpStatus":null,"failureReason":null,"failureDetails":null,"age":null,"maxAge":null,"differs":null}"#)
    }

    @Test func durationsReadAsTheLogWritesThem() {
        #expect(durationText(milliseconds: (3 * 3600 + 12 * 60 + 5) * 1000) == "3h12m")
        #expect(durationText(milliseconds: 65_000) == "1m05s")
        #expect(durationText(milliseconds: 4_000) == "4s")
        #expect(durationText(milliseconds: 2 * 86_400_000 + 3_600_000) == "2d1h")
    }
}

@Suite struct DenseTableTests {
    @Test func aDenseTableFindsSetsAndRemovesLikeADictionary() {
        var table = DenseTable<Int>()
        var mirror: [String: Int] = [:]
        // Sets, replacements and removals in a fixed pseudo-random order, checked at each step.
        var x: UInt64 = 0x9E3779B97F4A7C15
        for step in 0..<3000 {
            x = x &* 6364136223846793005 &+ 1442695040888963407
            let key = "k\(Int(x >> 33) % 200)"
            if (x >> 20) % 3 == 0 {
                #expect(table.removeValue(forKey: key) == mirror.removeValue(forKey: key))
            } else {
                table[key] = step
                mirror[key] = step
            }
            #expect(table.count == mirror.count)
        }
        for (key, value) in mirror { #expect(table[key] == value) }
        #expect(Set(table.keys) == Set(mirror.keys))
        #expect(Dictionary(uniqueKeysWithValues: table.map { ($0.0, $0.1) }) == mirror)
        #expect(table.mapValues { $0 + 1 } == mirror.mapValues { $0 + 1 })
        table["k1"] = nil
        #expect(table["k1"] == nil && !table.keys.contains("k1"))
    }
}
