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
        discussion: ServeVariable.help
    )

    @Option(help: "Config directory: one folder per site (default: ./config).")
    var config: String?

    @Option(help: "Certificates: NAME.crt/NAME.pem with NAME.key, NAME/fullchain.pem with NAME/privkey.pem, or NAME/tls.crt with NAME/tls.key (a Kubernetes TLS Secret) (default: none, and no HTTPS listener; certs-dev with --dev).")
    var certs: String?

    @Option(help: "HTTPS listener ADDR:PORT; repeatable (default: 0.0.0.0:8443).")
    var https: [String] = []

    @Option(help: "Plain HTTP listener ADDR:PORT; repeatable (default: none; 0.0.0.0:8080 with --dev).")
    var http: [String] = []

    @Option(help: "Admin listener ADDR:PORT, or 'off' (default: 127.0.0.1:9090).")
    var admin: String?

    @Option(name: .customLong("default-cert"), help: "Certificate for clients without SNI or with an unknown name (default: the first NAME in byte order).")
    var defaultCert: String?

    @Flag(help: "Development mode: certs-dev/, an HTTP listener on 8080, Cache-Control: no-cache.")
    var dev = false

    @Option(help: "Event loop threads (default: number of cores).")
    var workers: Int?

    @Flag(name: .customLong("proxy-protocol"), help: "Expect a PROXY protocol v1/v2 header on HTTPS and HTTP connections.")
    var proxyProtocol = false

    @Option(name: .customLong("max-connections"), help: "Stop accepting above this many connections (default: 10000).")
    var maxConnections: Int?

    @Option(name: .customLong("max-connections-per-client"),
            help: "Connections one client address may hold; 0 = no limit (default: 256 on HTTPS listeners and with --proxy-protocol, no limit on plain --http listeners).")
    var maxConnectionsPerClient: Int?

    @Option(name: .customLong("http2"), help: "HTTP/2 over TLS (ALPN h2) and h2c on --http listeners (default: on).")
    var http2: Switch?

    @Option(name: .customLong("log-format"), help: "The event log (stderr) and access log (stdout) as text or JSON lines (default: text).")
    var logFormat: LogFormat?

    @Option(name: .customLong("cache-max-age"), help: "Cache-Control max-age in seconds (default: 3600).")
    var cacheMaxAge: Int?

    @Option(name: .customLong("metrics-sites"), help: "Sites with a label of their own in /metrics, the first to get requests; the rest count as site=\"other\" (default: 1000).")
    var metricsSites: Int?

    @Option(name: .customLong("watch"), help: "How changes in --config and --certs are seen (default: auto, which is poll on a network filesystem, else inotify).")
    var watch: WatchMode?

    @Option(name: .customLong("poll-interval"), help: "Seconds between passes of --watch poll (default: 30).")
    var pollInterval: Int?

    @Option(name: .customLong("shutdown-grace"), help: "Seconds to finish requests after SIGTERM and the drain delay (default: 10).")
    var shutdownGrace: Int?

    @Option(name: .customLong("drain-delay"),
            help: "Seconds after SIGTERM during which /readyz answers 503 while the listeners still accept, each answer closing its connection, so balancers stop sending here first (default: 0).")
    var drainDelay: Int?

    @Flag(help: "Obtain and renew certificates with ACME (RFC 8555) for sites no certificate covers; needs --certs.")
    var acme = false

    @Option(name: .customLong("acme-email"), help: "Contact e-mail of the ACME account.")
    var acmeEmail: String?

    @Option(name: .customLong("acme-directory"), help: "ACME directory URL (default: Let's Encrypt production).")
    var acmeDirectory: String?

    @Option(name: .customLong("acme-ca-root"), help: "PEM file of the CA to trust for the ACME directory's HTTPS.")
    var acmeCARoot: String?

    @Option(name: .customLong("acme-challenge"), help: "How the CA validates a name: in the TLS handshake on --https (tls-alpn-01) or over --http (http-01) (default: tls-alpn-01).")
    var acmeChallenge: ChallengeType?

    @Option(name: .customLong("acme-order-rate"), help: "New ACME orders per 3 hours, renewals included (default: 300, Let's Encrypt's limit).")
    var acmeOrderRate: Int?

    @Option(name: .customLong("acme-eab-kid"), help: "External account binding key identifier.")
    var acmeEABKid: String?

    @Option(name: .customLong("acme-eab-hmac-key"), help: "External account binding MAC key, base64url.")
    var acmeEABHMACKey: String?

    @Option(name: .customLong("cdn-watch"), help: "Check each site's copy at Apple's CDN (default: on; off with --dev).")
    var cdnWatch: Switch?

    @Option(name: .customLong("cdn-base"), help: "Apple's CDN (default: https://app-site-association.cdn-apple.com).")
    var cdnBase: String?

    @Option(name: .customLong("cdn-cacert"), help: "PEM file of CAs to trust for --cdn-base (instead of the system store, as check's --cacert).")
    var cdnCACert: String?

    @Option(name: .customLong("cdn-interval"), help: "Seconds between checks of one site (default: 21600, the CDN's own max-age).")
    var cdnInterval: Int?

    @Option(name: .customLong("cdn-rate"), help: "Requests per second to the CDN at most (default: 2).")
    var cdnRate: Int?

    @Option(name: .customLong("admin-token-file"),
            help: "Turn on the write API on the admin listener: a file of bearer tokens, NAME:TOKEN or TOKEN, one a line (docs/platforms.md).")
    var adminTokenFile: String?

    @Option(name: .customLong("admin-tls"),
            help: "Serve the admin listener over HTTPS with certificate NAME (as --default-cert names one); use it whenever the admin listener is not on loopback.")
    var adminTLS: String?

    @Option(name: .customLong("store"),
            help: "postgres://… (libpq URI): sites and certificates in PostgreSQL, shared by replicas, instead of --config and --certs (docs/replicas.md).")
    var store: String?

    @Option(name: .customLong("store-secret-file"),
            help: "With --store: a file of at least 32 bytes; private keys the server writes to the store are sealed with AES-256-GCM under a key derived from it.")
    var storeSecretFile: String?

    /// `--admin` values that mean "no admin listener" (also understood by `aasa health`).
    static let adminOff: Set<String> = ["off", "none", ""]

    func run() throws {
        let env = Environment()
        var c = ServerConfiguration()
        let dev = try self.dev || env.flag(.dev)
        c.storeURL = store ?? env[.store]
        if c.storeURL != nil {
            // The store replaces both folders (docs/replicas.md); AASA_CONFIG and AASA_CERTS, which
            // the container image sets, are then ignored.
            guard config == nil, certs == nil else {
                throw ValidationError("--store replaces --config and --certs: give one or the other")
            }
            guard !dev else { throw ValidationError("--store and --dev cannot be used together") }
        }
        c.storeSecretFile = storeSecretFile ?? env[.storeSecretFile]
        if c.storeSecretFile != nil, c.storeURL == nil { throw ValidationError("--store-secret-file needs --store") }
        c.configDirectory = config ?? (c.storeURL == nil ? env[.config] : nil) ?? "./config"
        while c.configDirectory.count > 1 && c.configDirectory.hasSuffix("/") { c.configDirectory.removeLast() }
        // With the store, both are its local copy, made at start.
        c.certsDirectory = c.storeURL != nil ? "" : certs ?? env[.certs] ?? (dev ? "certs-dev" : nil)
        c.defaultCertificate = defaultCert ?? env[.defaultCert]

        // Sockets systemd passed (docs/deployment.md, "systemd"): each stands for its listener,
        // so an address for the same listener is a contradiction; and they replace the default
        // listeners (HTTPS on 8443, HTTP on 8080 with --dev), though not the admin one.
        do { c.passedListeners = try SocketActivation.take() } catch { throw ValidationError("socket activation: \(error)") }
        let passed = Set(c.passedListeners.map(\.kind))
        let httpsList = https.isEmpty ? env.list(.https) : https
        let httpList = http.isEmpty ? env.list(.http) : http
        for (kind, given, variable) in [(ListenerKind.https, !httpsList.isEmpty, https.first), (.http, !httpList.isEmpty, http.first),
                                        (.admin, (admin ?? env[.admin]) != nil, admin)] where passed.contains(kind) && given {
            let setting = named(variable, kind == .https ? .https : kind == .http ? .http : .admin)
            throw ValidationError("\(setting) names an address for the \(kind.name) listener, but systemd passed that socket (LISTEN_FDNAMES): remove \(setting), or the socket from the unit")
        }
        c.https = try addresses(httpsList.isEmpty && passed.isEmpty ? ["0.0.0.0:8443"] : httpsList, https.isEmpty ? ServeVariable.https.rawValue : "--https")
        c.http = try addresses(httpList.isEmpty && dev && passed.isEmpty ? ["0.0.0.0:8080"] : httpList, http.isEmpty ? ServeVariable.http.rawValue : "--http")
        if c.certsDirectory == nil {
            guard httpsList.isEmpty else { throw ValidationError("\(named(https.first, .https)) needs --certs DIR (or --dev)") }
            guard !passed.contains(.https) else { throw ValidationError("the https socket systemd passed needs --certs DIR (or --dev)") }
            c.https = []
            FileHandleOutput.standardError.write("aasa serve: no --certs: the default HTTPS listener is not started\n")
            guard !c.http.isEmpty || passed.contains(.http) else {
                throw ValidationError("nothing to serve: give --certs DIR for HTTPS, or --http ADDR:PORT (or use --dev)")
            }
        }
        let adminText = admin ?? env[.admin] ?? "127.0.0.1:9090"
        c.admin = passed.contains(.admin) || ServeCommand.adminOff.contains(adminText.lowercased()) ? nil
            : try addresses([adminText], admin == nil ? ServeVariable.admin.rawValue : "--admin").first
        c.apiTokenFile = adminTokenFile ?? env[.adminTokenFile]
        c.adminTLS = adminTLS ?? env[.adminTLS]
        if c.adminTLS != nil {
            guard c.hasAdmin else { throw ValidationError("--admin-tls needs the admin listener (--admin ADDR:PORT, not off)") }
            guard c.certsDirectory != nil else { throw ValidationError("--admin-tls needs certificates: --certs DIR or --store") }
        }
        if let file = c.apiTokenFile {
            guard c.hasAdmin else { throw ValidationError("--admin-token-file needs the admin listener (--admin ADDR:PORT, not off)") }
            if let problem = ServeCommand.tokenFileProblem(file) {
                throw ValidationError("\(named(adminTokenFile, .adminTokenFile)): \(file): \(problem)")
            }
        }

        c.workers = try number(workers, .workers, env) ?? Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        c.maxConnections = try number(maxConnections, .maxConnections, env) ?? 10_000
        c.logFormat = try logFormat ?? env.value(.logFormat) ?? .text
        let maxAge = try number(cacheMaxAge, .cacheMaxAge, env, minimum: 0) ?? 3600
        c.cacheControl = dev ? "no-cache" : "public, max-age=\(maxAge)"
        c.shutdownGraceSeconds = try number(shutdownGrace, .shutdownGrace, env, minimum: 0) ?? 10
        c.drainDelaySeconds = try number(drainDelay, .drainDelay, env, minimum: 0) ?? 0
        // A day at most: the milliseconds of delay + grace are computed, and must not overflow.
        for (seconds, variable) in [(c.drainDelaySeconds, ServeVariable.drainDelay), (c.shutdownGraceSeconds, .shutdownGrace)] where seconds > 86_400 {
            throw ValidationError("\(variable.flag ?? variable.rawValue) must be 86400 (a day) or less, got \(seconds)")
        }
        c.transport.proxyProtocol = try proxyProtocol || env.flag(.proxyProtocol)
        if let perClient = try number(maxConnectionsPerClient, .maxConnectionsPerClient, env, minimum: 0) {
            c.transport.maxConnectionsPerClient = perClient
        }
        c.http2Enabled = try (http2 ?? env.value(.http2) ?? .on) == .on
        c.metricsSites = try number(metricsSites, .metricsSites, env) ?? 1000
        c.watchMode = try watch ?? env.value(.watch) ?? .auto
        c.pollIntervalSeconds = try number(pollInterval, .pollInterval, env) ?? 30
        c.watchDelayMilliseconds = max(0, try env.int(.watchDelayMilliseconds) ?? 0)
        c.dev = dev
        if try acme || env.flag(.acme) {
            c.acme = try acmeConfiguration(c, env)
        }
        c.cdnWatch = try cdnWatchConfiguration(dev: dev, env)

        let status = Server(configuration: c).run()
        if status != 0 { throw ExitCode(status) }
    }

    /// docs/acme.md; every inconsistency is a usage error.
    private func acmeConfiguration(_ c: ServerConfiguration, _ env: Environment) throws -> ACMEConfiguration {
        guard c.certsDirectory != nil else {
            throw ValidationError("\(named(acme ? true : nil, .acme)) needs --certs DIR: certificates and the account are kept there")
        }
        var a = ACMEConfiguration()
        a.email = acmeEmail ?? env[.acmeEmail]
        a.directory = acmeDirectory ?? env[.acmeDirectory] ?? ACMEConfiguration.letsEncrypt
        guard a.directory.lowercased().hasPrefix("https://") else {
            throw ValidationError("\(named(acmeDirectory, .acmeDirectory)) must be an https:// URL")
        }
        a.caRoot = acmeCARoot ?? env[.acmeCARoot]
        a.orderRate = try number(acmeOrderRate, .acmeOrderRate, env) ?? a.orderRate
        if let root = a.caRoot, access(root, R_OK) != 0 { throw ValidationError("\(named(acmeCARoot, .acmeCARoot)): cannot read \(root)") }
        let type = try acmeChallenge ?? env.value(.acmeChallenge) ?? .tlsALPN01
        if type == .http01, c.http.isEmpty, !c.passedListeners.contains(where: { $0.kind == .http }) { throw ValidationError("--acme-challenge http-01 needs an --http listener (on port 80 of every site's address)") }
        if type == .tlsALPN01, !c.servesHTTPS { throw ValidationError("--acme-challenge tls-alpn-01 needs an --https listener") }
        a.challenge = type
        let kid = acmeEABKid ?? env[.acmeEABKid]
        let key = acmeEABHMACKey ?? env[.acmeEABHMACKey]
        switch (kid, key) {
        case (nil, nil): break
        case (let kid?, let key?):
            guard let mac = ACMEConfiguration.decodeMACKey(key) else {
                throw ValidationError("\(named(acmeEABHMACKey, .acmeEABHMACKey)) must be base64url")
            }
            a.externalAccountKeyID = kid
            a.externalAccountMACKey = mac
        default:
            throw ValidationError("external account binding needs both --acme-eab-kid and --acme-eab-hmac-key")
        }
        if let base = try env.int(.acmeRetryBaseMilliseconds), base > 0 { a.retryBaseMilliseconds = Int64(base) }
        return a
    }

    /// docs/apple-view.md: on by default, off with --dev (a development site is not on
    /// Apple's CDN: devices fetch it directly).
    private func cdnWatchConfiguration(dev: Bool, _ env: Environment) throws -> CDNWatchConfiguration? {
        guard try (cdnWatch ?? env.value(.cdnWatch) ?? (dev ? .off : .on)) == .on else { return nil }
        var w = CDNWatchConfiguration()
        if let base = cdnBase ?? env[.cdnBase] {
            do { w.base = try HTTPURL(base) } catch { throw ValidationError("\(named(cdnBase, .cdnBase)): \(error)") }
        }
        w.caFile = cdnCACert ?? env[.cdnCACert]
        if let file = w.caFile, access(file, R_OK) != 0 { throw ValidationError("\(named(cdnCACert, .cdnCACert)): cannot read \(file)") }
        w.intervalSeconds = try number(cdnInterval, .cdnInterval, env) ?? 21_600
        w.rate = try number(cdnRate, .cdnRate, env) ?? 2
        if let ms = try env.int(.cdnTimeoutMilliseconds), ms > 0 { w.timeoutMilliseconds = Int64(ms) }
        w.userAgent = "aasa/" + AASA.configuration.version
        return w
    }

    /// How an error names a setting: by its flag when the flag was given, else by the variable.
    private func named<Value>(_ flagValue: Value?, _ variable: ServeVariable) -> String {
        flagValue == nil ? variable.rawValue : variable.flag ?? variable.rawValue
    }

    /// The flag's number, else the variable's, else nil; below `minimum` is a usage error that
    /// names whichever of the two gave it.
    private func number(_ flagValue: Int?, _ variable: ServeVariable, _ env: Environment, minimum: Int = 1) throws -> Int? {
        let value: Int
        let source: String
        if let flagValue {
            (value, source) = (flagValue, variable.flag ?? variable.rawValue)
        } else if let n = try env.int(variable) {
            (value, source) = (n, variable.rawValue)
        } else {
            return nil
        }
        guard value >= minimum else {
            throw ValidationError(minimum == 1 ? "\(source) must be at least 1, got \(value)" : "\(source) must be \(minimum) or more, got \(value)")
        }
        return value
    }

    private func addresses(_ list: [String], _ flag: String) throws -> [SocketAddress] {
        try list.map { text in
            do { return try SocketAddress(parsing: text) } catch { throw ValidationError("\(flag): \(error)") }
        }
    }

    /// Why a token file cannot be used at start, or nil: it must be a regular file this process
    /// can open (a folder, a device or an unreadable file would revoke every token at once).
    static func tokenFileProblem(_ path: String) -> String? {
        var st = stat()
        guard stat(path, &st) == 0 else { return "cannot stat: \(String(cString: strerror(errno)))" }
        guard st.st_mode & S_IFMT == S_IFREG else {
            return st.st_mode & S_IFMT == S_IFDIR ? "is a directory, not a token file" : "is not a regular file"
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return "cannot open: \(String(cString: strerror(errno)))" }
        close(fd)
        return nil
    }
}
