import AASACore
import ArgumentParser
import AASATransport
import AASAClient
import AASACommands
#if canImport(Glibc)
import Glibc
#endif

package struct MonitorCommand: ParsableCommand {
    package init() {}

    static package let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Watch domains served by something else as Apple's bot, Apple's CDN and Google see them.",
        discussion: """
        Each domain of the domains file (one a line, # comments, then app=APPID and \
        connect=ADDR:PORT) is checked every --interval: the check sequence of `aasa check` as \
        Apple's bot, with a bot-blocked probe and assetlinks.json; Apple's CDN copy; Google's \
        Digital Asset Links. The admin listener serves /healthz, /readyz, /metrics and /status. \
        With --once: one pass, then the report; exit status 0 when no domain's origin fails, 1 \
        otherwise, 2 bad usage. See docs/monitor.md.
        """
    )

    @Option(help: "The domains file (or AASA_DOMAINS).")
    var domains: String?

    @Option(help: "The admin listener, ADDR:PORT (default: 127.0.0.1:9090).")
    var admin: String?

    @Option(help: "Seconds between two checks of a domain (default: 3600).")
    var interval: Int?

    @Option(help: "Checks started per second at most (default: 2).")
    var rate: Int?

    @Option(help: "Seconds for each request: connect, handshake and response (default: 10).")
    var timeout: Double?

    @Option(help: "Trust the CAs in this PEM file for the origins (instead of the system store) and for Google (besides it).")
    var cacert: String?

    @Option(name: .customLong("cdn-base"), help: "Apple's CDN's base URL (default: https://app-site-association.cdn-apple.com).")
    var cdnBase: String?

    @Option(name: .customLong("cdn-cacert"), help: "Extra CAs to trust for --cdn-base, besides the system store.")
    var cdnCACert: String?

    @Option(name: .customLong("dal-base"), help: "Google's Digital Asset Links API base URL, or off (default: https://digitalassetlinks.googleapis.com).")
    var dalBase: String?

    @Option(name: .customLong("log-format"), help: "text or json (default: text).")
    var logFormat: String?

    @Flag(help: "One pass over every domain, then the report.")
    var once = false

    @Option(help: "With --once: text or json.")
    var format: OutputFormat?

    package func run() throws {
        // Before any thread starts (the log's writer is one): every thread made after this
        // inherits the blocked signals, so only the signal thread takes them.
        let signals = once ? nil : MonitorSignals()
        guard let path = domains ?? environment("AASA_DOMAINS"), !path.isEmpty else {
            throw ValidationError("--domains FILE is required (or AASA_DOMAINS)")
        }
        if format != nil, !once { throw ValidationError("--format goes with --once") }
        let timeout = self.timeout ?? 10
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be more than 0 and at most 3600") }
        let interval = self.interval ?? 3600
        guard interval >= 1 else { throw ValidationError("--interval must be at least 1") }
        let rate = self.rate ?? 2
        guard rate >= 1, rate <= 10_000 else { throw ValidationError("--rate must be from 1 to 10000") }
        let format = LogFormat(rawValue: logFormat ?? "text")
        guard let format else { throw ValidationError("--log-format must be text or json") }
        for (name, file) in [("--cacert", cacert), ("--cdn-cacert", cdnCACert)] {
            if let file, (try? InputFiles.read(file, limit: 16 * 1024 * 1024)) == nil {
                throw ValidationError("\(name) \(file): cannot read the file")
            }
        }
        var settings = DomainCheck.Settings()
        settings.timeoutSeconds = timeout
        settings.caFile = cacert
        settings.cdnCAFile = cdnCACert
        settings.userAgent = "aasa/\(aasaVersion)"
        settings.rate = rate
        if let cdnBase {
            do { settings.cdnBase = try HTTPURL(cdnBase) } catch { throw ValidationError("--cdn-base: \(error)") }
        }
        if let dalBase {
            if dalBase == "off" {
                settings.dalBase = nil
            } else {
                do { settings.dalBase = try HTTPURL(dalBase) } catch { throw ValidationError("--dal-base: \(error)") }
            }
        }
        var adminAddress: SocketAddress?
        if !once {
            do { adminAddress = try SocketAddress(parsing: admin ?? "127.0.0.1:9090") } catch {
                throw ValidationError("--admin: \(error.description)")
            }
        }

        let file = DomainsFile(path: path)
        guard let first = file.read() else { throw ValidationError("--domains \(path): cannot read the file") }

        // A check makes up to five requests, each bounded by the timeout: the schedule gives a
        // check up after all of them.
        var schedule = CDNSchedule.Settings(intervalSeconds: interval, rate: rate, timeoutMilliseconds: Int64(timeout * 1000) * 6)
        schedule.onePass = once
        let log = Log(format: format, minimum: once ? .error : .info)
        let monitor = Monitor(check: DomainCheck(settings: settings), schedule: schedule, log: log)
        monitor.setDomains(first)

        if once {
            monitor.run(once: true, stop: { false }, reload: { nil })
            let (output, failing) = monitor.state.withLock { s -> (String, Bool) in
                let hosts = first.map(\.host)
                let failing = s.records.values.contains { $0.origin.state == .failing }
                switch self.format ?? .text {
                case .text: return (MonitorReport.text(s, hosts: hosts), failing)
                case .json: return (MonitorReport.status(s, listed: hosts.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, next: nil) + "\n", failing)
                }
            }
            FileHandleOutput.standardOutput.write(output)
            if failing { throw ExitCode(1) }
            return
        }

        guard let signals else { preconditionFailure("no signal thread outside --once") }
        let admin: MonitorAdmin
        do { admin = try MonitorAdmin(address: adminAddress!, monitor: monitor) } catch {
            FileHandleOutput.standardError.write("aasa monitor: --admin \(adminAddress!): \(error)\n")
            throw ExitCode(1)
        }
        admin.start(stop: { signals.stopping })
        log.info("monitor: \(counted(first.count, "domain")) from \(path), every \(interval) s, at most \(rate) checks/s; admin on http://\(admin.address)")
        monitor.run(once: false, stop: { signals.stopping }, reload: {
            let asked = signals.takeReload()
            guard asked || file.changed() else { return nil }
            guard let domains = file.read() else {
                log.error("monitor: cannot read \(path): keeping the domains watched")
                return nil
            }
            log.info("monitor: \(path) read again: \(counted(domains.count, "domain"))")
            return domains
        })
        log.info("monitor: stopping")
        LogStream.standardError.flush(until: monotonicMilliseconds() + 2000)
    }

    private func environment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }
}

