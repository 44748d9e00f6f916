import AASACore
import AASAHTTP
import AASATransport
import AASAClient

/// A version of an origin's AASA file: its ETag, else a hash of its bytes (docs/monitor.md).
/// Only the bytes are kept, as the server keeps only the bytes of what it serves: a parsed
/// document costs many times its size, and the monitor holds one file per domain.
package final class OriginVersion: CDNReference {
    package let etag: String
    package let bytes: [UInt8]

    package init(file: AASAFile, etag: String?) {
        bytes = file.bytes
        self.etag = etag ?? "sha256:" + SHA256Digest.hash(file.bytes).prefix(8).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
    }

    /// Before the origin served a good file: the CDN's copy is compared with nothing readable.
    package init() {
        etag = ""
        bytes = []
    }

    /// Read again from the bytes when the CDN's copy is compared with it.
    package var aasaFile: AASAFile? { bytes.isEmpty ? nil : AASAFile(bytes: bytes) }
}

/// Everything one check of a domain found: the origin (the `check` sequence, the bot-blocked
/// probe, `assetlinks.json`), Apple's CDN's answer, Google's.
package struct DomainFindings: Sendable {
    package var report: HostReport
    /// The origin's checks as the monitor lists them: `check`'s, less `cdn`, with `bot-blocked`
    /// after `status` and `assetlinks` last.
    package var checks: [CheckLine]
    /// The file read, when it was a good one (no validation error).
    package var good: OriginVersion?
    /// Whether the bot-blocked probe ran, and what it found.
    package var botBlocked: Bool?
    package var cdn: CDNAnswer
    /// The origin's `assetlinks.json`, as Google's list is compared with it.
    package var assetLinks: AssetLinksReading
    /// nil with `--dal-base off`.
    package var google: GoogleAnswer?
}

/// What the origin's `assetlinks.json` said this time.
package enum AssetLinksReading: Sendable, Equatable {
    /// A valid file: its apps for App Links.
    case statements(Set<GoogleView.App>)
    /// 404 or 410: the origin has none.
    case absent
    /// No valid file to read (HTML, an error status, errors in the file, no answer): Google's
    /// list is compared with the last valid one instead; the reason.
    case unusable(String)
}

/// What Google's Digital Asset Links API answered.
package enum GoogleAnswer: Sendable, Equatable {
    case listed(Set<GoogleView.App>)
    /// An error answer, or none: why.
    case failing(String)
}

