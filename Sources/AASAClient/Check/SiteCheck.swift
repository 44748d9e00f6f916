import AASACore
import AASAHTTP
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// `aasa check`: a live host as Apple's CDN sees it, then what the CDN holds (docs/check.md).
public struct SiteCheck: Sendable {
    public struct Options: Sendable {
        /// `--app`, repeatable.
        public var apps: [String] = []
        /// `--connect`: where to connect instead of resolving the host.
        public var connectTo: [SocketAddress]?
        public var caFile: String?
        /// nil with `--no-cdn`.
        public var cdnBase: HTTPURL? = try? HTTPURL("https://app-site-association.cdn-apple.com")
        public var timeoutSeconds: Double = 10
        /// What the requests to the origin say they are, in `AASA-Check`: `check`, or `monitor`.
        package var identity = "check"

        public init() {}
    }

    public static let wellKnownPath = AssociationFileKind.aasa.urlPath
    public static let legacyPath = AssociationFileKind.legacyAASAPath
    /// What Apple's CDN sends (docs/aasa-reference.md §3.7): a server that treats it differently fails here.
    public static let userAgent = "AASA-Bot/1.0.0"
    /// Sent beside Apple's bot's User-Agent, so a server's record of Apple's fetches does not
    /// take this check for one (docs/apple-view.md, "Fetch record"); the origin's answer cannot
    /// depend on a field that Apple's bot never sends and no rule in front of it knows.
    public var ownCheckHeaders: [(name: String, value: String)] { [(name: RequestParser.ownCheckField, value: options.identity)] }
    /// `tls` warns when the certificate expires sooner.
    public static let expiryWarningDays = 14

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    /// Hosts checked at once: each holds a socket and a thread.
    public static let concurrentHosts = 16

    /// Checks every host on a pool of ``concurrentHosts`` threads: a host starts as soon as
    /// any thread is free, so one slow host holds up only its own thread. The reports come
    /// back in the hosts' order.
    public func run(_ hosts: [String]) -> [HostReport] {
        let reports = Locked<[HostReport?]>(Array(repeating: nil, count: hosts.count))
        let queue = HostQueue(count: hosts.count)
        let threads = (0..<min(SiteCheck.concurrentHosts, hosts.count)).map { _ in
            startThread { [self] in
                while let i = queue.next() {
                    let report = check(hosts[i])
                    reports.withLock { $0[i] = report }
                }
            }
        }
        for t in threads { pthread_join(t, nil) }
        return reports.withLock { $0.map { $0! } }
    }

    /// The eight checks for one host, and `bot-blocked` after `status` when the bot got an
    /// error status (docs/check.md).
    public func check(_ host: String) -> HostReport {
        var report = checkOrigin(host)
        let (line, blocked) = probeBot(report)
        if blocked != nil { report.insert(line, after: "status") }
        checkCDN(&report)
        return report
    }

    /// A browser's User-Agent (Safari on macOS), for the bot-blocked probe.
    package static let browserUserAgent = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Safari/605.1.15"

    /// When `status` failed with 400 or more: the same GET as a browser. A 200 with JSON then
    /// means something in front of the origin (a firewall, bot protection, a CDN rule) tells
    /// Apple's bot from browsers. `blocked` is nil when the probe did not run.
    package func probeBot(_ report: HostReport) -> (line: CheckLine, blocked: Bool?) {
        guard report.status(of: "status") == .fail, let status = report.originStatus, status >= 400 else {
            let message = switch report.status(of: "status") {
            case .fail: "not run: status failed without an HTTP status of 400 or more"
            case .skip: report.checks.first { $0.name == "status" }?.message ?? "not run"
            default: "not run: status did not fail"
            }
            return (CheckLine(name: "bot-blocked", status: .skip, message: message), nil)
        }
        guard !report.addresses.isEmpty, report.certificateFailure == nil, report.status(of: "tls") != .fail else {
            return (CheckLine(name: "bot-blocked", status: .skip, message: "not run: the origin cannot be reached over verified TLS"), nil)
        }
        var configuration = HTTPSClient.Configuration(timeoutSeconds: options.timeoutSeconds, caFile: options.caFile,
                                                      connectTo: report.addresses, userAgent: SiteCheck.browserUserAgent)
        configuration.maxBodyBytes = 1024 * 1024
        guard let client = try? HTTPSClient(configuration) else {
            return (CheckLine(name: "bot-blocked", status: .skip, message: "not run: no client for the origin"), nil)
        }
        // The host's one time-out bounds the probe too (docs/check.md).
        if let deadline = report.originDeadline, deadline - monotonicMilliseconds() < 100 {
            return (CheckLine(name: "bot-blocked", status: .skip, message: "not run: the host's time-out (--timeout) was spent"), nil)
        }
        let url = HTTPURL(isSecure: true, host: report.host, target: SiteCheck.wellKnownPath)
        do {
            let response = try client.get(url, headers: ownCheckHeaders, deadline: report.originDeadline)
            if response.status == 200, JSONParser.parse(response.body).value != nil {
                return (CheckLine(name: "bot-blocked", status: .fail,
                                  message: "\(SiteCheck.userAgent) gets \(status) but a browser gets 200 with the file: something in front of the origin (a firewall, bot protection, a CDN rule) answers Apple's bot differently from browsers; allow \(SiteCheck.userAgent) to fetch \(SiteCheck.wellKnownPath)"), true)
            }
            return (CheckLine(name: "bot-blocked", status: .pass,
                              message: "a browser gets \(response.head.statusText) too: the origin does not single out Apple's bot"), false)
        } catch {
            return (CheckLine(name: "bot-blocked", status: .pass, message: "a browser gets no answer either (\(error.message))"), false)
        }
    }

