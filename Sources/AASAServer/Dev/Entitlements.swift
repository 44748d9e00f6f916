import AASACore

/// The Associated Domains entitlement lines a developer pastes into Xcode for a site in
/// developer mode (docs/aasa-reference.md §4): one per service the file declares, `?mode=developer` on each,
/// and no wildcard for `appclips`, which does not support one.
enum Entitlements {
    static func lines(for site: Site) -> [String] {
        let host = site.name.description
        let document = site.document
        var services: [String] = []
        // A site with no AASA file (only assetlinks.json, say) backs no Apple entitlement.
        guard site.aasa != nil else { return [] }
        if document?.appLinks != nil || document == nil { services.append("applinks") }
        if document?.appLists[.webCredentials] != nil { services.append("webcredentials") }
        if document?.appLists[.appClips] != nil, !site.name.isWildcard { services.append("appclips") }
        if document?.appLists[.activityContinuation] != nil { services.append("activitycontinuation") }
        return services.map { "\($0):\(host)?mode=developer" }
    }
}
