import AASACore
import AASATransport

/// A version of a file that Apple's CDN's copy is compared with: the version `aasa serve` serves,
/// or the one `aasa monitor` last read from an origin. A reference: the schedule tells an
/// unchanged version from a changed one by identity first, then by ETag.
package protocol CDNReference: AnyObject, Sendable {
    /// The strong validator of this version.
    var etag: String { get }
    /// Its AASA reading; nil when it is not one.
    var aasaFile: AASAFile? { get }
    /// Its bytes.
    var bytes: [UInt8] { get }
}

/// When each watched site is checked at Apple's CDN, and what each answer changes: a pure state
/// machine (no threads, no sockets, no clock of its own), driven by the server's CDN watch, by
/// `aasa monitor` and by the tests with a fake clock. Monotonic times are in microseconds, wall times in milliseconds.
///
/// The rules (docs/apple-view.md): site k of S is first checked about k·interval/S after
/// start; a site added later within min(60 s, interval); then once per interval, except that a
/// `stale` copy whose answer carried `max-age` M and `Age` A is checked again after
/// max(M − A, interval/10), when the CDN itself will have refreshed it. Starts are at least
/// 1/rate apart, whatever is due.
package struct CDNSchedule {
    package struct Settings: Sendable {
        package var intervalMicroseconds: Int64
        /// Requests per second at most.
        package var rate: Int
        /// Checks under way at once; more wait (each holds a thread and a socket).
        package var maxInFlight: Int
        /// A check not finished by then is given up as a timeout (the client's own deadline is
        /// the same; this also covers a name lookup, which no deadline interrupts).
        package var timeoutMicroseconds: Int64
        /// One pass (`aasa monitor --once`): the sites known at the first update are all due at
        /// once, paced by the rate only, not spread over the interval; and each is checked once:
        /// no next check is scheduled after it, and a change of the version served is re-evaluated
        /// against the copy fetched but never re-checked. Otherwise (the server's watch, the
        /// monitor running) every site is checked again and again.
        package var onePass = false

        package init(intervalSeconds: Int, rate: Int, timeoutMilliseconds: Int64 = 10_000) {
            intervalMicroseconds = Int64(max(1, intervalSeconds)) * 1_000_000
            self.rate = max(1, rate)
            // Each check ends within the timeout, so rate × timeout (+1) may be under way at once.
            maxInFlight = min(64, max(4, self.rate * Int((timeoutMilliseconds + 999) / 1000) + 1))
            timeoutMicroseconds = max(1, timeoutMilliseconds) * 1000
        }

        /// Starts are at least this far apart (``Pacer/spacingMicroseconds(rate:)``).
        package var spacingMicroseconds: Int64 { Pacer.spacingMicroseconds(rate: rate) }

        /// How soon a new site, or a site whose file changed, is checked: min(60 s, interval).
        package var soonMicroseconds: Int64 { min(60_000_000, intervalMicroseconds) }
    }

    /// A site to watch: its name in the config, the host asked of the CDN, the version served.
    package struct Watched {
        package var key: String
        package var host: String
        package var served: any CDNReference

        package init(key: String, host: String, served: any CDNReference) {
            self.key = key
            self.host = host
            self.served = served
        }
    }

    package struct Site {
        package let key: String
        package let host: String
        package var served: any CDNReference
        package var status: CDNStatus
        /// The last 200 body, to re-evaluate at once when the version served changes.
        package var lastCopy: CDNAnswer?
        var due: Int64
        /// The token of the check under way, if any.
        package var checking: UInt64?
        var checkStarted: Int64 = 0
        /// A re-check promised after a change of the version served, not yet started.
        var recheckBy: Int64?
        var stamp: UInt64 = 0
    }

    package enum Event: Equatable {
        /// A state after the site's first check changed.
        case changed(host: String, from: CDNStatus.State, to: CDNStatus.State, afterMilliseconds: Int64)
        /// The first result for a site.
        case first(key: String, host: String, state: CDNStatus.State)
        /// A check ended with this result (for the counters).
        case checked(CDNStatus.State)
    }

    package struct Check: Equatable {
        package var key: String
        package var host: String
        package var token: UInt64
    }

    package let settings: Settings
    /// Every watched site by key, in a ``DenseTable``: a site is large, and a platform has many.
    package private(set) var sites = DenseTable<Site>()
    private var heap = DueHeap()
    private var lastStart: Int64?
    /// Tokens of the checks under way; an answer whose token is not here is ignored.
    private var running: [UInt64: (check: Check, started: Int64)] = [:]
    package var inFlight: Int { running.count }
    private var nextToken: UInt64 = 1
    private var started = false

    package init(settings: Settings) {
        self.settings = settings
    }

    /// Sites not checked yet.
    package private(set) var pendingCount = 0

    /// Sites per state.
    package func counts() -> [CDNStatus.State: Int] {
        var out: [CDNStatus.State: Int] = [:]
        for s in CDNStatus.State.allCases { out[s] = 0 }
        for site in sites.values { out[site.status.state, default: 0] += 1 }
        return out
    }

    /// Brings the watched set in line with what is served now: new sites are scheduled (spread
    /// over the interval at the first call, within min(60 s, interval) later), gone ones
    /// dropped, and a site whose version changed is re-evaluated at once against the copy last
    /// fetched and re-checked soon.
    ///
    /// - Parameters:
    ///   - watched: every site to watch, or with `gone`, only those that changed.
    ///   - gone: when given, `watched` lists only changes, and these sites stop being watched;
    ///     a reload then costs what changed, not what exists.
    package mutating func update(_ watched: [Watched], gone: [String]? = nil, now: Int64, wall: Int64) -> [Event] {
        var events: [Event] = []
        // Sites not in `watched` go, unless told which went; none to find when none were known
        // (a first call, 100 000 sites at start).
        let findsGone = gone == nil && !sites.isEmpty
        var seen = Set<String>()
        if findsGone { seen.reserveCapacity(watched.count) }
        if sites.isEmpty { sites.reserveCapacity(watched.count) }
        var added: [Watched] = []
        for w in watched {
            if findsGone { seen.insert(w.key) }
            guard var site = sites[w.key], site.host == w.host else {
                // New, or now asked of the CDN under another name: a new watch.
                if let old = sites.removeValue(forKey: w.key), old.status.state == .pending { pendingCount -= 1 }
                added.append(w)
                continue
            }
            guard site.served !== w.served, site.served.etag != w.served.etag else {
                site.served = w.served
                sites[w.key] = site
                continue
            }
            site.served = w.served
            if let copy = site.lastCopy, site.status.state == .current || site.status.state == .stale {
                let old = site.status
                var s = copy.status(served: w.served.aasaFile, previous: old, now: wall)
                s.checkedAt = old.checkedAt
                site.status = s
                if s.state != old.state {
                    events.append(.changed(host: site.host, from: old.state, to: s.state, afterMilliseconds: wall - old.since))
                }
            }
            if !settings.onePass {
                let by = now + settings.soonMicroseconds / 2
                site.recheckBy = by
                if site.checking == nil, site.due > by { reschedule(&site, at: by) }
            }
            sites[w.key] = site
        }
        let removed = gone ?? (findsGone ? sites.keys.filter { !seen.contains($0) } : [])
        for key in removed {
            guard let site = sites.removeValue(forKey: key) else { continue }
            if site.status.state == .pending { pendingCount -= 1 }
        }

        // Spread: at the first call over the interval (site k of S at k·interval/S), later over
        // min(60 s, interval), in byte order of name.
        let window = started ? settings.soonMicroseconds : settings.onePass ? 0 : settings.intervalMicroseconds
        let ordered = added.sorted { $0.key < $1.key }
        for (k, w) in ordered.enumerated() {
            // Without a window, a microsecond apart: started in that order, not the heap's.
            let due = now + (window == 0 ? Int64(k) : window * Int64(k) / Int64(max(1, ordered.count)))
            var site = Site(key: w.key, host: w.host, served: w.served, status: .pending(since: wall), due: due)
            reschedule(&site, at: due)
            sites[w.key] = site
            pendingCount += 1
        }
        started = true
        return events
    }

    /// Sets the version a site's copy is compared with, and nothing else: for the first good
    /// file `aasa monitor` reads from an origin, which is no change to re-check for.
    package mutating func adopt(_ served: any CDNReference, for key: String) {
        sites[key]?.served = served
    }

    /// Stamps are unique across sites, so a heap entry of a site that went away never matches
    /// a new site of the same name.
    private var nextStamp: UInt64 = 0

    private mutating func reschedule(_ site: inout Site, at due: Int64) {
        site.due = due
        nextStamp += 1
        site.stamp = nextStamp
        heap.push(.init(due: due, key: site.key, stamp: site.stamp))
    }

    /// The next check to start now, if the rate, the in-flight bound and the schedule allow one.
    package mutating func start(now: Int64) -> Check? {
        guard inFlight < settings.maxInFlight else { return nil }
        if let last = lastStart, now < last + settings.spacingMicroseconds { return nil }
        while let top = heap.top {
            guard let site = sites[top.key], site.stamp == top.stamp, site.checking == nil else {
                heap.pop()
                continue
            }
            guard top.due <= now else { return nil }
            heap.pop()
            var s = site
            let token = nextToken
            nextToken += 1
            s.checking = token
            s.checkStarted = now
            s.recheckBy = nil
            sites[s.key] = s
            let check = Check(key: s.key, host: s.host, token: token)
            running[token] = (check, now)
            lastStart = now
            return check
        }
        return nil
    }

    /// Checks under way for longer than the timeout, given up as `unreachable` (timeout); a late
    /// answer for them is then ignored.
    package mutating func expire(now: Int64, wall: Int64) -> [Event] {
        var events: [Event] = []
        for (check, started) in running.values where now - started > settings.timeoutMicroseconds + 500_000 {
            let seconds = settings.timeoutMicroseconds / 1_000_000
            let answer = CDNAnswer(outcome: .unreachable(cause: "timeout", message: "no answer within \(seconds) s"))
            events += finish(check, answer, now: now, wall: wall)
        }
        return events
    }

    /// Records a check's answer.
    package mutating func finish(_ check: Check, _ answer: CDNAnswer, now: Int64, wall: Int64) -> [Event] {
        // Given up already (``expire``), or the site went away while it was checked.
        guard running.removeValue(forKey: check.token) != nil, var site = sites[check.key], site.checking == check.token else { return [] }
        site.checking = nil
        let old = site.status
        let s = answer.status(served: site.served.aasaFile, previous: old, now: wall)
        site.status = s
        if case .response(200, _) = answer.outcome {
            var copy = answer
            // A current copy is the file served: keep that array (shared with the served
            // version) rather than a second one per site.
            if s.state == .current { copy.outcome = .response(status: 200, body: site.served.bytes) }
            site.lastCopy = copy
        } else {
            site.lastCopy = nil
        }
        var events: [Event] = [.checked(s.state)]
        if old.state == .pending {
            pendingCount -= 1
            events.append(.first(key: site.key, host: site.host, state: s.state))
        } else if s.state != old.state {
            events.append(.changed(host: site.host, from: old.state, to: s.state, afterMilliseconds: wall - old.since))
        }
        var next = site.checkStarted + settings.intervalMicroseconds
        if s.state == .stale, let maxAge = s.maxAge {
            let left = Int64(max(0, maxAge - (s.age ?? 0))) * 1_000_000
            next = site.checkStarted + max(left, settings.intervalMicroseconds / 10)
        }
        if let by = site.recheckBy { next = min(next, by) }
        if !settings.onePass { reschedule(&site, at: next) }
        sites[check.key] = site
        return events
    }

    /// When something may next be startable (nil: nothing scheduled, or no room until a check
    /// ends).
    package func nextWake(now: Int64) -> Int64? {
        // At the bound, nothing starts before a check ends.
        guard inFlight < settings.maxInFlight, let due = heap.top?.due else { return nil }
        var at = due
        if let last = lastStart { at = max(at, last + settings.spacingMicroseconds) }
        return at
    }
}

/// The schedule, earliest first; entries whose stamp no longer matches their site are
/// stale and skipped when they surface (as the loops' timer heap does).
struct DueHeap {
    struct Entry: HeapOrdered {
        var due: Int64
        var key: String
        var stamp: UInt64

        var heapKey: Int64 { due }
    }

    private var heap = MinHeap<Entry>()

    var top: Entry? { heap.first }
    var count: Int { heap.count }

    mutating func push(_ e: Entry) { heap.push(e) }

    mutating func pop() { heap.popFirst() }
}
