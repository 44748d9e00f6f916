extension AASADocument {
    /// What differs between this document (the origin's, newer) and `older` (the CDN's copy),
    /// in the terms a person fixes things in: services present, apps added or removed per
    /// service, and for an app in both, how its `applinks` rules changed. Empty when the two
    /// mean the same to a device (the raw JSON may still differ in keys no device reads).
    public func differences(from older: AASADocument) -> [String] {
        var out: [String] = []
        // applinks
        switch (appLinks, older.appLinks) {
        case (nil, nil): break
        case (.some, nil): out.append("applinks is new (the CDN's copy has no applinks)")
        case (nil, .some): out.append("applinks was removed (the CDN's copy still has it)")
        case (.some(let new), .some(let old)):
            let newApps = appLinksAppIDs, oldApps = older.appLinksAppIDs
            let added = newApps.filter { !oldApps.contains($0) }
            let removed = oldApps.filter { !newApps.contains($0) }
            if !added.isEmpty { out.append("applinks: \(list(added)) added") }
            if !removed.isEmpty { out.append("applinks: \(list(removed)) removed") }
            for app in newApps where oldApps.contains(app) {
                let a = rules(for: app), b = older.rules(for: app)
                guard a != b else { continue }
                let gained = a.filter { !b.contains($0) }, lost = b.filter { !a.contains($0) }
                var parts: [String] = []
                if !gained.isEmpty { parts.append("now \(gained.joined(separator: ", "))") }
                if !lost.isEmpty { parts.append("no longer \(lost.joined(separator: ", "))") }
                if parts.isEmpty { parts.append("the same rules in another order (the first match decides)") }
                out.append("applinks: the rules for \(app) changed: \(parts.joined(separator: "; "))")
            }
            if new.substitutionVariables != old.substitutionVariables {
                out.append("applinks.substitutionVariables changed")
            }
        }
        // The services that list apps.
        for service in AppListService.allCases {
            switch (appLists[service], older.appLists[service]) {
            case (nil, nil): break
            case (.some, nil): out.append("\(service.rawValue) is new (the CDN's copy has no \(service.rawValue))")
            case (nil, .some): out.append("\(service.rawValue) was removed (the CDN's copy still has it)")
            case (.some(let new), .some(let old)):
                let added = new.filter { !old.contains($0) }, removed = old.filter { !new.contains($0) }
                if !added.isEmpty { out.append("\(service.rawValue): \(list(added)) added") }
                if !removed.isEmpty { out.append("\(service.rawValue): \(list(removed)) removed") }
            }
        }
        return out
    }

    /// An app's `applinks` rules in order, each as a person reads it: `opens "/buy/*"`,
    /// `blocks "/help" ? "x=*"`, `opens path "/legacy/*"`.
    func rules(for app: String) -> [String] {
        var out: [String] = []
        for detail in appLinks?.details ?? [] where detail.appIDs.contains(app) {
            switch detail.rules {
            case .components(let components):
                for c in components { out.append(AASADocument.describe(c.fields)) }
            case .paths(let paths):
                for p in paths { out.append("\(p.isExclusion ? "blocks" : "opens") path \(JSONWriter.message(p.text))") }
            case .none:
                break
            }
        }
        return out
    }

    static func describe(_ f: ComponentFields) -> String {
        var text = (f.exclude ?? false) ? "blocks" : "opens"
        text += " " + JSONWriter.message(f.path ?? "*")
        switch f.query {
        case .string(let q): text += " ? " + JSONWriter.message(q)
        case .items(let items): text += " ? {" + items.map { "\($0.name)=\(JSONWriter.message($0.pattern))" }.joined(separator: ", ") + "}"
        case nil: break
        }
        if let fragment = f.fragment { text += " # " + JSONWriter.message(fragment) }
        if f.caseSensitive == false { text += " (case-insensitive)" }
        if f.percentEncoded == false { text += " (percent-decoded)" }
        return text
    }

    private func list(_ apps: [String]) -> String { apps.joined(separator: ", ") }
}
