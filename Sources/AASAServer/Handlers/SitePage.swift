import AASACore

/// One page of the site list, as `/status` and the dashboard's `/api/sites` ask for it (docs/serving.md,
/// "Admin listener"): at most ``maximumLimit`` sites in byte order of host, after a host, narrowed to a
/// state or to hosts containing a text. A page costs the sites it walks past, never a copy or a
/// sort of all of them.
struct SitePage: Equatable {
    static let maximumLimit = 1000

    /// The page starts after this host.
    var after: String?
    var limit = SitePage.maximumLimit
    var state: Site.State?
    /// Hosts containing this text (lower-cased), for the dashboard's search.
    var search: String?

    /// Reads `after`, `limit`, `state` (and `search` when `allowsSearch`) from a request target;
    /// the message of a 400 for a value out of range.
    static func parse(target: String, allowsSearch: Bool = false) -> Result<SitePage, PageError> {
        var page = SitePage()
        page.after = QueryString.value("after", in: target).flatMap { $0.isEmpty ? nil : $0 }
        if let limit = QueryString.value("limit", in: target) {
            guard let n = Int(limit), (1...maximumLimit).contains(n) else {
                return .failure(PageError(message: "limit must be a whole number from 1 to \(maximumLimit)"))
            }
            page.limit = n
        }
        if let state = QueryString.value("state", in: target) {
            guard let s = Site.State(rawValue: state) else {
                return .failure(PageError(message: "state must be serving, rejected or stale"))
            }
            page.state = s
        }
        if allowsSearch, let search = QueryString.value("search", in: target), !search.isEmpty {
            page.search = search.lowercased()
        }
        return .success(page)
    }

    struct PageError: Error, Equatable {
        var message: String
    }

    /// The page's sites, and the host to continue after (nil on the last page).
    func select(from snapshot: SiteSnapshot) -> (sites: [Site], next: String?) {
        let sites = snapshot.sites
        var i = 0
        if let after {
            i = SiteSnapshot.position(of: after, in: sites)
            if i < sites.count, sites[i].name.description == after { i += 1 }
        }
        var out: [Site] = []
        while i < sites.count {
            let site = sites[i]
            i += 1
            guard matches(site) else { continue }
            if out.count == limit {
                // One more matches: there is a next page.
                return (out, out.last?.name.description)
            }
            out.append(site)
        }
        return (out, nil)
    }

    func matches(_ site: Site) -> Bool {
        if let state, site.state != state { return false }
        if let search {
            if site.name.description.contains(search) || site.state.rawValue == search { return true }
            // Apps too, as the dashboard's filter always allowed.
            return site.document?.appLinksAppIDs.contains { $0.lowercased().contains(search) } == true
        }
        return true
    }
}