    /// `resolve` to `app`: the origin as the CDN fetches it. When the certificate does not
    /// verify, Apple's CDN gets nothing from the host: the checks after `tls` are then `skip`,
    /// each saying what the fetch without verification found. `aasa monitor` runs this part on
    /// its own, and asks the CDN on its schedule.
    package func checkOrigin(_ host: String) -> HostReport {
        var report = fetchOrigin(host)
        if report.certificateFailure != nil {
            report.skipOriginUnverified()
            report.diagnostics = []
            report.unlistedDiagnostics = 0
        }
        return report
    }

    private func fetchOrigin(_ host: String) -> HostReport {
        var report = HostReport(host: host, url: "https://\(host)\(SiteCheck.wellKnownPath)")
        // One budget for the origin: the legacy location, when it is tried, gets what is left.
        let deadline = monotonicMilliseconds() + Int64(options.timeoutSeconds * 1000)
        report.originDeadline = deadline

        // 1. resolve
        let addresses: [SocketAddress]
        if let connectTo = options.connectTo {
            addresses = connectTo
            report.set("resolve", .pass, "not resolved: connecting to \(connectTo.map(\.description).joined(separator: ", ")) instead (--connect); SNI and Host stay \(host)")
        } else {
            do {
                addresses = try Resolver.addresses(of: host, port: 443)
                report.set("resolve", .pass, "\(host) resolves to \(addresses.map(\.host).joined(separator: ", "))")
            } catch {
                report.unreachableCause = "dns"
                report.set("resolve", .fail, "\(host) does not resolve (\(error.reason)): add an A or AAAA record for it")
                report.skipOrigin(after: "resolve")
                return report
            }
        }
        report.addresses = addresses

        // 2. tls and 3. status, from one exchange
        var configuration = HTTPSClient.Configuration(timeoutSeconds: options.timeoutSeconds, caFile: options.caFile,
                                                      connectTo: addresses, allowUnverifiedCertificate: true,
                                                      userAgent: SiteCheck.userAgent)
        configuration.maxBodyBytes = 1024 * 1024
        let client: HTTPSClient
        do {
            client = try HTTPSClient(configuration)
        } catch {
            report.unreachableCause = "tls"
            report.set("tls", .fail, error.message)
            report.skipOrigin(after: "tls")
            return report
        }
        let wellKnown = HTTPURL(isSecure: true, host: host, target: SiteCheck.wellKnownPath)
        var response: HTTPResponse
        var tooLarge: HTTPResponseHead?
        do {
            response = try client.get(wellKnown, headers: ownCheckHeaders, deadline: deadline)
        } catch {
            guard error.phase == .response else {
                report.unreachableCause = error.isTimeout ? "timeout" : error.phase == .tls ? "tls" : error.phase == .resolve ? "dns" : "connect"
                report.set("tls", .fail, SiteCheck.tlsFailure(error, viaConnect: options.connectTo != nil))
                report.skipOrigin(after: "tls")
                return report
            }
            if let tls = error.tls { setTLS(&report, tls, host: host) }
            guard let head = error.head, error.parseError == .bodyTooLarge(limit: configuration.maxBodyBytes) else {
                // No head: a time-out, or a connection that broke off before any answer, is the
                // host not reached; a host that answered with something no usable HTTP response
                // (not HTTP, an endless head) was reached and has no file to give.
                if error.head == nil, error.isTimeout || !error.answered { report.unreachableCause = error.isTimeout ? "timeout" : "connect" }
                report.set("status", .fail, SiteCheck.noCompleteResponse(SiteCheck.wellKnownPath, error))
                report.skipOrigin(after: "status")
                return report
            }
            // Over the read limit: the head is still worth reporting.
            tooLarge = head
            response = HTTPResponse(head: head, body: [], address: addresses[0], tls: error.tls)
        }
        if let tls = response.tls { setTLS(&report, tls, host: host) }
        report.originStatus = response.status

        if response.status != 200, tooLarge == nil {
            let problem = SiteCheck.statusProblem(response, host: host)
            // The legacy location: devices before the CDN tried it second (docs/aasa-reference.md §3.1).
            let legacy = try? client.get(HTTPURL(isSecure: true, host: host, target: SiteCheck.legacyPath), headers: ownCheckHeaders,
                                         deadline: deadline)
            if let legacy, legacy.status == 200 {
                report.set("status", .warn, "\(problem); the file is only at the legacy \(SiteCheck.legacyPath) (200): move it to \(SiteCheck.wellKnownPath), the one location Apple's CDN and alternate modes use")
                report.url = "https://\(host)\(SiteCheck.legacyPath)"
                response = legacy
            } else {
                let legacyText = legacy.map { "\($0.head.statusText)" } ?? "no answer"
                report.set("status", .fail, "\(problem) (\(SiteCheck.legacyPath) too: \(legacyText))")
                report.skipOrigin(after: "status")
                return report
            }
        } else {
            report.set("status", .pass, "\(response.head.statusText) for GET \(SiteCheck.wellKnownPath) as \(SiteCheck.userAgent)")
        }

        // 4. content-type
        setContentType(&report, response)

        // 5. size
        if tooLarge != nil {
            report.set("size", .fail, SiteCheck.readLimitProblem(configuration.maxBodyBytes))
            report.skipOrigin(after: "size")
            return report
        }
        let encoding = response["Content-Encoding"]?.lowercased()
        if let encoding, encoding != "identity" {
            report.set("size", .warn, "\(response.body.count) bytes as sent with Content-Encoding: \(encoding), which aasa does not decode (it sent no Accept-Encoding): serve the file unencoded to a client that does not ask")
        } else if response.body.count <= AASAFile.maximumSize {
            report.set("size", .pass, "\(response.body.count) bytes (limit \(AASAFile.maximumSize))")
        } else {
            report.set("size", .fail, SiteCheck.sizeProblem(response.body.count))
            // A device reads no further than the limit: the body is not validated.
            report.skipOrigin(after: "size")
            return report
        }

        // 6. validate
        let file = AASAFile(bytes: response.body)
        report.file = file
        report.etag = response["ETag"]
        report.diagnostics = file.diagnostics
        report.unlistedDiagnostics = file.unlistedCount
        let first = file.diagnostics.first { $0.severity == .error } ?? file.diagnostics.first
        let firstText = first.map { "; first: \($0.line):\($0.column): \($0.message) [\($0.code.rawValue)]" } ?? ""
        if file.errorCount > 0 {
            report.set("validate", .fail, "\(counted(file.errorCount, "error")), \(counted(file.warningCount, "warning"))\(firstText)")
        } else if file.warningCount > 0 {
            report.set("validate", .warn, "valid, \(counted(file.warningCount, "warning"))\(firstText)")
        } else {
            report.set("validate", .pass, "valid: \(SiteCheck.services(file.document))")
        }

        // 7. app
        guard let document = file.document else {
            report.skipOrigin(after: "validate")
            return report
        }
        setApps(&report, document)
        return report
    }