/// How the monitor checks one domain (docs/monitor.md).
package struct DomainCheck: Sendable {
    package struct Settings: Sendable {
        package var timeoutSeconds: Double = 10
        package var caFile: String?
        package var cdnBase = HTTPURL(isSecure: true, host: "app-site-association.cdn-apple.com")
        package var cdnCAFile: String?
        /// nil: `--dal-base off`.
        package var dalBase: HTTPURL? = HTTPURL(isSecure: true, host: "digitalassetlinks.googleapis.com")
        /// `aasa/VERSION`, for the CDN and Google.
        package var userAgent = "aasa"
        /// `--rate`: requests started per second at most, to the CDN and to Google each.
        package var rate = 2

        package init() {}
    }

    /// A browser's User-Agent (Safari on macOS), for the bot-blocked probe.
    package static var browserUserAgent: String { SiteCheck.browserUserAgent }
    package static let ownCheckHeaders = [(name: RequestParser.ownCheckField, value: "monitor")]

    package let settings: Settings
    /// The CDN's and Google's requests each keep the rate on their own: a check starts on
    /// schedule, but its CDN request comes after its origin's, whose length varies.
    private let cdnPacer: Pacer
    private let googlePacer: Pacer
    private let cdnClient: Result<HTTPSClient, HTTPClientError>
    private let googleClient: Result<HTTPSClient, HTTPClientError>?

    package init(settings: Settings) {
        self.settings = settings
        cdnPacer = Pacer(rate: settings.rate)
        googlePacer = Pacer(rate: settings.rate)
        var c = HTTPSClient.Configuration(timeoutSeconds: settings.timeoutSeconds, caFile: settings.cdnCAFile, userAgent: settings.userAgent)
        c.caFileKeepsSystemStore = true
        // An AASA file is at most 128 KB; a CDN that sends more is not sending one.
        c.maxBodyBytes = 256 * 1024
        do { cdnClient = .success(try HTTPSClient(c)) } catch { cdnClient = .failure(error) }
        if settings.dalBase != nil {
            // Google's TLS is verified against the system store plus --cacert, as the origins are.
            var g = HTTPSClient.Configuration(timeoutSeconds: settings.timeoutSeconds, caFile: settings.caFile, userAgent: settings.userAgent)
            g.caFileKeepsSystemStore = true
            do { googleClient = .success(try HTTPSClient(g)) } catch { googleClient = .failure(error) }
        } else {
            googleClient = nil
        }
    }

    package func check(_ domain: MonitoredDomain) -> DomainFindings {
        var options = SiteCheck.Options()
        options.apps = domain.apps
        options.caFile = settings.caFile
        options.timeoutSeconds = settings.timeoutSeconds
        options.identity = "monitor"
        options.cdnBase = nil
        var report: HostReport
        do throws(ConnectError) {
            if let connect = domain.connect { options.connectTo = [try DomainCheck.address(connect)] }
            report = siteCheck(options).checkOrigin(domain.host)
        } catch {
            // connect= names a host that does not resolve now.
            report = HostReport(host: domain.host, url: "https://\(domain.host)\(SiteCheck.wellKnownPath)")
            report.unreachableCause = "dns"
            report.set("resolve", .fail, error.message)
            report.skipOrigin(after: "resolve")
        }
        var checks = report.checks.filter { $0.name != "cdn" }
        let (botLine, blocked) = siteCheck(options).probeBot(report)
        checks.insert(botLine, at: (checks.firstIndex { $0.name == "status" } ?? 0) + 1)
        let (assetLinksLine, assetLinks) = fetchAssetLinks(report)
        checks.append(assetLinksLine)

        var good: OriginVersion?
        if let file = report.file, report.status(of: "validate") != .fail, file.document != nil {
            good = OriginVersion(file: file, etag: report.etag)
        }
        let cdn = askCDN(domain.host)
        let google = googleClient == nil ? nil : askGoogle(domain.host)
        return DomainFindings(report: report, checks: checks, good: good, botBlocked: blocked, cdn: cdn, assetLinks: assetLinks, google: google)
    }

    private func siteCheck(_ options: SiteCheck.Options) -> SiteCheck { SiteCheck(options: options) }

    /// `ADDR:PORT`, an IP literal or a name resolved now.
    struct ConnectError: Error {
        var message: String
    }

    static func address(_ text: String) throws(ConnectError) -> SocketAddress {
        if let address = try? SocketAddress(parsing: text) { return address }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]) else {
            throw ConnectError(message: "connect=\(text): expected ADDR:PORT")
        }
        do {
            return try Resolver.addresses(of: String(text[..<colon]), port: port)[0]
        } catch {
            throw ConnectError(message: "connect=\(text) does not resolve (\(error))")
        }
    }

    private func originClient(_ report: HostReport, userAgent: String) -> HTTPSClient? {
        guard !report.addresses.isEmpty, report.certificateFailure == nil, report.status(of: "tls") != .fail else { return nil }
        var c = HTTPSClient.Configuration(timeoutSeconds: settings.timeoutSeconds, caFile: settings.caFile, connectTo: report.addresses,
                                          userAgent: userAgent)
        c.maxBodyBytes = 1024 * 1024
        return try? HTTPSClient(c)
    }

    /// `/.well-known/assetlinks.json`, validated when it answers 200; what it says for Google's list.
    private func fetchAssetLinks(_ report: HostReport) -> (CheckLine, AssetLinksReading) {
        let path = AssociationFileKind.assetLinks.urlPath
        func skip(_ message: String) -> (CheckLine, AssetLinksReading) {
            (CheckLine(name: "assetlinks", status: .skip, message: message), .unusable(message))
        }
        guard let client = originClient(report, userAgent: SiteCheck.userAgent) else {
            return skip("not run: the origin cannot be reached over verified TLS")
        }
        // The host's one time-out bounds the origin as a whole (docs/check.md): assetlinks.json gets
        // what the file, the legacy location and the bot-blocked probe left of it, so an origin that
        // holds every request holds its check for one --timeout, not two.
        if let deadline = report.originDeadline, deadline - monotonicMilliseconds() < 100 {
            return skip("not run: the host's time-out (--timeout) was spent")
        }
        let response: HTTPResponse
        do {
            response = try client.get(HTTPURL(isSecure: true, host: report.host, target: path), headers: DomainCheck.ownCheckHeaders,
                                      deadline: report.originDeadline)
        } catch {
            return skip("not validated: no complete answer for GET \(path) (\(error.message))")
        }
        guard response.status == 200 else {
            let line = CheckLine(name: "assetlinks", status: .skip, message: "not validated: \(response.head.statusText) for GET \(path)")
            // 404 and 410 say there is no file; any other status says nothing of what it holds.
            return (line, response.status == 404 || response.status == 410 ? .absent : .unusable(line.message))
        }
        let file = AssociationFile(kind: .assetLinks, bytes: response.body)
        let first = file.diagnostics.first { $0.severity == .error } ?? file.diagnostics.first
        let firstText = first.map { "; first: \($0.line):\($0.column): \($0.message) [\($0.code.rawValue)]" } ?? ""
        // A file with errors (HTML, not JSON, not a statement list) is no statement of the origin's.
        guard file.errorCount == 0, let apps = GoogleView.originApps(response.body) else {
            let line = CheckLine(name: "assetlinks", status: .fail, message: "\(path): \(counted(file.errorCount, "error")), \(counted(file.warningCount, "warning"))\(firstText)")
            return (line, .unusable(line.message))
        }
        if file.warningCount > 0 {
            return (CheckLine(name: "assetlinks", status: .warn, message: "\(path): valid, \(counted(file.warningCount, "warning"))\(firstText)"), .statements(apps))
        }
        return (CheckLine(name: "assetlinks", status: .pass, message: "\(path): valid, \(counted(apps.count, "app fingerprint", "app fingerprints")) for App Links"),
                .statements(apps))
    }

    /// `{cdn-base}/a/v1/HOST`, as the server's CDN watch asks it.
    private func askCDN(_ host: String) -> CDNAnswer {
        switch cdnClient {
        case .success(let client):
            var prefix = settings.cdnBase.target
            while prefix.hasSuffix("/") { prefix.removeLast() }
            let url = HTTPURL(isSecure: settings.cdnBase.isSecure, host: settings.cdnBase.host, port: settings.cdnBase.port, target: prefix + "/a/v1/" + host)
            cdnPacer.wait()
            do throws(HTTPClientError) { return CDNAnswer(response: try client.get(url)) } catch { return CDNAnswer(error: error) }
        case .failure(let error):
            return CDNAnswer(outcome: .unreachable(cause: "tls", message: error.message))
        }
    }

    private func askGoogle(_ host: String) -> GoogleAnswer {
        guard let base = settings.dalBase, let googleClient else { preconditionFailure("Google asked with --dal-base off") }
        let client: HTTPSClient
        switch googleClient {
        case .success(let c): client = c
        case .failure(let error): return .failing("cannot load the trusted certificates: \(error.message)")
        }
        var prefix = base.target
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let url = HTTPURL(isSecure: base.isSecure, host: base.host, port: base.port,
                          target: prefix + "/v1/statements:list?source.web.site=https://\(host)&relation=\(GoogleView.relation)")
        let response: HTTPResponse
        googlePacer.wait()
        do {
            response = try client.get(url)
        } catch {
            return .failing("no answer from \(base.host): \(error.message)")
        }
        guard response.status == 200 else { return .failing("Google answers \(response.head.statusText)") }
        guard let google = GoogleView.googleApps(response.body) else { return .failing("Google's answer is not a statement list") }
        return .listed(google)
    }
}
