import AASACore
import AASAHTTP
import AASATransport
import AASASessions

/// The admin listener (docs/serving.md, "Admin listener"): health, readiness, Prometheus metrics and a JSON status.
enum AdminResponder {
    /// Whether a request that asked `Expect: 100-continue` should send its body: not when the
    /// write API would refuse it anyway (off: 403; no valid token: 401).
    static func wantsBody(of request: HTTPRequest, state: ServerState) -> Bool {
        guard WriteAPI.handles(request.path) else { return true }
        guard let api = state.writeAPI.withLock({ $0 }) else { return false }
        return api.tokens.authorize(request.authorization) != nil
    }

    static func respond(to request: HTTPRequest, state: ServerState) -> Answer {
        let noStore = [(name: "cache-control", value: "no-store")]
        if WriteAPI.handles(request.path) {
            guard let api = state.writeAPI.withLock({ $0 }) else { return WriteAPI.disabled(request) }
            return api.respond(to: request)
        }
        guard request.method == .get || request.method == .head else {
            return .message(.methodNotAllowed, "only GET and HEAD\n", request: request, site: "", extraFields: [("allow", "GET, HEAD")])
        }
        switch request.path {
        case "/healthz":
            return .message(.ok, "ok\n", request: request, site: "")
        case "/readyz":
            if state.isDraining {
                return .message(.serviceUnavailable, "draining\n", request: request, site: "")
            }
            if !state.ready.load(ordering: .relaxed) {
                let why = state.storeProblem.withLock { $0 }.map { "starting: waiting for the first load from the store: \($0)\n" }
                return .message(.serviceUnavailable, why ?? "starting\n", request: request, site: "")
            }
            return .message(.ok, "ready\n", request: request, site: "")
        case "/metrics":
            return .message(.ok, metrics(state), request: request, site: "", contentType: "text/plain; version=0.0.4; charset=utf-8")
        case "/status":
            let snapshot = state.snapshots.load().0
            let json = [(name: String, value: String)](noStore)
            if let host = QueryString.value("site", in: request.target) {
                // That entry alone.
                guard let name = SiteName(host), let site = snapshot.index[name] else {
                    return .message(.notFound, ErrorDocument.json("no site \(host)") + "\n", request: request, site: "",
                                    contentType: "application/json", extraFields: json)
                }
                return .message(.ok, status(snapshot, page: ([site], nil), certificatePage: certificatePage(for: site, snapshot),
                                            acme: state.acme, watch: state.watch.current(), appleView: state.appleView,
                                            store: state.storeStatus.withLock { $0 }) + "\n",
                                request: request, site: "", contentType: "application/json", extraFields: json)
            }
            switch SitePage.parse(target: request.target) {
            case .failure(let error):
                return .message(.badRequest, ErrorDocument.json(error.message) + "\n", request: request, site: "",
                                contentType: "application/json", extraFields: json)
            case .success(let page):
                let certificatesAfter = QueryString.value("certificatesAfter", in: request.target)
                return .message(.ok, status(snapshot, page: page.select(from: snapshot),
                                            certificatePage: certificatePage(after: certificatesAfter, limit: page.limit, snapshot),
                                            acme: state.acme, watch: state.watch.current(), appleView: state.appleView,
                                            store: state.storeStatus.withLock { $0 }) + "\n",
                                request: request, site: "", contentType: "application/json", extraFields: json)
            }
        default:
            return .message(.notFound, "not found: try /healthz, /readyz, /metrics or /status\n", request: request, site: "")
        }
    }

    /// A file's error as `/status` shows it: `{"message","line","column","code"}` or null.
    private static func writeError(refusal: FileRefusal?, error: Diagnostic?, to w: inout JSONWriter) {
        if let refusal {
            // Refused before validation: no position in the file to point at.
            w.beginObject()
            w.key("message"); w.value(refusal.message)
            w.key("line"); w.null()
            w.key("column"); w.null()
            w.key("code"); w.value(refusal.code)
            w.endObject()
        } else if let error {
            w.beginObject()
            w.key("message"); w.value(error.message)
            w.key("line"); w.value(error.line)
            w.key("column"); w.value(error.column)
            w.key("code"); w.value(error.code.rawValue)
            w.endObject()
        } else {
            w.null()
        }
    }

    /// The certificates of one page: at most `limit`, in byte order of name, after a name.
    static func certificatePage(after: String?, limit: Int, _ snapshot: SiteSnapshot) -> (certificates: ArraySlice<TLSCertificate>, next: String?) {
        let all = snapshot.certificates.certificates
        var low = 0, high = all.count
        if let after {
            while low < high {
                let mid = (low + high) / 2
                if CertificateStore.precedes(after, all[mid].name) { high = mid } else { low = mid + 1 }
            }
        } else {
            high = 0
        }
        let start = low
        let end = min(all.count, start + limit)
        return (all[start..<end], end < all.count ? all[end - 1].name : nil)
    }

