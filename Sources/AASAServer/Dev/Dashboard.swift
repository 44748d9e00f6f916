import AASACore
import AASAHTTP

/// The development dashboard (SPEC 3.8): on the HTTP listener in `--dev`, for any host that is
/// not a configured site. A self-contained page (no external scripts, fonts or CDNs) over a
/// small JSON API; every value reaches the page through `textContent`, never as HTML.
enum Dashboard {
    /// Whether a request on the HTTP listener is the dashboard's rather than a site's.
    static func handles(_ request: HTTPRequest, snapshot: SiteSnapshot) -> Bool {
        guard let host = request.host else { return true }
        return snapshot.index.lookup(host) == nil
    }

    static func respond(to request: HTTPRequest, snapshot: SiteSnapshot, dev: DevelopmentMode, date: [UInt8],
                        into out: inout [UInt8]) -> Int {
        guard request.method == .get || request.method == .head else {
            Responder.simple(.methodNotAllowed, "only GET and HEAD\n", request: request, date: date, extraHeaders: "Allow: GET, HEAD\r\n", into: &out)
            return 405
        }
        let noStore = "Cache-Control: no-store\r\n"
        switch request.path {
        case "/":
            Responder.simple(.ok, page, request: request, date: date,
                             extraHeaders: noStore + "Content-Security-Policy: default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\r\n",
                             contentType: "text/html; charset=utf-8", into: &out)
        case "/api/sites":
            Responder.simple(.ok, sitesJSON(snapshot), request: request, date: date, extraHeaders: noStore, contentType: "application/json", into: &out)
        case "/api/fetches":
            Responder.simple(.ok, fetchesJSON(dev.fetches.recent()), request: request, date: date, extraHeaders: noStore, contentType: "application/json", into: &out)
        case "/api/match":
            let url = query(request.target, "url") ?? ""
            Responder.simple(.ok, matchJSON(url, snapshot: snapshot), request: request, date: date, extraHeaders: noStore, contentType: "application/json", into: &out)
        case "/ca.pem":
            guard let der = dev.certificates.caDER() else { return notFound(request, date, &out) }
            let pem = "-----BEGIN CERTIFICATE-----\n" + Base64.encode(der, lineLength: 64) + "\n-----END CERTIFICATE-----\n"
            Responder.simple(.ok, pem, request: request, date: date,
                             extraHeaders: "Content-Disposition: attachment; filename=\"aasa-development-ca.pem\"\r\n",
                             contentType: "application/x-pem-file", into: &out)
        case "/ca.mobileconfig":
            guard let der = dev.certificates.caDER() else { return notFound(request, date, &out) }
            Responder.simple(.ok, MobileConfig.profile(caDER: der), request: request, date: date,
                             extraHeaders: "Content-Disposition: attachment; filename=\"aasa-development-ca.mobileconfig\"\r\n",
                             contentType: "application/x-apple-aspen-config", into: &out)
        default:
            return notFound(request, date, &out)
        }
        return 200
    }

    private static func notFound(_ request: HTTPRequest, _ date: [UInt8], _ out: inout [UInt8]) -> Int {
        Responder.simple(.notFound, "not found\n", request: request, date: date, into: &out)
        return 404
    }

