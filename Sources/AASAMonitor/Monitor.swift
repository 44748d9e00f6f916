import AASACore
import AASAHTTP
import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// `aasa monitor` running: one thread schedules (the shared ``CDNSchedule``: spread, paced,
/// re-checked as the server's CDN watch), and each domain's check runs on a short-lived thread of
/// its own, at most ``CDNSchedule/Settings/maxInFlight`` at once, so a hanging origin holds up
/// nothing but its own check (docs/monitor.md).
package final class Monitor: Sendable {
    package let state: Locked<MonitorState>
    let domainCheck: DomainCheck
    let log: Log

    package init(check: DomainCheck, schedule: CDNSchedule.Settings, log: Log) {
        domainCheck = check
        state = Locked(MonitorState(settings: schedule, googleOn: check.settings.dalBase != nil))
        self.log = log
    }

    /// Sets the domains watched (at start, and when the file changed).
    package func setDomains(_ domains: [MonitoredDomain]) {
        let now = monotonicMicroseconds()
        let wall = wallClockMilliseconds()
        state.withLock { $0.setDomains(domains, now: now, wall: wall) }
    }

    /// Schedules until `stop` says so; with `once` (a schedule of one pass), until every domain
    /// had its check.
    /// `reload` is asked on every turn for a new list of domains.
    package func run(once: Bool, stop: () -> Bool, reload: () -> [MonitoredDomain]?) {
        while !stop() {
            if let domains = reload() { setDomains(domains) }
            let now = monotonicMicroseconds()
            let wall = wallClockMilliseconds()
            var starts: [(CDNSchedule.Check, MonitoredDomain)] = []
            let (changes, wake, done) = state.withLock { s -> ([WatchLogLine], Int64?, Bool) in
                let changes = s.expire(now: now, wall: wall)
                // With `once`, the schedule is one pass (``CDNSchedule/Settings/onePass``): each
                // domain is started once, and nothing after.
                while let check = s.schedule.start(now: now) {
                    if let domain = s.records[check.key]?.domain { starts.append((check, domain)) }
                }
                return (changes, s.schedule.nextWake(now: now), once && s.schedule.pendingCount == 0 && s.schedule.inFlight == 0)
            }
            write(changes)
            if done { return }
            for (check, domain) in starts { spawn(check, domain) }
            // At most 100 ms asleep: a signal, a changed file and a due check are seen within that.
            let sleep = min(100_000, max(1000, (wake ?? Int64.max) - monotonicMicroseconds()))
            usleep(UInt32(sleep))
        }
    }

    private func spawn(_ check: CDNSchedule.Check, _ domain: MonitoredDomain) {
        let started = tryStartThread { [self] in
            let findings = domainCheck.check(domain)
            let now = monotonicMicroseconds()
            let wall = wallClockMilliseconds()
            write(state.withLock { $0.finish(check, findings, now: now, wall: wall) })
        }
        switch started {
        case .success(let thread):
            pthread_detach(thread)
        case .failure(let error):
            // Out of threads: this check is given up (the schedule's bound expires it), the others go on.
            log.error("monitor: no thread for the check of \(domain.host): \(error)")
        }
    }

    /// One line per change of state, as the server's CDN watch writes them (``WatchLogLine``).
    private func write(_ lines: [WatchLogLine]) {
        for line in lines { line.write(to: log) }
    }
}
