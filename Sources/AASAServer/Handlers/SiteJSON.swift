import AASACore

/// The fields every JSON view of the sites shares (`/status`, docs/serving.md "Admin listener";
/// the dashboard's API, docs/development-mode.md), written once here; each view adds its own.
extension SiteSummary {
    /// `sites`, `serving`, `rejected`, `stale`, inside the caller's object.
    func writeCounts(to w: inout JSONWriter) {
        w.key("sites"); w.value(sites)
        w.key("serving"); w.value(serving)
        w.key("rejected"); w.value(rejected)
        w.key("stale"); w.value(stale)
    }
}

extension Site {
    /// `host`, `state`, `version` (of the served AASA file), inside the caller's object.
    func writeIdentity(to w: inout JSONWriter) {
        w.key("host"); w.value(name.description)
        w.key("state"); w.value(state.rawValue)
        w.key("version"); w.value(served?.version)
    }
}

extension SiteFile {
    /// `name`, `state`, `version`, inside the caller's object.
    func writeIdentity(to w: inout JSONWriter) {
        w.key("name"); w.value(kind.fileName)
        w.key("state"); w.value(state.rawValue)
        w.key("version"); w.value(served?.version)
    }
}