    // MARK: - The parts

    private func setTLS(_ report: inout HostReport, _ tls: TLSSummary, host: String) {
        if let failure = tls.verificationFailure {
            report.certificateFailure = failure
            report.set("tls", .fail, SiteCheck.certificateProblem(tls, failure, host: host))
            return
        }
        guard let notAfter = tls.peerNotAfter else {
            report.set("tls", .pass, "\(tls.protocolVersion), certificate verified for \(host)")
            return
        }
        let until = String(HTTPDate.iso8601(milliseconds: Int64(notAfter) * 1000).prefix(10))
        let days = (notAfter - wallClockSeconds()) / 86_400
        if days < SiteCheck.expiryWarningDays {
            report.set("tls", .warn, "\(tls.protocolVersion), certificate verified for \(host), but it expires in \(days) days (\(until)): renew it")
        } else {
            report.set("tls", .pass, "\(tls.protocolVersion), certificate verified for \(host), valid until \(until)")
        }
    }

    private func setContentType(_ report: inout HostReport, _ response: HTTPResponse) {
        let type = response["Content-Type"]
        let media = type.map { String($0.prefix { $0 != ";" }).trimmingCharacters().lowercased() }
        if let html = SiteCheck.htmlProblem(response) {
            report.set("content-type", .fail, html)
        } else if media == "application/json" {
            report.set("content-type", .pass, type ?? "")
        } else if let type {
            report.set("content-type", .warn, "Content-Type: \(type): send application/json (devices are lenient; some proxies and validators are not)")
        } else {
            report.set("content-type", .warn, "no Content-Type: send application/json")
        }
    }

