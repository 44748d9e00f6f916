import AASACore
import AASAHTTP
import AASATransport
import AASASessions
import AASAClient

/// The development dashboard (docs/development-mode.md): on the HTTP listener in `--dev`, for any host that is
/// not a configured site. A self-contained page (no external scripts, fonts or CDNs) over a
/// small JSON API; every value reaches the page through `textContent`, never as HTML.
enum Dashboard {
    /// Whether a request on the HTTP listener is the dashboard's rather than a site's.
    static func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool {
        guard let host = request.host else { return true }
        return snapshot.index.lookup(host) == nil
    }

    static func respond(to request: HTTPRequest, snapshot: SiteSnapshot, dev: DevelopmentMode, appleView: AppleView? = nil) -> Answer {
        guard request.method == .get || request.method == .head else {
            return .message(.methodNotAllowed, "only GET and HEAD\n", request: request, site: "dashboard", extraFields: [("allow", "GET, HEAD")])
        }
        let noStore = [(name: "cache-control", value: "no-store")]
        switch request.path {
        case "/":
            return .message(.ok, page, request: request, site: "dashboard", contentType: "text/html; charset=utf-8",
                             extraFields: noStore + [("content-security-policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")])
        case "/api/sites":
            // A page at a time (`after`, `limit`, `state`, `search`): a config with 100 000 sites
            // is never sent whole.
            switch SitePage.parse(target: request.target, allowsSearch: true) {
            case .failure(let error):
                return .message(.badRequest, ErrorDocument.json(error.message), request: request, site: "dashboard",
                                contentType: "application/json", extraFields: noStore)
            case .success(let page):
                return .message(.ok, sitesJSON(snapshot, page: page, apple: appleView?.listing()), request: request, site: "dashboard", contentType: "application/json", extraFields: noStore)
            }
        case "/api/fetches":
            return .message(.ok, fetchesJSON(dev.fetches.recent()), request: request, site: "dashboard", contentType: "application/json", extraFields: noStore)
        case "/entitlements.txt":
            return .message(.ok, entitlementsText(snapshot), request: request, site: "dashboard", extraFields: noStore)
        case "/api/match":
            let url = QueryString.value("url", in: request.target) ?? ""
            return .message(.ok, matchJSON(url, snapshot: snapshot), request: request, site: "dashboard", contentType: "application/json", extraFields: noStore)
        case "/ca.pem":
            guard let der = dev.certificates.caDER() else { return notFound(request) }
            let pem = "-----BEGIN CERTIFICATE-----\n" + Base64.encode(der, lineLength: 64) + "\n-----END CERTIFICATE-----\n"
            return .message(.ok, pem, request: request, site: "dashboard", contentType: "application/x-pem-file",
                             extraFields: [("content-disposition", "attachment; filename=\"aasa-development-ca.pem\"")])
        case "/ca.mobileconfig":
            guard let der = dev.certificates.caDER() else { return notFound(request) }
            return .message(.ok, MobileConfig.profile(caDER: der), request: request, site: "dashboard", contentType: "application/x-apple-aspen-config",
                             extraFields: [("content-disposition", "attachment; filename=\"aasa-development-ca.mobileconfig\"")])
        default:
            return notFound(request)
        }
    }

    private static func notFound(_ request: HTTPRequest) -> Answer {
        .message(.notFound, "not found\n", request: request, site: "dashboard")
    }

    // MARK: - API