    /// With `?site=`: the certificate a handshake for the site gets, when one covers it.
    static func certificatePage(for site: Site, _ snapshot: SiteSnapshot) -> (certificates: ArraySlice<TLSCertificate>, next: String?) {
        let probe = SnapshotBuilder.coverageProbe(site.name)
        guard let cert = snapshot.certificates.covering(probe) else { return ([], nil) }
        return ([cert][...], nil)
    }

    /// `/status` (docs/serving.md, "Admin listener"): the summary, one page of sites and of certificates.
    static func status(_ snapshot: SiteSnapshot, page: (sites: [Site], next: String?)? = nil,
                       certificatePage: (certificates: ArraySlice<TLSCertificate>, next: String?)? = nil,
                       acme: ACMEStatus? = nil, watch: WatchStatus.Value? = nil, appleView: AppleView? = nil,
                       store: StoreStatus? = nil) -> String {
        let apple = appleView?.listing() ?? AppleView.Listing(fetches: [:], cdn: nil)
        let page = page ?? SitePage().select(from: snapshot)
        let certificatePage = certificatePage ?? AdminResponder.certificatePage(after: nil, limit: SitePage.maximumLimit, snapshot)
        var w = JSONWriter()
        w.beginObject()
        // The summary first, always: a client can stop reading after it.
        let summary = snapshot.summary
        w.key("summary")
        w.beginObject()
        summary.writeCounts(to: &w)
        w.key("certificates"); w.value(snapshot.certificates.certificates.count)
        w.key("uncovered"); w.value(summary.uncovered)
        if let watch {
            w.key("watch")
            watch.write(to: &w)
        }
        if let store {
            w.key("store")
            w.beginObject()
            w.key("kind"); w.value(store.kind)
            w.key("connected"); w.value(store.connected)
            w.key("since"); w.value(HTTPDate.iso8601(milliseconds: store.since))
            w.endObject()
        }
        w.endObject()
        w.key("sites")
        w.beginArray()
        for site in page.sites {
            w.beginObject()
            site.writeIdentity(to: &w)
            w.key("error")
            writeError(refusal: site.refusal, error: site.error, to: &w)
            w.key("warnings"); w.value(site.aasa?.newest.warningCount ?? 0)
            // One entry per association file of the site, AASA included (docs/serving.md, "Admin listener").
            w.key("files")
            w.beginArray()
            for file in site.files {
                w.beginObject()
                file.writeIdentity(to: &w)
                w.key("error")
                writeError(refusal: file.refusal, error: file.error, to: &w)
                if file.refusal == nil, !file.newest.isValid {
                    // Every finding of a file that is not served, warnings included: one of
                    // them may be what explains the error.
                    w.key("diagnostics")
                    w.write(file.newest.diagnostics)
                }
                w.endObject()
            }
            w.endArray()
            w.key("certificateCovers")
            if let covers = site.certificateCovers { w.value(covers) } else { w.null() }
            if site.name.isWildcard {
                w.key("certificateNote"); w.value(wildcardNote(site, snapshot))
            }
            AppleView.write(site, apple, to: &w)
            w.endObject()
        }
        w.endArray()
        w.key("next"); w.value(page.next)
        w.key("certificates")
        w.beginArray()
        for cert in certificatePage.certificates {
            w.beginObject()
            w.key("name"); w.value(cert.name)
            w.key("dnsNames")
            w.beginArray()
            for name in cert.dnsNames { w.value(name) }
            w.endArray()
            w.key("notAfter"); w.value(HTTPDate.iso8601(milliseconds: Int64(cert.notAfter) * 1000))
            w.key("default"); w.value(cert === snapshot.certificates.defaultCertificate)
            let isACME = snapshot.certificates.isACME(cert)
            w.key("source"); w.value(isACME ? "acme" : "file")
            if isACME {
                let renewAfter = CertificateValidity(notBefore: cert.notBefore, notAfter: cert.notAfter).renewAfter
                w.key("renewAfter"); w.value(HTTPDate.iso8601(milliseconds: Int64(renewAfter) * 1000))
            }
            w.endObject()
        }
        w.endArray()
        w.key("certificatesNext"); w.value(certificatePage.next)
        w.key("logLinesDropped"); w.value(LogStream.droppedLines)
        if let acme {
            w.key("acme")
            acme.write(to: &w)
        }
        w.endObject()
        return w.output
    }