    private func setApps(_ report: inout HostReport, _ document: AASADocument) {
        let listed = document.appLinksAppIDs
        guard !options.apps.isEmpty else {
            report.set("app", .skip, "not run: no --app given (applinks lists \(listed.isEmpty ? "no app" : listed.joined(separator: ", ")))")
            return
        }
        var missing: [String] = []
        var parts: [String] = []
        for app in options.apps {
            let others = [AppListService.webCredentials, .appClips, .activityContinuation]
                .filter { document.appLists[$0]?.contains(app) == true }.map(\.rawValue)
            let also = others.isEmpty ? "" : " (also \(others.joined(separator: ", ")))"
            if listed.contains(app) {
                parts.append("\(app) is listed for applinks\(also)")
            } else {
                missing.append(app)
                parts.append("\(app) is not listed for applinks\(also)")
            }
        }
        if missing.isEmpty {
            report.set("app", .pass, parts.joined(separator: "; "))
        } else {
            let have = listed.isEmpty ? "it lists no app" : "it lists \(listed.joined(separator: ", "))"
            report.set("app", .fail, parts.joined(separator: "; ") + " (\(have)): add \(missing.joined(separator: ", ")) to a details entry's appIDs")
        }
    }

    static package func services(_ document: AASADocument?) -> String {
        guard let document else { return "no services" }
        var names: [String] = []
        if document.appLinks != nil { let n = document.appLinksAppIDs.count
            names.append("applinks (\(n) \(n == 1 ? "app" : "apps"))") }
        for s in AppListService.allCases where document.appLists[s] != nil { names.append(s.rawValue) }
        return names.isEmpty ? "no services" : names.joined(separator: ", ")
    }

    /// 8. cdn: the copy Apple's CDN holds, compared with the origin's as parsed values. The
    /// CDN is fetched on its own client: `--connect` is for the origin only.
    private func checkCDN(_ report: inout HostReport) {
        guard let base = options.cdnBase else {
            report.set("cdn", .skip, "not run: --no-cdn")
            return
        }
        var prefix = base.target
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let url = HTTPURL(isSecure: base.isSecure, host: base.host, port: base.port, target: prefix + "/a/v1/" + report.host)
        let response: HTTPResponse
        do {
            let client = try HTTPSClient(.init(timeoutSeconds: options.timeoutSeconds, caFile: options.caFile))
            response = try client.get(url)
        } catch {
            report.set("cdn", .fail, "cannot read the CDN's copy at \(url): \(error.message)")
            return
        }
        report.cdn.status = response.status
        report.cdn.failureReason = response["Apple-Failure-Reason"]
        guard response.status == 200 else {
            var text = "the CDN answers \(response.head.statusText) for \(url)"
            if let reason = response["Apple-Failure-Reason"] { text += ": Apple-Failure-Reason: \(reason)" }
            if let details = response["Apple-Failure-Details"] { text += ", Apple-Failure-Details: \(details)" }
            if response.status == 404 {
                text += "; the CDN has no valid copy: once the origin serves the file, the CDN fetches it again within about 24 hours"
            }
            report.set("cdn", .fail, text)
            return
        }
        switch CDNCopy.compare(cdnBody: response.body, origin: report.file) {
        case .cdnNotJSON:
            report.set("cdn", .fail, "the CDN answers 200 for \(url) with a body that is not JSON")
        case .originUnreadable:
            report.set("cdn", .warn, "the CDN serves a copy, but the origin's file could not be read: when the CDN next refreshes (within about 24 hours), devices lose it")
        case .same:
            report.cdn.sameAsOrigin = true
            report.set("cdn", .pass, "the CDN serves the same file as the origin")
        case .differs(let differences):
            report.cdn.sameAsOrigin = false
            report.set("cdn", .warn, "the CDN still serves an older version: \(differences.joined(separator: "; ")); it refreshes within about 24 hours, and a device reads it when the app is installed (reinstall to test)")
        }
    }
}

/// The index of the next host to check, handed to whichever pool thread asks first.
private final class HostQueue: Sendable {
    private let count: Int
    private let taken = Locked(0)

    init(count: Int) { self.count = count }

    func next() -> Int? {
        taken.withLock { n in
            guard n < count else { return nil }
            n += 1
            return n - 1
        }
    }
}
