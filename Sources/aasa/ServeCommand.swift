import AASAServer
import AASACommands
import ArgumentParser
import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve apple-app-site-association files over HTTPS.",
        discussion: """
        Every option also reads an environment variable: AASA_CONFIG, AASA_CERTS, AASA_HTTPS and \
        AASA_HTTP (comma-separated lists), AASA_ADMIN, AASA_DEFAULT_CERT, AASA_DEV, AASA_WORKERS, \
        AASA_PROXY_PROTOCOL, AASA_MAX_CONNECTIONS, AASA_LOG_FORMAT, AASA_CACHE_MAX_AGE, \
        AASA_SHUTDOWN_GRACE, AASA_ACME, AASA_ACME_EMAIL, AASA_ACME_DIRECTORY, AASA_ACME_CA_ROOT, \
        AASA_ACME_CHALLENGE, AASA_ACME_EAB_KID, AASA_ACME_EAB_HMAC_KEY, AASA_CDN_WATCH, AASA_CDN_BASE, \
        AASA_CDN_CACERT, AASA_CDN_INTERVAL, AASA_CDN_RATE. A flag on the command line \
        wins over the variable. AASA_ACME_RETRY_BASE_MS (a test knob) sets the first retry delay \
        after a failed ACME order (default 60000); AASA_CDN_TIMEOUT_MS (another) the time each request \
        to Apple's CDN may take (default 10000).
        """
    )

    @Option(help: "Config directory: one folder per site (default ./config).")
    var config: String?

    @Option(help: "Certificates: NAME.crt/NAME.pem with NAME.key, NAME/fullchain.pem with NAME/privkey.pem, or NAME/tls.crt with NAME/tls.key (a Kubernetes TLS Secret).")
    var certs: String?

    @Option(help: "HTTPS listener ADDR:PORT; repeatable (default 0.0.0.0:8443).")
    var https: [String] = []

    @Option(help: "Plain HTTP listener ADDR:PORT; repeatable (none by default; 0.0.0.0:8080 with --dev).")
    var http: [String] = []

    @Option(help: "Admin listener ADDR:PORT, or 'off' (default 127.0.0.1:9090).")
    var admin: String?

    @Option(name: .customLong("default-cert"), help: "Certificate for clients without SNI or with an unknown name.")
    var defaultCert: String?

    @Flag(help: "Development mode: certs-dev/, an HTTP listener on 8080, Cache-Control: no-cache.")
    var dev = false

    @Option(help: "Event loop threads (default: number of cores).")
    var workers: Int?

    @Flag(name: .customLong("proxy-protocol"), help: "Expect a PROXY protocol v1/v2 header on HTTPS and HTTP connections.")
    var proxyProtocol = false

    @Option(name: .customLong("max-connections"), help: "Stop accepting above this many connections (default 10000).")
    var maxConnections: Int?

    @Option(name: .customLong("max-connections-per-client"),
            help: "Connections one client address may hold; 0 = no limit (default 256 on HTTPS and PROXY-protocol listeners).")
    var maxConnectionsPerClient: Int?

    @Option(name: .customLong("http2"), help: "on or off: HTTP/2 over TLS (ALPN h2) and h2c on --http listeners (default on).")
    var http2: String?

    @Option(name: .customLong("log-format"), help: "text or json.")
    var logFormat: String?

    @Option(name: .customLong("cache-max-age"), help: "Cache-Control max-age in seconds (default 3600).")
    var cacheMaxAge: Int?

    @Option(name: .customLong("metrics-sites"), help: "Sites with a label of their own in /metrics, the first to get requests; the rest count as site=\"other\" (default 1000).")
    var metricsSites: Int?

    @Option(name: .customLong("watch"), help: "auto, inotify or poll: how changes in --config and --certs are seen (default auto: poll on a network filesystem).")
    var watch: String?

    @Option(name: .customLong("poll-interval"), help: "Seconds between passes of --watch poll (default 30).")
    var pollInterval: Int?

    @Option(name: .customLong("shutdown-grace"), help: "Seconds to finish requests after SIGTERM (default 10).")
    var shutdownGrace: Int?

    @Flag(help: "Obtain and renew certificates with ACME (RFC 8555) for sites no certificate covers; needs --certs.")
    var acme = false

    @Option(name: .customLong("acme-email"), help: "Contact e-mail of the ACME account.")
    var acmeEmail: String?

    @Option(name: .customLong("acme-directory"), help: "ACME directory URL (default Let's Encrypt production).")
    var acmeDirectory: String?

    @Option(name: .customLong("acme-ca-root"), help: "PEM file of the CA to trust for the ACME directory's HTTPS.")
    var acmeCARoot: String?

    @Option(name: .customLong("acme-challenge"), help: "tls-alpn-01 (default, on --https) or http-01 (on --http).")
    var acmeChallenge: String?

    @Option(name: .customLong("acme-order-rate"), help: "New ACME orders per 3 hours, renewals included (default 300, Let's Encrypt's limit).")
    var acmeOrderRate: Int?

    @Option(name: .customLong("acme-eab-kid"), help: "External account binding key identifier.")
    var acmeEABKid: String?

    @Option(name: .customLong("acme-eab-hmac-key"), help: "External account binding MAC key, base64url.")
    var acmeEABHMACKey: String?

    @Option(name: .customLong("cdn-watch"), help: "on or off: check each site's copy at Apple's CDN (default on; off with --dev).")
    var cdnWatch: String?

    @Option(name: .customLong("cdn-base"), help: "Apple's CDN (default https://app-site-association.cdn-apple.com).")
    var cdnBase: String?

    @Option(name: .customLong("cdn-cacert"), help: "PEM file of CAs to trust for --cdn-base (instead of the system store, as check's --cacert).")
    var cdnCACert: String?

    @Option(name: .customLong("cdn-interval"), help: "Seconds between checks of one site (default 21600, the CDN's own max-age).")
    var cdnInterval: Int?

    @Option(name: .customLong("cdn-rate"), help: "Requests per second to the CDN at most (default 2).")
    var cdnRate: Int?

    @Option(name: .customLong("admin-token-file"),
            help: "Turn on the write API on the admin listener: a file of bearer tokens, NAME:TOKEN or TOKEN, one a line (docs/platforms.md).")
    var adminTokenFile: String?

    @Option(name: .customLong("store"),
            help: "postgres://… (libpq URI): sites and certificates in PostgreSQL, shared by replicas, instead of --config and --certs (docs/replicas.md).")
    var store: String?

    /// `--admin` values that mean "no admin listener" (also understood by `aasa health`).
    static let adminOff: Set<String> = ["off", "none", ""]

    func run() throws {
        let env = Environment()
        var c = ServerConfiguration()
        let dev = self.dev || env.flag("AASA_DEV")
        c.storeURL = store ?? env["AASA_STORE"]
        if c.storeURL != nil {
            // The store replaces both folders (docs/replicas.md); AASA_CONFIG and AASA_CERTS, which
            // the container image sets, are then ignored.
            guard config == nil, certs == nil else {
                throw ValidationError("--store replaces --config and --certs: give one or the other")
            }
            guard !dev else { throw ValidationError("--store and --dev cannot be used together") }
        }
        c.configDirectory = config ?? (c.storeURL == nil ? env["AASA_CONFIG"] : nil) ?? "./config"
        while c.configDirectory.count > 1 && c.configDirectory.hasSuffix("/") { c.configDirectory.removeLast() }
        // With the store, both are its local copy, made at start.
        c.certsDirectory = c.storeURL != nil ? "" : certs ?? env["AASA_CERTS"] ?? (dev ? "certs-dev" : nil)
        c.defaultCertificate = defaultCert ?? env["AASA_DEFAULT_CERT"]

        let httpsList = https.isEmpty ? env.list("AASA_HTTPS") : https
        let httpList = http.isEmpty ? env.list("AASA_HTTP") : http
        c.https = try addresses(httpsList.isEmpty ? ["0.0.0.0:8443"] : httpsList, "--https")
        c.http = try addresses(httpList.isEmpty && dev ? ["0.0.0.0:8080"] : httpList, "--http")
        if c.certsDirectory == nil {
            guard httpsList.isEmpty else { throw ValidationError("--https needs --certs DIR (or --dev)") }
            c.https = []
            FileHandleOutput.standardError.write("aasa serve: no --certs: the default HTTPS listener is not started\n")
            guard !c.http.isEmpty else {
                throw ValidationError("nothing to serve: give --certs DIR for HTTPS, or --http ADDR:PORT (or use --dev)")
            }
        }
        let adminText = admin ?? env["AASA_ADMIN"] ?? "127.0.0.1:9090"
        c.admin = ServeCommand.adminOff.contains(adminText.lowercased()) ? nil : try addresses([adminText], "--admin").first
        c.apiTokenFile = adminTokenFile ?? env["AASA_ADMIN_TOKEN_FILE"]
        if let file = c.apiTokenFile {
            guard c.admin != nil else { throw ValidationError("--admin-token-file needs the admin listener (--admin ADDR:PORT, not off)") }
            guard access(file, R_OK) == 0 else { throw ValidationError("--admin-token-file: cannot read \(file)") }
        }

        c.workers = try positive(workers ?? env.int("AASA_WORKERS") ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), "--workers")
        c.maxConnections = try positive(maxConnections ?? env.int("AASA_MAX_CONNECTIONS") ?? 10_000, "--max-connections")
        let format = logFormat ?? env["AASA_LOG_FORMAT"] ?? "text"
        guard let parsedFormat = LogFormat(rawValue: format) else { throw ValidationError("--log-format must be text or json") }
        c.logFormat = parsedFormat
        let maxAge = cacheMaxAge ?? env.int("AASA_CACHE_MAX_AGE") ?? 3600
        guard maxAge >= 0 else { throw ValidationError("--cache-max-age must be 0 or more") }
        c.cacheControl = dev ? "no-cache" : "public, max-age=\(maxAge)"
        let grace = shutdownGrace ?? env.int("AASA_SHUTDOWN_GRACE") ?? 10
        guard grace >= 0 else { throw ValidationError("--shutdown-grace must be 0 or more") }
        c.shutdownGraceSeconds = grace
        c.transport.proxyProtocol = proxyProtocol || env.flag("AASA_PROXY_PROTOCOL")
        if let perClient = maxConnectionsPerClient ?? env.int("AASA_MAX_CONNECTIONS_PER_CLIENT") {
            guard perClient >= 0 else { throw ValidationError("--max-connections-per-client must be 0 or more") }
            c.transport.maxConnectionsPerClient = perClient
        }
        let http2Text = (http2 ?? env["AASA_HTTP2"] ?? "on").lowercased()
        switch http2Text {
        case "on", "1", "true", "yes": c.http2Enabled = true
        case "off", "0", "false", "no": c.http2Enabled = false
        default: throw ValidationError("--http2 must be on or off, got \(http2Text)")
        }
        c.metricsSites = try positive(metricsSites ?? env.int("AASA_METRICS_SITES") ?? 1000, "--metrics-sites")
        let watchText = (watch ?? env["AASA_WATCH"] ?? "auto").lowercased()
        guard let watchMode = WatchMode(rawValue: watchText) else { throw ValidationError("--watch must be auto, inotify or poll, got \(watchText)") }
        c.watchMode = watchMode
        c.pollIntervalSeconds = try positive(pollInterval ?? env.int("AASA_POLL_INTERVAL") ?? 30, "--poll-interval")
        c.dev = dev
        if acme || env.flag("AASA_ACME") { c.acme = try acmeConfiguration(c, env) }
        c.cdnWatch = try cdnWatchConfiguration(dev: dev, env)

        let status = Server(configuration: c).run()
        if status != 0 { throw ExitCode(status) }
    }

    /// docs/acme.md; every inconsistency is a usage error.
    private func acmeConfiguration(_ c: ServerConfiguration, _ env: Environment) throws -> ACMEConfiguration {
        guard c.certsDirectory != nil else { throw ValidationError("--acme needs --certs DIR: certificates and the account are kept there") }
        var a = ACMEConfiguration()
        a.email = acmeEmail ?? env["AASA_ACME_EMAIL"]
        a.directory = acmeDirectory ?? env["AASA_ACME_DIRECTORY"] ?? ACMEConfiguration.letsEncrypt
        guard a.directory.lowercased().hasPrefix("https://") else { throw ValidationError("--acme-directory must be an https:// URL") }
        a.caRoot = acmeCARoot ?? env["AASA_ACME_CA_ROOT"]
        a.orderRate = try positive(acmeOrderRate ?? env.int("AASA_ACME_ORDER_RATE") ?? a.orderRate, "--acme-order-rate")
        if let root = a.caRoot, access(root, R_OK) != 0 { throw ValidationError("--acme-ca-root: cannot read \(root)") }
        let challenge = acmeChallenge ?? env["AASA_ACME_CHALLENGE"] ?? ChallengeType.tlsALPN01.rawValue
        guard let type = ChallengeType(rawValue: challenge) else { throw ValidationError("--acme-challenge must be tls-alpn-01 or http-01") }
        if type == .http01, c.http.isEmpty { throw ValidationError("--acme-challenge http-01 needs an --http listener (on port 80 of every site's address)") }
        if type == .tlsALPN01, c.https.isEmpty { throw ValidationError("--acme-challenge tls-alpn-01 needs an --https listener") }
        a.challenge = type
        let kid = acmeEABKid ?? env["AASA_ACME_EAB_KID"]
        let key = acmeEABHMACKey ?? env["AASA_ACME_EAB_HMAC_KEY"]
        switch (kid, key) {
        case (nil, nil): break
        case (let kid?, let key?):
            guard let mac = ACMEConfiguration.decodeMACKey(key) else { throw ValidationError("--acme-eab-hmac-key must be base64url") }
            a.externalAccountKeyID = kid
            a.externalAccountMACKey = mac
        default:
            throw ValidationError("external account binding needs both --acme-eab-kid and --acme-eab-hmac-key")
        }
        if let base = env.int("AASA_ACME_RETRY_BASE_MS"), base > 0 { a.retryBaseMilliseconds = Int64(base) }
        return a
    }

    /// docs/apple-view.md: on by default, off with --dev (a development site is not on
    /// Apple's CDN: devices fetch it directly).
    private func cdnWatchConfiguration(dev: Bool, _ env: Environment) throws -> CDNWatchConfiguration? {
        let text = (cdnWatch ?? env["AASA_CDN_WATCH"] ?? (dev ? "off" : "on")).lowercased()
        switch text {
        case "on", "1", "true", "yes": break
        case "off", "0", "false", "no": return nil
        default: throw ValidationError("--cdn-watch must be on or off, got \(text)")
        }
        var w = CDNWatchConfiguration()
        if let base = cdnBase ?? env["AASA_CDN_BASE"] {
            do { w.base = try HTTPURL(base) } catch { throw ValidationError("--cdn-base: \(error)") }
        }
        w.caFile = cdnCACert ?? env["AASA_CDN_CACERT"]
        if let file = w.caFile, access(file, R_OK) != 0 { throw ValidationError("--cdn-cacert: cannot read \(file)") }
        w.intervalSeconds = try positive(cdnInterval ?? env.int("AASA_CDN_INTERVAL") ?? 21_600, "--cdn-interval")
        w.rate = try positive(cdnRate ?? env.int("AASA_CDN_RATE") ?? 2, "--cdn-rate")
        if let ms = env.int("AASA_CDN_TIMEOUT_MS"), ms > 0 { w.timeoutMilliseconds = Int64(ms) }
        w.userAgent = "aasa/" + AASA.configuration.version
        return w
    }

    private func addresses(_ list: [String], _ flag: String) throws -> [SocketAddress] {
        try list.map { text in
            do { return try SocketAddress(parsing: text) } catch { throw ValidationError("\(flag): \(error)") }
        }
    }

    private func positive(_ n: Int, _ flag: String) throws -> Int {
        guard n > 0 else { throw ValidationError("\(flag) must be at least 1") }
        return n
    }
}

/// The AASA_* variables.
struct Environment {
    subscript(name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }

    func list(_ name: String) -> [String] {
        self[name]?.split(separator: ",").map { String($0).trimmingCharacters() }.filter { !$0.isEmpty } ?? []
    }

    func int(_ name: String) -> Int? { self[name].flatMap { Int($0) } }

    func flag(_ name: String) -> Bool { ["1", "true", "yes", "on"].contains(self[name]?.lowercased() ?? "") }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