    /// docs/serving.md, "Config directory": a wildcard site also serves its base name, and a TLS wildcard covers one label
    /// (RFC 6125 §6.4.3), so deeper hosts need certificates of their own.
    static func wildcardNote(_ site: Site, _ snapshot: SiteSnapshot) -> String {
        let base = site.name.host
        var note = "\(site.name) also serves \(base) (where iOS fetches the file for applinks:\(site.name)); "
        note += "a TLS certificate for \(site.name) covers one level (a.\(base)), not a.b.\(base): deeper hosts need their own certificate"
        if site.certificateCovers != nil, !snapshot.certificates.covers(base) {
            note += "; no certificate covers \(base)"
        }
        return note
    }

    static func metrics(_ state: ServerState) -> String {
        var requests: [LoopCounters.Key: [Int]] = [:]
        for loop in state.loopCounters {
            loop.requests.withLock { tally in
                for (key, count) in tally.counts {
                    var sum = requests[key] ?? [Int](repeating: 0, count: RequestedFile.allCases.count)
                    for (i, n) in count.byFile.enumerated() { sum[i] += n }
                    requests[key] = sum
                }
            }
        }
        let m = state.metrics
        var out = ""
        func family(_ name: String, _ type: String, _ help: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
        }
        family("aasa_requests_total", "counter", "Requests answered, by site, file asked for and status.")
        for (key, byFile) in requests.sorted(by: { ($0.key.site, $0.key.status) < ($1.key.site, $1.key.status) }) {
            for file in RequestedFile.allCases where byFile[file.rawValue] > 0 {
                out += "aasa_requests_total{site=\"\(label(key.site))\",file=\"\(file.label)\",status=\"\(key.status)\"} \(byFile[file.rawValue])\n"
            }
        }
        family("aasa_reloads_total", "counter", "Configuration reloads.")
        out += "aasa_reloads_total \(m.reloads.load(ordering: .relaxed))\n"
        family("aasa_reload_errors_total", "counter", "Reloads in which a site's new file was rejected, by site.")
        for (site, n) in m.reloadErrors.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            out += "aasa_reload_errors_total{site=\"\(label(site))\"} \(n)\n"
        }
        family("aasa_open_connections", "gauge", "Client connections open now.")
        out += "aasa_open_connections \(m.openConnections.load(ordering: .relaxed))\n"
        family("aasa_tls_handshakes_total", "counter", "Completed TLS handshakes.")
        out += "aasa_tls_handshakes_total \(m.tlsHandshakes.load(ordering: .relaxed))\n"
        family("aasa_tls_handshake_errors_total", "counter", "Failed TLS handshakes.")
        out += "aasa_tls_handshake_errors_total \(m.tlsHandshakeErrors.load(ordering: .relaxed))\n"
        family("aasa_log_lines_dropped_total", "counter", "Log lines dropped because stdout or stderr was not being read fast enough.")
        out += "aasa_log_lines_dropped_total \(LogStream.droppedLines)\n"
        // One series per certificate for the first --metrics-sites of them (byte order of name);
        // the two summaries below cover all of them.
        let certificates = state.snapshots.load().0.certificates.certificates
        family("aasa_certificate_expiry_timestamp_seconds", "gauge", "notAfter of each certificate, in Unix seconds (the first --metrics-sites by name).")
        for cert in certificates.prefix(m.labels.capacity) {
            out += "aasa_certificate_expiry_timestamp_seconds{name=\"\(label(cert.name))\"} \(cert.notAfter)\n"
        }
        let soon = wallClockSeconds() + 14 * 86_400
        family("aasa_certificates_expiring", "gauge", "Certificates whose notAfter is within the window.")
        out += "aasa_certificates_expiring{within=\"14d\"} \(certificates.count { $0.notAfter <= soon })\n"
        if let earliest = certificates.map(\.notAfter).min() {
            family("aasa_certificate_earliest_expiry_timestamp_seconds", "gauge", "The earliest notAfter of all certificates, in Unix seconds.")
            out += "aasa_certificate_earliest_expiry_timestamp_seconds \(earliest)\n"
        }
        if let cdn = state.appleView.cdn { out += cdn.metrics() }
        if state.writeAPI.withLock({ $0 != nil }) {
            family("aasa_api_requests_total", "counter", "Write API requests by method and status.")
            for (labels, n) in m.apiRequests.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
                out += "aasa_api_requests_total{\(labels)} \(n)\n"
            }
        }
        if state.acme != nil {
            family("aasa_acme_orders_total", "counter", "ACME orders by result.")
            out += "aasa_acme_orders_total{result=\"issued\"} \(m.acmeOrdersIssued.load(ordering: .relaxed))\n"
            out += "aasa_acme_orders_total{result=\"failed\"} \(m.acmeOrdersFailed.load(ordering: .relaxed))\n"
        }
        return out
    }

    /// Prometheus label values escape `\`, `"` and newlines.
    private static func label(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }
}
