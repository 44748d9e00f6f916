import AASACore
import AASAHTTP

/// What Google's Digital Asset Links API lists for a site, against the site's own
/// `assetlinks.json` (docs/monitor.md). Both are reduced to the apps that may handle the site's
/// URLs: a package name and a SHA-256 certificate fingerprint each, compared as sets.
package struct GoogleStatus: Sendable, Equatable {
    package enum State: String, Sendable, CaseIterable {
        /// Google lists the same apps as the origin's `assetlinks.json`.
        case current
        /// Google lists other apps: `differs` names them.
        case stale
        /// Google's API answered with an error, or not at all.
        case failing
        /// The origin has no `assetlinks.json` and Google lists nothing.
        case absent
        /// Not asked yet.
        case pending
    }

    package var state: State
    /// Wall-clock milliseconds.
    package var since: Int64
    package var checkedAt: Int64?
    package var differs: [String] = []
    /// What the failure was, for the log and text output.
    package var detail: String?

    package static func pending(since: Int64) -> GoogleStatus { GoogleStatus(state: .pending, since: since) }

    package func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("state"); w.value(state.rawValue)
        w.key("since"); w.value(HTTPDate.iso8601(milliseconds: since))
        w.key("checkedAt"); w.value(checkedAt.map { HTTPDate.iso8601(milliseconds: $0) })
        w.key("differs")
        w.beginArray()
        for d in differs { w.value(d) }
        w.endArray()
        w.endObject()
    }
}

/// The statements Google and the origin make, reduced to what is compared.
package enum GoogleView {
    /// The one relation compared: App Links' (developer.android.com/training/app-links/verify-android-applinks).
    package static let relation = "delegate_permission/common.handle_all_urls"
    /// Statements read from one answer, at most: a peer's count is bounded.
    static let maximumStatements = 10_000

    /// One app allowed to handle the site's URLs.
    package struct App: Hashable, Sendable, Comparable {
        package var packageName: String
        /// Upper case, colon-separated, as Google writes it: what is compared.
        package var fingerprint: String
        /// As the answer or file wrote it: what is shown, whole, so that a developer finds it
        /// in Play Console or `keytool -list` output.
        package var written: String

        package init(packageName: String, fingerprint: String) {
            self.packageName = packageName
            self.fingerprint = fingerprint.uppercased()
            written = fingerprint
        }

        package static func == (a: App, b: App) -> Bool { (a.packageName, a.fingerprint) == (b.packageName, b.fingerprint) }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(packageName)
            hasher.combine(fingerprint)
        }

        package static func < (a: App, b: App) -> Bool { (a.packageName, a.fingerprint) < (b.packageName, b.fingerprint) }

        var text: String { "\(packageName) (\(written))" }
    }

    /// The apps of an `assetlinks.json` statement list for ``relation``: each `android_app`
    /// target's package with each of its fingerprints. nil when the body is not a JSON array.
    package static func originApps(_ body: [UInt8]) -> Set<App>? {
        guard let statements = JSONParser.parse(body).value?.arrayValue else { return nil }
        var apps = Set<App>()
        for statement in statements.prefix(maximumStatements) {
            guard let relations = statement["relation"]?.arrayValue, relations.contains(where: { $0.stringValue == relation }),
                  let target = statement["target"], target["namespace"]?.stringValue == "android_app",
                  let name = target["package_name"]?.stringValue else { continue }
            for fingerprint in (target["sha256_cert_fingerprints"]?.arrayValue ?? []).prefix(maximumStatements) {
                if let f = fingerprint.stringValue { apps.insert(App(packageName: name, fingerprint: f)) }
            }
        }
        return apps
    }

    /// The apps of a `statements:list` answer (developers.google.com/digital-asset-links/reference/rest/v1/statements/list):
    /// `{"statements":[{"target":{"androidApp":{"packageName","certificate":{"sha256Fingerprint"}}}}]}`.
    /// nil when the body is not such an object.
    package static func googleApps(_ body: [UInt8]) -> Set<App>? {
        guard let root = JSONParser.parse(body).value, root.objectMembers != nil else { return nil }
        guard let statements = root["statements"] else { return [] }
        guard let list = statements.arrayValue else { return nil }
        var apps = Set<App>()
        for statement in list.prefix(maximumStatements) {
            if let r = statement["relation"]?.stringValue, r != relation { continue }
            guard let app = statement["target"]?["androidApp"], let name = app["packageName"]?.stringValue,
                  let fingerprint = app["certificate"]?["sha256Fingerprint"]?.stringValue else { continue }
            apps.insert(App(packageName: name, fingerprint: fingerprint))
        }
        return apps
    }

    /// Google's state after one check: its answer against `origin`, the origin's last usable
    /// reading of `assetlinks.json` (this check's when it was valid or absent, else the last
    /// valid one: a file that turns to HTML or errors is no statement that the apps went), or
    /// `pending` when it never served a usable one: never `current` against an empty set read
    /// from an error. `unusable` says why this check's file was not read.
    package static func judge(_ answer: GoogleAnswer, origin: AssetLinksReading?, unusable: String?)
        -> (state: GoogleStatus.State, differs: [String], detail: String?) {
        switch (answer, origin) {
        case (.failing(let why), _):
            return (.failing, [], why)
        case (.listed(let google), .statements(let apps)?):
            let (state, differs) = compare(google: google, origin: apps)
            return (state, differs, nil)
        case (.listed(let google), .absent?):
            let (state, differs) = compare(google: google, origin: nil)
            return (state, differs, nil)
        case (.listed, .unusable?), (.listed, nil):
            return (.pending, [], "the origin has served no valid assetlinks.json to compare Google's list with" + (unusable.map { " (\($0))" } ?? ""))
        }
    }

    /// The state of Google's list against the origin's (nil: the origin has no `assetlinks.json`).
    package static func compare(google: Set<App>, origin: Set<App>?) -> (state: GoogleStatus.State, differs: [String]) {
        guard let origin else {
            if google.isEmpty { return (.absent, []) }
            return (.stale, ["Google lists \(list(google)), but the origin has no assetlinks.json"])
        }
        if google == origin { return (.current, []) }
        var differs: [String] = []
        let onlyGoogle = google.subtracting(origin)
        let onlyOrigin = origin.subtracting(google)
        if !onlyOrigin.isEmpty { differs.append("Google does not list \(list(onlyOrigin)) yet") }
        if !onlyGoogle.isEmpty { differs.append("Google still lists \(list(onlyGoogle)), which the origin's assetlinks.json no longer does") }
        return (.stale, differs)
    }

    private static func list(_ apps: Set<App>) -> String {
        let sorted = apps.sorted()
        let shown = sorted.prefix(5).map(\.text).joined(separator: ", ")
        return sorted.count > 5 ? "\(shown) and \(sorted.count - 5) more" : shown
    }
}