    static func sitesJSON(_ snapshot: SiteSnapshot, page: SitePage = SitePage(), apple: AppleView.Listing? = nil) -> String {
        let (sites, next) = page.select(from: snapshot)
        var w = JSONWriter()
        w.beginObject()
        w.key("summary")
        w.beginObject()
        snapshot.summary.writeCounts(to: &w)
        w.endObject()
        w.key("next"); w.value(next)
        w.key("sites")
        w.beginArray()
        for site in sites {
            w.beginObject()
            site.writeIdentity(to: &w)
            w.key("path"); w.value(site.path)
            w.key("entitlements")
            w.beginArray()
            for line in Entitlements.lines(for: site) { w.value(line) }
            w.endArray()
            let document = site.document
            w.key("apps")
            w.beginArray()
            for app in document?.appLinksAppIDs ?? [] { w.value(app) }
            w.endArray()
            // Every service's apps, not only universal links': a file may exist for
            // webcredentials or App Clips alone.
            w.key("services")
            w.beginObject()
            w.key("applinks")
            w.beginArray()
            for app in document?.appLinksAppIDs ?? [] { w.value(app) }
            w.endArray()
            for service in AppListService.allCases {
                guard let apps = document?.appLists[service] else { continue }
                w.key(service.rawValue)
                w.beginArray()
                for app in apps { w.value(app) }
                w.endArray()
            }
            w.endObject()
            w.key("diagnostics")
            w.write(site.aasa?.newest.diagnostics ?? [])
            // Every association file of the site (docs/serving.md, "Config directory"), each with its own verdict.
            w.key("files")
            w.beginArray()
            for file in site.files {
                w.beginObject()
                file.writeIdentity(to: &w)
                w.key("path"); w.value(file.path)
                w.key("refusal"); w.value(file.refusal?.message)
                w.key("diagnostics")
                w.write(file.newest.diagnostics)
                w.endObject()
            }
            w.endArray()
            // What Apple sees (docs/apple-view.md): the fetches, the CDN's copy, and their timeline.
            if let apple {
                AppleView.write(site, apple, to: &w)
                w.key("timeline")
                let key = site.name.description
                SiteStory.write(SiteStory.events(site, fetches: apple.fetches[key], cdn: apple.cdn?[key]), to: &w)
            }
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.output
    }

    /// Every site's entitlement lines, for pasting into Xcode when there are too many sites for
    /// the start-up guidance to list.
    static func entitlementsText(_ snapshot: SiteSnapshot) -> String {
        var out = ""
        for site in snapshot.sites.sorted(by: { $0.name < $1.name }) {
            for line in Entitlements.lines(for: site) { out += line + "\n" }
        }
        return out
    }

    static func fetchesJSON(_ fetches: [FetchLog.Fetch]) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("fetches")
        w.beginArray()
        for f in fetches {
            w.beginObject()
            w.key("sequence"); w.value(f.sequence)
            w.key("time"); w.value(HTTPDate.iso8601(milliseconds: f.timeMilliseconds))
            w.key("client"); w.value(f.client)
            w.key("host"); w.value(f.host)
            w.key("path"); w.value(f.path)
            w.key("status"); w.value(f.status)
            w.key("userAgent"); w.value(f.userAgent)
            w.key("fetcher"); w.value(AccessLog.fetcher(userAgent: f.userAgent))
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.output
    }

    /// Runs the matcher on the file the URL's host is served with, as `aasa match` does.
    static func matchJSON(_ text: String, snapshot: SiteSnapshot) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("url"); w.value(text)
        do {
            let url = try URLParts(text)
            w.key("host"); w.value(url.host)
            guard let (name, site) = snapshot.index.lookup(url.host) else {
                w.key("error"); w.value("no site serves \(url.host)")
                w.endObject()
                return w.output
            }
            w.key("site"); w.value(name.description)
            guard let document = site.served?.aasaFile?.document else {
                w.key("error"); w.value("\(name) has no file that passed validation")
                w.endObject()
                return w.output
            }
            w.key("results")
            w.write(document.decide(url), in: document)
        } catch {
            w.key("error"); w.value(error.description)
        }
        w.endObject()
        return w.output
    }

    // MARK: - The page