    /// A query parameter of the request target, percent-decoded (`+` as a space, as forms send it).
    static func query(_ target: String, _ name: String) -> String? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        for pair in target[target.index(after: q)...].split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.first == Substring(name) {
                let raw = parts.count > 1 ? String(parts[1]).replacingPlus() : ""
                return URLParts.percentDecoded(raw)
            }
        }
        return nil
    }

    // MARK: - API

    static func sitesJSON(_ snapshot: SiteSnapshot) -> String {
        var w = JSONWriter()
        w.beginObject()
        w.key("sites")
        w.beginArray()
        for site in snapshot.sites {
            w.beginObject()
            w.key("host"); w.value(site.name.description)
            w.key("state"); w.value(site.state.rawValue)
            w.key("version"); w.value(site.served?.version)
            w.key("path"); w.value(site.path)
            w.key("entitlements")
            w.beginArray()
            for line in Entitlements.lines(for: site) { w.value(line) }
            w.endArray()
            w.key("apps")
            w.beginArray()
            for app in (site.served?.file ?? site.newest).document?.appLinksAppIDs ?? [] { w.value(app) }
            w.endArray()
            w.key("diagnostics")
            w.write(site.newest.diagnostics)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.output
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
            guard let document = site.served?.file.document else {
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
    body { max-width: 1000px; margin: 2rem auto; padding: 0 1rem; }
    h1 { font-size: 1.6rem; margin-bottom: .2rem; }
    h2 { font-size: 1.15rem; margin-top: 2rem; }
    section.card { background: #fff; border-radius: 10px; padding: 1rem 1.2rem; margin: .8rem 0; box-shadow: 0 1px 3px rgba(0,0,0,.08); }
    code, pre, .mono { font-family: ui-monospace, Menlo, monospace; font-size: .9rem; }
    .state { font-weight: 600; padding: .1rem .5rem; border-radius: 6px; }
    .serving { background: #d8f5dd; color: #116326; } .stale { background: #fff1cc; color: #7a5200; } .rejected { background: #fde0e0; color: #9b1c1c; }
    .error { color: #9b1c1c; } .warning { color: #7a5200; }
    table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #eee; font-size: .9rem; }
    input[type=url] { width: 70%; padding: .4rem; font-size: 1rem; } button { padding: .4rem .9rem; font-size: 1rem; }
    .match { color: #116326; font-weight: 600; } .exclude { color: #9b1c1c; font-weight: 600; } .no_match { color: #555; }
    .muted { color: #666; }
    </style>
    </head>
    <body>
    <h1>aasa development server</h1>
    <p class="muted">Sites served from this machine for devices with <code>?mode=developer</code> entitlements.
    CA: <a href="/ca.mobileconfig">ca.mobileconfig</a> (iOS profile) · <a href="/ca.pem">ca.pem</a></p>

    <h2>Test a URL</h2>
    <section class="card">
    <form id="tester"><input id="url" type="url" placeholder="https://example.com/path?query#fragment" required> <button>Test</button></form>
    <div id="result"></div>
    </section>

    <h2>Sites</h2>
    <div id="sites"><p class="muted">Loading…</p></div>

    <h2>Recent fetches</h2>
    <section class="card">
    <table><thead><tr><th>Time</th><th>Client</th><th>Host</th><th>Status</th><th>User agent</th></tr></thead><tbody id="fetches"></tbody></table>
    <p id="no-fetches" class="muted">No fetch yet. A device fetches on app install; Apple's CDN identifies as AASA-Bot.</p>
    </section>

    <script>
    "use strict";
    function el(tag, attrs, ...children) {
      const e = document.createElement(tag);
      for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
      for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
      return e;
    }
    async function getJSON(path) { const r = await fetch(path, { cache: "no-store" }); return r.json(); }

    async function loadSites() {
      const data = await getJSON("/api/sites");
      const root = document.getElementById("sites");
      root.replaceChildren();
      if (data.sites.length === 0) root.append(el("p", { class: "muted" }, "No site folders in the config directory."));
      for (const s of data.sites) {
        const card = el("section", { class: "card site", "data-host": s.host });
        card.append(el("h3", {}, s.host, " ", el("span", { class: "state " + s.state }, s.state)));
        card.append(el("p", { class: "muted mono" }, s.version ? "version " + s.version : "no version served", " · ", s.path));
        const ent = el("pre", { class: "entitlements" }, s.entitlements.join("\n"));
        card.append(el("div", {}, "Entitlements:"), ent);
        if (s.apps.length) card.append(el("p", {}, "Apps: ", el("span", { class: "mono" }, s.apps.join(", "))));
        if (s.diagnostics.length) {
          const list = el("ul", { class: "diagnostics" });
          for (const d of s.diagnostics) list.append(el("li", { class: d.severity }, d.line + ":" + d.column + " " + d.severity + ": " + d.message + " [" + d.code + "] ", el("span", { class: "mono muted" }, d.jsonPath)));
          card.append(list);
        } else {
          card.append(el("p", { class: "muted" }, "No findings."));
        }
        root.append(card);
      }
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
        body.append(el("tr", { class: "fetch" }, el("td", { title: f.time }, new Date(f.time).toLocaleTimeString()), el("td", {}, f.client), el("td", {}, f.host), el("td", {}, f.status), el("td", {}, agent)));
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
        const by = r.detail === null ? "nothing matched" : "details[" + r.detail + "], component " + r.component;
        table.append(el("tr", { class: "result" }, el("td", { class: "mono" }, r.app), el("td", { class: r.decision }, r.decision), el("td", {}, by)));
      }
      out.append(table);
    }

    document.getElementById("tester").addEventListener("submit", (e) => {
      e.preventDefault();
      const url = document.getElementById("url").value;
      history.replaceState(null, "", "?url=" + encodeURIComponent(url));
      test(url);
    });
    const initial = new URLSearchParams(location.search).get("url");
    if (initial) { document.getElementById("url").value = initial; test(initial); }
    loadSites();
    loadFetches();
    setInterval(loadFetches, 2000);
    setInterval(loadSites, 5000);
    </script>
    </body>
    </html>

    """#
}

extension String {
    func replacingPlus() -> String {
        String(map { $0 == "+" ? " " : $0 })
    }
}
