import AASACore
import AASATransport

/// One of `aasa check`'s eight verdicts (docs/check.md).
public enum CheckStatus: String, Sendable {
    case pass
    case warn
    case fail
    /// Could not run, because an earlier check failed (or, for `app` and `cdn`, was not asked for).
    case skip
}

public struct CheckLine: Sendable, Equatable {
    public var name: String
    public var status: CheckStatus
    public var message: String

    package init(name: String, status: CheckStatus, message: String) {
        self.name = name
        self.status = status
        self.message = message
    }

    /// `[{"name","status","message"}]`: the checks as `aasa check --format json` and the
    /// monitor's `/status` write them (docs/check.md, docs/monitor.md).
    package static func write(_ lines: [CheckLine], to w: inout JSONWriter) {
        w.beginArray()
        for c in lines {
            w.beginObject()
            w.key("name"); w.value(c.name)
            w.key("status"); w.value(c.status.rawValue)
            w.key("message"); w.value(c.message)
            w.endObject()
        }
        w.endArray()
    }
}

/// What `cdn` found, for the JSON report.
public struct CDNSummary: Sendable, Equatable {
    public var status: Int?
    public var failureReason: String?
    public var sameAsOrigin: Bool?
}

/// Everything `aasa check` found for one host.
public struct HostReport: Sendable {
    /// The eight checks, in the order they run.
    public static let checkNames = ["resolve", "tls", "status", "content-type", "size", "validate", "app", "cdn"]

    public var host: String
    /// The URL the file was read from (the legacy root path when only that answered).
    public var url: String
    public private(set) var checks: [CheckLine]
    /// The validator's findings on the body, positioned in it: the first
    /// ``Diagnostic/listLimit``.
    public var diagnostics: [Diagnostic] = []
    /// Findings past the listed ones, counted only.
    public var unlistedDiagnostics = 0
    public var cdn = CDNSummary()
    /// The origin's file, when one was read (for `aasa entitlements --live`).
    public var file: AASAFile?
    /// Why no HTTP answer came from the origin, when none did: `dns`, `connect`, `tls` (a failed
    /// handshake; a certificate that does not verify is ``certificateFailure``) or `timeout`.
    public var unreachableCause: String?
    /// OpenSSL's verdict when the origin's certificate did not verify ("certificate has
    /// expired", "unable to get local issuer certificate", …).
    public var certificateFailure: String?
    /// The HTTP status of `GET /.well-known/apple-app-site-association`, when one came.
    package var originStatus: Int?
    /// When the origin's one time-out ends (monotonic milliseconds): what asks the origin again
    /// (the bot-blocked probe) gets only what is left of it.
    package var originDeadline: Int64?
    /// The origin's `ETag` for the file read, when it sent one.
    package var etag: String?
    /// Where the origin was reached (resolved, or `--connect`).
    package var addresses: [SocketAddress] = []

    /// The certificate failed only because no trusted CA issued it: valid otherwise (in date,
    /// for the right name), which is all developer mode asks (docs/aasa-reference.md §4.3).
    public var certificateIsOnlyUntrusted: Bool {
        guard let f = certificateFailure else { return false }
        return f.contains("issuer") || f.contains("self-signed") || f.contains("self signed")
    }

    package init(host: String, url: String) {
        self.host = host
        self.url = url
        checks = HostReport.checkNames.map { CheckLine(name: $0, status: .skip, message: "not run: an earlier check failed") }
    }

    /// No check failed (warnings allowed).
    public var ok: Bool { !checks.contains { $0.status == .fail } }

    public func status(of name: String) -> CheckStatus? { checks.first { $0.name == name }?.status }

    /// A line of its own after `name` (the bot-blocked probe after `status`).
    mutating package func insert(_ line: CheckLine, after name: String) {
        guard let i = checks.firstIndex(where: { $0.name == name }) else { preconditionFailure("no check \(name)") }
        checks.insert(line, at: i + 1)
    }

    mutating package func set(_ name: String, _ status: CheckStatus, _ message: String) {
        guard let i = checks.firstIndex(where: { $0.name == name }) else { preconditionFailure("no check \(name)") }
        checks[i].status = status
        checks[i].message = message
    }

    /// After a `tls` failure: Apple's CDN fetches nothing from a host whose certificate does
    /// not verify, so `status` and the origin checks after it are `skip`; each keeps, as its
    /// message, what the fetch without verification found.
    mutating func skipOriginUnverified() {
        guard let from = checks.firstIndex(where: { $0.name == "status" }) else { return }
        for i in from..<checks.count where checks[i].name != "cdn" {
            let found = checks[i].status == .skip ? "" : "; without verification: \(checks[i].status.rawValue): \(checks[i].message)"
            checks[i].status = .skip
            checks[i].message = "not run: tls failed (Apple's CDN gets nothing from a host whose certificate does not verify)\(found)"
        }
    }

    /// Marks every origin check after `name` (up to `app`; `cdn` stands alone) as not run
    /// because `name` failed.
    mutating package func skipOrigin(after name: String) {
        guard let from = checks.firstIndex(where: { $0.name == name }) else { return }
        for i in (from + 1)..<checks.count where checks[i].name != "cdn" {
            checks[i].status = .skip
            checks[i].message = "not run: \(name) failed"
        }
    }
}