    static let page = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>aasa development server</title>
    <style>
    :root { font-family: -apple-system, system-ui, sans-serif; color: #1d1d1f; background: #f5f5f7; }
    body { max-width: 1400px; margin: 1rem auto; padding: 0 1rem; }
    h1 { font-size: 1.5rem; margin: 0 0 .2rem; }
    h2 { font-size: 1.1rem; margin: 1rem 0 .4rem; }
    h3 { font-size: 1rem; margin: 0 0 .3rem; }
    section.card { background: #fff; border-radius: 10px; padding: .8rem 1rem; margin: .6rem 0; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
    code, pre, .mono { font-family: ui-monospace, Menlo, monospace; font-size: .85rem; }
    pre { margin: .2rem 0; white-space: pre-wrap; }
    p { margin: .3rem 0; }
    .state { font-weight: 600; padding: .1rem .5rem; border-radius: 6px; font-size: .85rem; }
    .serving { background: #d8f5dd; color: #116326; } .stale { background: #fff1cc; color: #7a5200; } .rejected { background: #fde0e0; color: #9b1c1c; }
    .error { color: #9b1c1c; } .warning { color: #7a5200; }
    table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .25rem .4rem; border-bottom: 1px solid #eee; font-size: .85rem; vertical-align: top; }
    input[type=url] { width: 70%; padding: .4rem; font-size: 1rem; } button { padding: .4rem .9rem; font-size: 1rem; }
    .match { color: #116326; font-weight: 600; } .exclude { color: #9b1c1c; font-weight: 600; } .no_match { color: #555; }
    .muted { color: #666; }
    .current { background: #d8f5dd; color: #116326; } .failing, .unreachable { background: #fde0e0; color: #9b1c1c; } .pending { background: #eee; color: #555; }
    ol.timeline { list-style: none; display: flex; flex-wrap: wrap; gap: .2rem .4rem; padding: 0; margin: .4rem 0; font-size: .85rem; }
    ol.timeline li + li::before { content: "→ "; color: #888; }
    ol.timeline time { font-weight: 600; }
    #summary { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; align-items: center; gap: .6rem 1rem;
               background: #fff; border-radius: 10px; padding: .6rem 1rem; box-shadow: 0 1px 3px rgba(0,0,0,.12); margin: .6rem 0; }
    #summary .count { font-weight: 600; }
    #filter { flex: 1; min-width: 12rem; padding: .35rem .5rem; font-size: 1rem; }
    .layout { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 30rem); gap: 0 1.2rem; align-items: start; }
    .layout aside { position: sticky; top: 4rem; }
    #fetch-list { max-height: 70vh; overflow-y: auto; }
    #fetch-list table { table-layout: fixed; } #fetch-list td { overflow-wrap: anywhere; }
    #fetch-list th:nth-child(1) { width: 4.6rem; } #fetch-list th:nth-child(2) { width: 3.2rem; } #fetch-list th:nth-child(3) { width: 11rem; }
    @media (max-width: 900px) {
      .layout { grid-template-columns: minmax(0, 1fr); }
      .layout aside { position: static; order: -1; }
      #fetch-list { max-height: 14rem; }
    }
    </style>
    </head>
    <body>
    <h1>aasa development server</h1>
    <p class="muted">Sites served from this machine for devices with <code>?mode=developer</code> entitlements.
    CA: <a href="/ca.mobileconfig">ca.mobileconfig</a> (iOS profile) · <a href="/ca.pem">ca.pem</a> ·
    every entitlement line: <a href="/entitlements.txt">entitlements.txt</a></p>

    <div id="summary">
    <span><span class="count" id="count-total">0</span> sites</span>
    <span class="state serving"><span class="count" id="count-serving">0</span> serving</span>
    <span class="state stale"><span class="count" id="count-stale">0</span> stale</span>
    <span class="state rejected"><span class="count" id="count-rejected">0</span> rejected</span>
    <input id="filter" type="search" placeholder="Filter sites by host, app or state" aria-label="Filter sites">
    <span id="shown" class="muted"></span>
    </div>

    <div class="layout">
    <main>
    <h2>Test a URL</h2>
    <section class="card">
    <form id="tester"><input id="url" type="url" placeholder="https://example.com/path?query#fragment" required> <button>Test</button></form>
    <div id="result"></div>
    </section>

    <h2>Sites <span class="muted">(rejected first, then by name)</span></h2>
    <div id="sites"><p class="muted">Loading…</p></div>
    </main>

    <aside>
    <h2>Recent fetches</h2>
    <section class="card" id="fetch-list">
    <table><thead><tr><th>Time</th><th>Status</th><th>Host</th><th>User agent · client</th></tr></thead><tbody id="fetches"></tbody></table>
    <p id="no-fetches" class="muted">No fetch yet. A device fetches on app install; Apple's CDN identifies as AASA-Bot.</p>
    </section>
    </aside>
    </div>

    <script>
    "use strict";
    function el(tag, attrs, ...children) {
      const e = document.createElement(tag);
      for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
      for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
      return e;
    }
    // Today's events by their time; older ones with their date.
    function clock(iso) {
      const d = new Date(iso);
      const time = d.toLocaleTimeString([], { hour12: false, hour: "2-digit", minute: "2-digit" });
      return d.toDateString() === new Date().toDateString() ? time : d.toLocaleDateString() + " " + time;
    }
    async function getJSON(path) { const r = await fetch(path, { cache: "no-store" }); return r.json(); }

    const serviceNames = { applinks: "Universal links", webcredentials: "Web credentials", appclips: "App Clips",
                           activitycontinuation: "Handoff", authsrv: "Authentication services" };
    // Problems first: a rejected site is not served at all, a stale one serves an older file.
    const stateOrder = { rejected: 0, stale: 1, serving: 2 };

    // Sites come a page at a time: problems first (rejected, then stale), then the rest, until
    // `wanted` cards are shown; "Show more" asks for more. While every site is on the page the
    // filter hides cards here; otherwise it asks the server (`search`).
    const pageSize = 200;
    let wanted = pageSize;
    // Until the first load says otherwise, every site is assumed to fit on the page.
    let complete = true;
    let summary = { sites: 0, serving: 0, stale: 0, rejected: 0 };

    function filterWords() { return document.getElementById("filter").value.trim().toLowerCase().split(/\s+/).filter(Boolean); }

    function applyFilter() {
      const words = filterWords();
      const cards = document.querySelectorAll("#sites .site");
      let shown = 0;
      for (const card of cards) {
        const text = card.getAttribute("data-search");
        card.hidden = !words.every((w) => text.includes(w));
        if (!card.hidden) shown++;
      }
      document.getElementById("shown").textContent = words.length ? "showing " + shown + " of " + summary.sites : "";
    }

    async function fetchSites(query, limit) {
      const out = [];
      let after = null;
      while (out.length < limit) {
        const params = new URLSearchParams(query);
        params.set("limit", String(Math.min(1000, limit - out.length)));
        if (after) params.set("after", after);
        const data = await getJSON("/api/sites?" + params.toString());
        summary = data.summary;
        out.push(...data.sites);
        if (!data.next) return { sites: out, more: false };
        after = data.next;
      }
      return { sites: out, more: true };
    }

    async function loadSites() {
      let sites = [];
      let more = false;
      const words = filterWords();
      if (!complete && words.length) {
        const found = await fetchSites({ search: words[0] }, wanted);
        sites = found.sites; more = found.more;
      } else {
        for (const state of ["rejected", "stale", "serving"]) {
          if (sites.length >= wanted) { more = true; break; }
          const found = await fetchSites({ state }, wanted - sites.length);
          sites.push(...found.sites);
          if (found.more) more = true;
        }
        complete = !more;
        // A filter from the address, on a config too large to show whole: ask the server.
        if (!complete && words.length) return loadSites();
      }
      sites.sort((a, b) => (stateOrder[a.state] - stateOrder[b.state]) || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
      for (const state of ["serving", "stale", "rejected"]) {
        document.getElementById("count-" + state).textContent = summary[state];
      }
      document.getElementById("count-total").textContent = summary.sites;
      const root = document.getElementById("sites");
      root.replaceChildren();
      if (sites.length === 0) root.append(el("p", { class: "muted" }, summary.sites ? "No site matches." : "No site folders in the config directory."));
      for (const s of sites) {
        const apps = Object.values(s.services).flat();
        const card = el("section", { class: "card site", "data-host": s.host, "data-state": s.state,
                                     "data-search": [s.host, s.state, ...apps].join(" ").toLowerCase() });
        card.append(el("h3", {}, s.host, " ", el("span", { class: "state " + s.state }, s.state)));
        card.append(el("p", { class: "muted mono" }, s.version ? "version " + s.version : "no version served", " · ", s.path));
        for (const [service, list] of Object.entries(s.services)) {
          if (list.length) card.append(el("p", { class: "apps", "data-service": service }, (serviceNames[service] || service) + ": ", el("span", { class: "mono" }, list.join(", "))));
        }
        card.append(el("pre", { class: "entitlements" }, s.entitlements.join("\n")));
        // What Apple sees: the file's changes, the fetches and the CDN's copy, in time order.
        if (s.timeline && (s.cdn || s.fetches.appleCDN || s.fetches.device)) {
          const line = el("ol", { class: "timeline", title: s.story });
          for (const e of s.timeline) {
            const item = el("li", { "data-kind": e.kind }, e.label);
            if (e.at) item.append(" ", el("time", { datetime: e.at, title: e.at }, clock(e.at)));
            if (e.kind === "cdn" && s.cdn) item.prepend(el("span", { class: "state " + s.cdn.state }, s.cdn.state), " ");
            item.append(e.detail);
            line.append(item);
          }
          card.append(el("p", { class: "muted" }, "What Apple sees:"), line);
          // Why the CDN's copy is not the file served: what differs, or what the CDN said.
          if (s.cdn && s.cdn.differs && s.cdn.differs.length) card.append(el("ul", { class: "differs warning" }, ...s.cdn.differs.map((d) => el("li", {}, d))));
          if (s.cdn && s.cdn.failureDetails) card.append(el("p", { class: "cdn-failure error" }, s.cdn.failureDetails));
        }
        // Every association file of the site, each with its own verdict and findings.
        for (const f of s.files) {
          card.append(el("p", { class: "file", "data-file": f.name }, el("span", { class: "mono" }, f.name), " ",
                         el("span", { class: "state " + f.state }, f.state), f.version ? " version " + f.version : "",
                         f.refusal ? " · " + f.refusal : ""));
          if (f.diagnostics.length) {
            const list = el("ul", { class: "diagnostics" });
            for (const d of f.diagnostics) list.append(el("li", { class: d.severity }, d.line + ":" + d.column + " " + d.severity + ": " + d.message + " [" + d.code + "] ", el("span", { class: "mono muted" }, d.jsonPath)));
            card.append(list);
          }
        }
        root.append(card);
      }
      if (more) {
        const button = el("button", { id: "more" }, "Show more");
        button.addEventListener("click", () => { wanted += pageSize; loadSites(); });
        root.append(el("p", {}, "Showing " + sites.length + " of " + summary.sites + " sites. ", button));
      }
      applyFilter();
    }

    let lastSequence = -1;
    async function loadFetches() {
      const data = await getJSON("/api/fetches");
      const newest = data.fetches.length ? data.fetches[0].sequence : -1;
      if (newest === lastSequence) return;
      lastSequence = newest;
      const body = document.getElementById("fetches");
      body.replaceChildren();
      for (const f of data.fetches) {
        const agent = f.fetcher ? f.userAgent + " (" + (f.fetcher === "apple-cdn" ? "Apple CDN" : "device") + ")" : f.userAgent;
        body.append(el("tr", { class: "fetch" }, el("td", { title: f.time }, new Date(f.time).toLocaleTimeString([], { hour12: false })), el("td", {}, f.status),
                       el("td", {}, f.host), el("td", {}, el("div", {}, agent), el("div", { class: "muted" }, f.client))));
      }
      document.getElementById("no-fetches").hidden = data.fetches.length > 0;
    }

    async function test(url) {
      const data = await getJSON("/api/match?url=" + encodeURIComponent(url));
      const out = document.getElementById("result");
      out.replaceChildren();
      if (data.error) { out.append(el("p", { class: "error" }, data.error)); return; }
      out.append(el("p", { class: "muted" }, "Decided with the file of " + data.site + ":"));
      const table = el("table", { id: "match-results" }, el("tr", {}, el("th", {}, "App"), el("th", {}, "Decision"), el("th", {}, "Decided by")));
      for (const r of data.results) {
        // A legacy `paths` entry is named as such, with the pattern that decided (docs/validation.md, "aasa match").
        const rule = r.rule === "path" ? "path " + r.component + " " + JSON.stringify(r.pattern) : "component " + r.component;
        const by = r.detail === null ? "nothing matched" : "details[" + r.detail + "], " + rule;
        table.append(el("tr", { class: "result" }, el("td", { class: "mono" }, r.app), el("td", { class: r.decision }, r.decision), el("td", {}, by)));
      }
      out.append(table);
    }

    // The URL tester and the filter live in the address, so a link or a reload keeps them.
    function remember(name, value) {
      const params = new URLSearchParams(location.search);
      if (value) params.set(name, value); else params.delete(name);
      const query = params.toString();
      history.replaceState(null, "", query ? "?" + query : location.pathname);
    }
    document.getElementById("tester").addEventListener("submit", (e) => {
      e.preventDefault();
      const url = document.getElementById("url").value;
      remember("url", url);
      test(url);
    });
    document.getElementById("filter").addEventListener("input", (e) => {
      remember("filter", e.target.value);
      if (complete) applyFilter(); else loadSites();
    });
    const params = new URLSearchParams(location.search);
    if (params.get("filter")) document.getElementById("filter").value = params.get("filter");
    if (params.get("url")) { document.getElementById("url").value = params.get("url"); test(params.get("url")); }
    loadSites();
    loadFetches();
    setInterval(loadFetches, 2000);
    setInterval(loadSites, 5000);
    </script>
    </body>
    </html>

    """#
}
