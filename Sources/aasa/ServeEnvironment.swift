import AASAClient
import AASAServer
import AASATransport
import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif

/// Every environment variable `aasa serve` reads. The command reads the environment only through
/// ``Environment``, which takes one of these, and `serve --help` lists them from here: what the
/// help names and what the code reads are the same list.
enum ServeVariable: String, CaseIterable {
    case config = "AASA_CONFIG"
    case certs = "AASA_CERTS"
    case https = "AASA_HTTPS"
    case http = "AASA_HTTP"
    case admin = "AASA_ADMIN"
    case defaultCert = "AASA_DEFAULT_CERT"
    case dev = "AASA_DEV"
    case workers = "AASA_WORKERS"
    case proxyProtocol = "AASA_PROXY_PROTOCOL"
    case maxConnections = "AASA_MAX_CONNECTIONS"
    case maxConnectionsPerClient = "AASA_MAX_CONNECTIONS_PER_CLIENT"
    case http2 = "AASA_HTTP2"
    case logFormat = "AASA_LOG_FORMAT"
    case cacheMaxAge = "AASA_CACHE_MAX_AGE"
    case metricsSites = "AASA_METRICS_SITES"
    case watch = "AASA_WATCH"
    case pollInterval = "AASA_POLL_INTERVAL"
    case shutdownGrace = "AASA_SHUTDOWN_GRACE"
    case drainDelay = "AASA_DRAIN_DELAY"
    case acme = "AASA_ACME"
    case acmeEmail = "AASA_ACME_EMAIL"
    case acmeDirectory = "AASA_ACME_DIRECTORY"
    case acmeCARoot = "AASA_ACME_CA_ROOT"
    case acmeChallenge = "AASA_ACME_CHALLENGE"
    case acmeOrderRate = "AASA_ACME_ORDER_RATE"
    case acmeEABKid = "AASA_ACME_EAB_KID"
    case acmeEABHMACKey = "AASA_ACME_EAB_HMAC_KEY"
    case cdnWatch = "AASA_CDN_WATCH"
    case cdnBase = "AASA_CDN_BASE"
    case cdnCACert = "AASA_CDN_CACERT"
    case cdnInterval = "AASA_CDN_INTERVAL"
    case cdnRate = "AASA_CDN_RATE"
    case adminTokenFile = "AASA_ADMIN_TOKEN_FILE"
    case adminTLS = "AASA_ADMIN_TLS"
    case store = "AASA_STORE"
    case storeSecretFile = "AASA_STORE_SECRET_FILE"
    /// The tests' knobs: the first retry delay after a failed ACME order (default 60 000 ms), the
    /// time each request to Apple's CDN may take (default 10 000 ms), and a wait before the
    /// watches are added after ready (default 0). No flag, not in the help.
    case acmeRetryBaseMilliseconds = "AASA_ACME_RETRY_BASE_MS"
    case cdnTimeoutMilliseconds = "AASA_CDN_TIMEOUT_MS"
    case watchDelayMilliseconds = "AASA_TEST_WATCH_DELAY_MS"

    /// The variables a user may set: all but the tests' knobs.
    static var documented: [ServeVariable] { allCases.filter { $0.flag != nil } }

    /// The flag the variable stands for, its name in lower case with `-` for `_`
    /// (AASA_MAX_CONNECTIONS is --max-connections); nil for the tests' knobs.
    var flag: String? {
        switch self {
        case .acmeRetryBaseMilliseconds, .cdnTimeoutMilliseconds, .watchDelayMilliseconds: return nil
        default: return "--" + String(rawValue.dropFirst("AASA_".count).lowercased().map { $0 == "_" ? "-" : $0 })
        }
    }

    /// The paragraph of `serve --help` that names them.
    static var help: String {
        let names = documented.map(\.rawValue)
        return "Every option also reads an environment variable, AASA_ followed by its name in capitals " +
            "with _ for - (--max-connections reads AASA_MAX_CONNECTIONS): " + names.joined(separator: ", ") +
            ". AASA_HTTPS and AASA_HTTP take comma-separated lists; AASA_DEV, AASA_PROXY_PROTOCOL and " +
            "AASA_ACME take on or off (also 1/0, true/false, yes/no). A flag on the command line wins over " +
            "the variable, and a variable that does not parse is a usage error that names it."
    }
}

/// The AASA_* variables, read by name from ``ServeVariable``. An empty variable counts as unset;
/// a value that does not parse throws a usage error that names the variable.
struct Environment {
    subscript(variable: ServeVariable) -> String? {
        guard let v = getenv(variable.rawValue) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }

    func list(_ variable: ServeVariable) -> [String] {
        self[variable]?.split(separator: ",").map { String($0).trimmingCharacters() }.filter { !$0.isEmpty } ?? []
    }

    func int(_ variable: ServeVariable) throws -> Int? {
        guard let text = self[variable] else { return nil }
        guard let n = Int(text.trimmingCharacters()) else {
            throw ValidationError("\(variable.rawValue) must be a whole number, got \(text)")
        }
        return n
    }

    /// A variable that stands for a flag without a value (AASA_DEV for --dev): on or off.
    func flag(_ variable: ServeVariable) throws -> Bool {
        try value(variable, as: Switch.self) == .on
    }

    /// A variable whose flag takes one of a fixed set of values.
    func value<Value: ExpressibleByArgument>(_ variable: ServeVariable, as type: Value.Type = Value.self) throws -> Value? {
        guard let text = self[variable] else { return nil }
        guard let value = Value(argument: text) else {
            throw ValidationError("\(variable.rawValue) must be \(Value.allValueStrings.spelledAsChoice), got \(text)")
        }
        return value
    }
}

/// An option that is on or off (--http2, --cdn-watch, and the variables of the flags without a
/// value). The words of the variables (1/0, true/false, yes/no) are read too; completion offers
/// on and off.
enum Switch: String, CaseIterable, ExpressibleByArgument {
    case on
    case off

    init?(argument: String) {
        switch argument.lowercased() {
        case "on", "1", "true", "yes": self = .on
        case "off", "0", "false", "no": self = .off
        default: return nil
        }
    }
}

/// The values of the server's other options with a fixed set (--log-format, --watch,
/// --acme-challenge), so that they are completed and checked by the parser.
extension LogFormat: ExpressibleByArgument {}
extension ChallengeType: ExpressibleByArgument {}
extension WatchMode: ExpressibleByArgument {
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}

extension [String] {
    /// `a`, `a or b`, `a, b or c`.
    var spelledAsChoice: String {
        guard count > 1 else { return first ?? "" }
        return dropLast().joined(separator: ", ") + " or " + last!
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