/// The domains file: read, its bad lines reported on stderr, and watched for changes by its
/// modification time and size (polled on the scheduler's turns, at most once a second).
final class DomainsFile: @unchecked Sendable {
    let path: String
    private var stamp: (Int, Int, Int)?
    private var lastPoll: Int64 = 0

    init(path: String) { self.path = path }

    private func currentStamp() -> (Int, Int, Int)? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return (Int(st.st_mtim.tv_sec), Int(st.st_mtim.tv_nsec), Int(st.st_size))
    }

    /// Whether the file changed since it was last read.
    func changed() -> Bool {
        let now = monotonicMilliseconds()
        guard now - lastPoll >= 1000 else { return false }
        lastPoll = now
        guard let s = currentStamp() else { return false }
        guard let stamp else { return true }
        return s != stamp
    }

    /// The domains, each bad line reported with its number; nil when the file cannot be read.
    func read() -> [MonitoredDomain]? {
        stamp = currentStamp()
        guard let bytes = try? InputFiles.read(path, limit: 64 * 1024 * 1024) else { return nil }
        let (domains, problems) = DomainList.parse(String(decoding: bytes, as: UTF8.self))
        for p in problems {
            FileHandleOutput.standardError.write("\(path):\(p.line): \(p.message); line skipped\n")
        }
        return domains
    }
}

/// SIGTERM and SIGINT (stop) and SIGHUP (read the domains file again), taken by a thread of
/// their own with sigwait(3): blocked in every other thread, so no handler runs at a random
/// point of another.
final class MonitorSignals: Sendable {
    private let flags = Locked((stop: false, reload: false))

    init() {
        var set = sigset_t()
        sigemptyset(&set)
        for s in [SIGTERM, SIGINT, SIGHUP] { sigaddset(&set, s) }
        pthread_sigmask(SIG_BLOCK, &set, nil)
        let waiter = startThread { [flags] in
            while true {
                var signal: Int32 = 0
                guard sigwait(&set, &signal) == 0 else { continue }
                flags.withLock {
                    if signal == SIGHUP { $0.reload = true } else { $0.stop = true }
                }
            }
        }
        pthread_detach(waiter)
    }

    var stopping: Bool { flags.withLock(\.stop) }

    func takeReload() -> Bool {
        flags.withLock { f in
            defer { f.reload = false }
            return f.reload
        }
    }
}
