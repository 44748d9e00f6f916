/// The outcome for one entitlement string (docs/check.md, `aasa entitlements`).
public enum EntitlementResult: String, Sendable {
    case ok
    case invalidEntitlement = "invalid-entitlement"
    /// No file backs it: no site in the config directory, or the live fetch failed.
    case noFile = "no-file"
    /// A file, but one with errors: it is not served (`serve`) or not read (a device).
    case invalidFile = "invalid-file"
    /// The file has no section for the entitlement's service.
    case noService = "no-service"
    case appNotListed = "app-not-listed"
    /// With `--live`: no HTTP answer from the host (DNS, connect, TLS, time-out), so whether a
    /// file backs the entitlement is unknown, not known to be missing.
    case unreachable
}

public struct EntitlementVerdict: Sendable, Equatable {
    public var result: EntitlementResult
    public var message: String

    public init(_ result: EntitlementResult, _ message: String) {
        self.result = result
        self.message = message
    }

    /// Whether `file` (read from `source`, a path or URL) backs `domain` for `app`.
    public static func judge(_ domain: AssociatedDomain, app: String, file: AASAFile, source: String) -> EntitlementVerdict {
        if let error = file.diagnostics.first(where: { $0.severity == .error }) {
            let more = file.errorCount > 1 ? " (and \(file.errorCount - 1) more)" : ""
            return EntitlementVerdict(.invalidFile, "\(source):\(error.line):\(error.column): \(error.message) [\(error.code.rawValue)]\(more); fix the file first: aasa validate shows every finding")
        }
        guard let document = file.document else {
            return EntitlementVerdict(.invalidFile, "\(source) is not a JSON object")
        }
        let service = domain.service.rawValue
        let apps: [String]
        if let list = domain.service.appList {
            guard let listed = document.appLists[list] else {
                return EntitlementVerdict(.noService, "\(source) has no \(service) section: add \"\(service)\": {\"apps\": [\"\(app)\"]}")
            }
            apps = listed
        } else {
            guard document.appLinks != nil else {
                return EntitlementVerdict(.noService, "\(source) has no applinks section: add \"applinks\": {\"details\": [{\"appIDs\": [\"\(app)\"], \"components\": [...]}]}")
            }
            apps = document.appLinksAppIDs
        }
        guard apps.contains(app) else {
            let listed = apps.isEmpty ? "it lists no app" : "it lists \(apps.joined(separator: ", "))"
            let place = domain.service == .appLinks ? "a details entry's appIDs" : "\(service).apps"
            let similar = apps.first { $0.lowercased() == app.lowercased() }.map { "; \($0) differs only in case" } ?? ""
            return EntitlementVerdict(.appNotListed, "\(app) is not in \(source)'s \(service) (\(listed)\(similar)): add it to \(place)")
        }
        if domain.service == .appLinks, let index = document.appLinks?.details.firstIndex(where: { $0.appIDs.contains(app) }) {
            return EntitlementVerdict(.ok, "\(source) lists \(app) in applinks.details[\(index)]")
        }
        return EntitlementVerdict(.ok, "\(source) lists \(app) in \(service).apps")
    }
}
