import AASACore
import AASAHTTP
import AASATransport

/// One association file of a live host fetched as Apple's bot fetches it, for `aasa import`
/// (docs/import.md): `check`'s client and texts, TLS verified, the legacy AASA location, and
/// redirects followed — at most ``maximumRedirects``, HTTPS only — and reported, since Apple's
/// CDN follows none (docs/aasa-reference.md §3.1).
package struct AssociationFetch: Sendable {
    package struct Options: Sendable {
        /// Trusted besides the system store (`--cacert`).
        package var caFile: String?
        /// Where to connect instead of resolving a name on port 443 (`--connect`, `connect=`):
        /// the host's own, and a redirect's to port 443; SNI and Host stay the URL's.
        package var connectTo: [SocketAddress]?
        /// One budget for a file: its redirects and, for AASA, the legacy location share it.
        package var timeoutSeconds: Double = 10
        /// What the requests say they are, in `AASA-Check`.
        package var identity = "import"

        package init() {}
    }

    /// How a fetch ended.
    package enum Outcome: Sendable {
        /// `200` with a body that is not an HTML page and within the size limit: the file as served.
        case found(body: [UInt8], etag: String?)
        /// `404` or `410` (for AASA, at both locations).
        case absent(String)
        /// No answer, another status, a redirect not followed, an HTML page, a body too large.
        case failed(String)
    }

    package struct Result: Sendable {
        package var kind: AssociationFileKind
        /// Where the file was found, or the last URL asked.
        package var url: String
        /// Each URL a redirect led to, in order.
        package var redirects: [String]
        package var outcome: Outcome
        /// Found only at `/apple-app-site-association`.
        package var fromLegacyPath = false
    }

    /// Apple's CDN follows none; three is what a move between hosts plausibly chains.
    package static let maximumRedirects = 3
    /// The largest body kept: the size after which iOS stops reading an AASA file, and the
    /// validator's limit for every kind but Apple Pay's (64 KiB, which the validator enforces).
    package static let maximumFileBytes = AASAFile.maximumSize

    package let options: Options

    package init(options: Options) {
        self.options = options
    }

    /// What one request came to: an answer (after any redirects), or why there was none.
    private enum Step {
        case answer(HTTPResponse, url: HTTPURL, redirects: [String])
        /// `answered`: the host sent an HTTP answer (a redirect this client does not follow).
        case failure(String, url: HTTPURL, redirects: [String], answered: Bool)

        var answered: Bool {
            switch self {
            case .answer: return true
            case .failure(_, _, _, let answered): return answered
            }
        }

        /// The final answer's status, nil without one.
        var status: Int? {
            if case .answer(let response, _, _) = self { return response.status }
            return nil
        }
    }

    package func fetch(_ kind: AssociationFileKind, from host: String) -> Result {
        let deadline = monotonicMilliseconds() + Int64(options.timeoutSeconds * 1000)
        let first = get(HTTPURL(isSecure: true, host: host, target: kind.urlPath), host: host, deadline: deadline)
        let firstResult = result(kind, first, host: host)
        // Not 200 at the well-known location, though the host answered (a status, a redirect not
        // followed): the legacy one, as devices before the CDN tried it (docs/aasa-reference.md
        // §3.1), within what is left of the file's time-out. A host that did not answer at all
        // (as `check`) is not asked again.
        guard kind == .aasa, first.answered, first.status != 200 else { return firstResult }
        let legacy = get(HTTPURL(isSecure: true, host: host, target: AssociationFileKind.legacyAASAPath), host: host, deadline: deadline)
        if legacy.status == 200 {
            var r = result(kind, legacy, host: host)
            r.fromLegacyPath = true
            return r
        }
        if case .answer(let response, _, _) = first, case .answer(let l, _, _) = legacy,
           [404, 410].contains(response.status), [404, 410].contains(l.status) {
            var r = firstResult
            r.outcome = .absent("\(response.head.statusText) for GET \(kind.urlPath), \(l.head.statusText) for GET \(AssociationFileKind.legacyAASAPath)")
            return r
        }
        let problem: String
        switch firstResult.outcome {
        case .failed(let why), .absent(let why): problem = why
        case .found: preconditionFailure("a 200 is not asked again")
        }
        let legacyText: String
        switch legacy {
        case .answer(let l, _, _): legacyText = l.head.statusText
        case .failure(let why, _, _, _): legacyText = why
        }
        var r = firstResult
        r.outcome = .failed("\(problem) (\(AssociationFileKind.legacyAASAPath) too: \(legacyText))")
        return r
    }

    /// The verdict on one location's answer.
    private func result(_ kind: AssociationFileKind, _ step: Step, host: String) -> Result {
        switch step {
        case .failure(let why, let url, let redirects, _):
            return Result(kind: kind, url: url.description, redirects: redirects, outcome: .failed(why))
        case .answer(let response, let url, let redirects):
            func done(_ outcome: Outcome) -> Result { Result(kind: kind, url: url.description, redirects: redirects, outcome: outcome) }
            if [404, 410].contains(response.status) { return done(.absent("\(response.head.statusText) for GET \(url.target)")) }
            guard response.status == 200 else { return done(.failed(SiteCheck.statusProblem(response, host: url.host, path: url.target))) }
            if let html = SiteCheck.htmlProblem(response) { return done(.failed(html)) }
            if response.body.count > AssociationFetch.maximumFileBytes { return done(.failed(SiteCheck.sizeProblem(response.body.count))) }
            return done(.found(body: response.body, etag: response["ETag"]))
        }
    }

    /// `GET url`, following redirects within the deadline.
    private func get(_ start: HTTPURL, host: String, deadline: Int64) -> Step {
        var url = start
        var redirects: [String] = []
        while true {
            var configuration = HTTPSClient.Configuration(timeoutSeconds: options.timeoutSeconds, caFile: options.caFile,
                                                          connectTo: url.port == 443 ? options.connectTo : nil,
                                                          allowUnverifiedCertificate: true, userAgent: SiteCheck.userAgent)
            configuration.caFileKeepsSystemStore = true
            configuration.maxBodyBytes = 1024 * 1024
            let response: HTTPResponse
            do {
                let client = try HTTPSClient(configuration)
                response = try client.get(url, headers: [(name: RequestParser.ownCheckField, value: options.identity)], deadline: deadline)
            } catch {
                return .failure(noAnswer(error, url: url, limit: configuration.maxBodyBytes), url: url, redirects: redirects,
                                answered: redirects.count > 0)
            }
            // Apple's CDN gets nothing from a host whose certificate does not verify: neither does this.
            if let tls = response.tls, let failure = tls.verificationFailure {
                return .failure(SiteCheck.certificateProblem(tls, failure, host: url.host), url: url, redirects: redirects,
                                answered: redirects.count > 0)
            }
            guard (300...399).contains(response.status), response.status != 304, let location = response["Location"] else {
                return .answer(response, url: url, redirects: redirects)
            }
            guard let next = AssociationFetch.resolve(location, against: url) else {
                return .failure("\(response.head.statusText) to \(location.escapingControlCharacters), which is not a URL", url: url, redirects: redirects, answered: true)
            }
            guard next.isSecure else {
                return .failure("\(response.head.statusText) to \(next), an http:// URL: only HTTPS redirects are followed (devices and Apple's CDN fetch over HTTPS only)",
                                url: url, redirects: redirects, answered: true)
            }
            guard redirects.count < AssociationFetch.maximumRedirects else {
                return .failure("\(response.head.statusText) to \(next): a redirect more than the \(AssociationFetch.maximumRedirects) followed",
                                url: url, redirects: redirects, answered: true)
            }
            redirects.append(next.description)
            url = next
        }
    }

    private func noAnswer(_ error: HTTPClientError, url: HTTPURL, limit: Int) -> String {
        guard error.phase == .response else { return SiteCheck.tlsFailure(error, viaConnect: options.connectTo != nil && url.port == 443) }
        if error.head != nil, error.parseError == .bodyTooLarge(limit: limit) { return SiteCheck.readLimitProblem(limit) }
        return SiteCheck.noCompleteResponse(url.target, error)
    }

    /// A `Location` (RFC 9110 §10.2.2: a URI reference) made absolute against the URL asked;
    /// nil when it is not one.
    static func resolve(_ location: String, against base: HTTPURL) -> HTTPURL? {
        let text = location.trimmingWhitespace()
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
        let lower = text.lowercased()
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") { return try? HTTPURL(text) }
        if text.hasPrefix("//") { return try? HTTPURL((base.isSecure ? "https:" : "http:") + text) }
        if text.contains(":"), let colon = text.firstIndex(of: ":"), !text[..<colon].contains("/") { return nil }
        var target: String
        if text.hasPrefix("/") {
            target = text
        } else {
            let path = base.target.prefix { $0 != "?" }
            target = String(path[...(path.lastIndex(of: "/") ?? path.startIndex)]) + text
        }
        if let hash = target.firstIndex(of: "#") { target = String(target[..<hash]) }
        return HTTPURL(isSecure: base.isSecure, host: base.host, port: base.port, target: target)
    }
}
