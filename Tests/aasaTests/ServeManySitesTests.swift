import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private func json(_ body: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
}

private func hosts(_ page: [String: Any]) -> [String] {
    ((page["sites"] as? [[String: Any]]) ?? []).compactMap { $0["host"] as? String }
}

/// `/status` and `/metrics` at scale (docs/serving.md, "Admin listener"): a summary first, pages of sites.
@Suite struct ServeManySitesTests {
    static func sites(_ n: Int) -> [String: String] {
        var sites: [String: String] = [:]
        for i in 0..<n { sites["s\(String(format: "%02d", i)).example.com"] = exampleCom }
        return sites
    }

    @Test func statusStartsWithTheSummaryAndPagesThroughTheSitesInByteOrder() throws {
        var sites = ServeManySitesTests.sites(25)
        sites["bad.example.com"] = #"{"applinks": "#
        sites["*.example.org"] = wildcardOrg
        let server = try ServerProcess(sites: sites)
        let whole = try server.admin("/status")
        #expect(whole.status == 200)
        #expect(whole.body.hasPrefix(#"{"summary":{"sites":27,"serving":26,"rejected":1,"stale":0,"certificates":2,"uncovered":"#),
                "\(whole.body.prefix(200))")
        let all = hosts(try json(whole.body))
        #expect(all.count == 27)
        #expect(all == all.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) })
        #expect(all.first == "*.example.org")

        var seen: [String] = []
        var after: String? = nil
        var pages = 0
        repeat {
            let page = try json(try server.admin("/status?limit=10" + (after.map { "&after=" + $0 } ?? "")).body)
            seen += hosts(page)
            after = page["next"] as? String
            pages += 1
            #expect(hosts(page).count <= 10)
            if let after { #expect(after == hosts(page).last) }
        } while after != nil && pages < 10
        #expect(pages == 3)
        #expect(seen == all)

        let rejected = try json(try server.admin("/status?state=rejected").body)
        #expect(hosts(rejected) == ["bad.example.com"])
        #expect(rejected["next"] is NSNull)

        let one = try server.admin("/status?site=s07.example.com")
        #expect(hosts(try json(one.body)) == ["s07.example.com"])
        let wildcard = try server.admin("/status?site=%2A.example.org")
        #expect(hosts(try json(wildcard.body)) == ["*.example.org"])
        let unknown = try server.admin("/status?site=nowhere.example.com")
        #expect(unknown.status == 404)
        #expect((try json(unknown.body))["error"] is String)
        for bad in ["limit=0", "limit=1001", "limit=ten", "state=broken"] {
            let r = try server.admin("/status?" + bad)
            #expect(r.status == 400, "\(bad)")
            #expect((try? json(r.body))?["error"] is String, "\(bad): \(r.body)")
        }
    }

    @Test func metricsGiveTheFirstSitesTheirOwnLabelAndCountTheRestAsOther() throws {
        let server = try ServerProcess(sites: ServeManySitesTests.sites(6), extraArguments: ["--metrics-sites", "3"])
        // An unconfigured host counts as "unknown" and takes no site's slot.
        let unknown = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: nowhere.example\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(unknown) == 404)
        for i in 0..<6 {
            for _ in 0..<2 {
                let r = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: s0\(i).example.com\r\nConnection: close\r\n\r\n")
                #expect(RawHTTP.status(r) == 200)
            }
        }
        let metrics = try server.admin("/metrics").body
        let requestLines = metrics.split(separator: "\n").filter { $0.hasPrefix("aasa_requests_total{") }
        let labels = Set(requestLines.compactMap { line -> String? in
            guard let start = line.range(of: "site=\""), let end = line[start.upperBound...].firstIndex(of: "\"") else { return nil }
            return String(line[start.upperBound..<end])
        })
        #expect(labels == ["unknown", "s00.example.com", "s01.example.com", "s02.example.com", "other"], "\(requestLines)")
        #expect(metrics.contains(#"aasa_requests_total{site="other",file="apple-app-site-association",status="200"} 6"#), "\(requestLines)")
        #expect(metrics.contains(#"aasa_certificates_expiring{within="14d"} "#))
        #expect(metrics.contains("aasa_certificate_earliest_expiry_timestamp_seconds "))
    }

    /// The start-up log names 20 findings of a kind, then counts the rest.
    @Test func theStartUpLogShowsTwentyFindingsOfAKindAndCountsTheRest() throws {
        let server = try ServerProcess(prepare: { config in
            let certs = config.deletingLastPathComponent().appendingPathComponent("certs").path
            let script = """
            set -e
            cd '\(certs)'
            openssl ecparam -name prime256v1 -genkey -noout -out shared.pem
            for i in $(seq 1 25); do
              openssl req -x509 -new -key shared.pem -days 30 -subj "/CN=c$i.example.net" -addext "subjectAltName=DNS:c$i.example.net" -addext "basicConstraints=critical,CA:FALSE" -out "c$i.crt" 2>/dev/null
              cp shared.pem "c$i.key"; chmod 644 "c$i.key"
            done
            rm shared.pem
            """
            let r = try Shell.run("/bin/bash", ["-c", script])
            #expect(r.status == 0, "\(r.stderr)")
        })
        let log = server.log
        let loaded = log.split(separator: "\n").filter { $0.contains(" info certificate c") }
        #expect(loaded.count == 20, "\(loaded.count) lines")
        // 25 made here and the harness's two.
        #expect(log.contains("7 more certificate loaded lines not shown (27 in all)"), "\(log)")
        let readable = log.split(separator: "\n").filter { $0.contains("is readable by group or others") }
        #expect(readable.count == 20)
        #expect(log.contains("5 more private key readable by group or others lines not shown (25 in all)"))
    }

    /// `--watch poll`, as on a network filesystem where inotify sees no other host's writes.
    @Test func pollingFindsAnEditWithoutInotifyAndSaysSoInTheSummary() throws {
        let server = try ServerProcess(extraArguments: ["--watch", "poll", "--poll-interval", "1"])
        let summary = try #require(try server.status()["summary"] as? [String: Any])
        let watch = try #require(summary["watch"] as? [String: Any])
        #expect(watch["mode"] as? String == "poll")
        #expect(watch["pollInterval"] as? Int == 1)
        let edited = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/polled/*"}]}]}}"#
        try server.directory.write("config/example.com/apple-app-site-association", edited)
        #expect(ServerProcess.waitFor(timeout: 3) {
            let r = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
            return RawHTTP.body(r) == edited
        })
        let after = try #require(try server.status()["summary"] as? [String: Any])
        #expect((after["watch"] as? [String: Any])?["lastPassSeconds"] is Double || (after["watch"] as? [String: Any])?["lastPassSeconds"] is Int)
    }

    @Test func theSummarySaysInotifyOnALocalDisk() throws {
        let server = try ServerProcess()
        #expect(server.waitForLog("folders watched"))
        let watch = try #require((try server.status()["summary"] as? [String: Any])?["watch"] as? [String: Any])
        #expect(watch["mode"] as? String == "inotify")
        #expect(watch["pollInterval"] is NSNull && watch["lastPassSeconds"] is NSNull)
        #expect(watch["coveredAfterReadySeconds"] is Double || watch["coveredAfterReadySeconds"] is Int, "\(watch)")
    }

    /// The watches are added after ready: an edit made before they exist is served all the same.
    @Test func anEditMadeBeforeTheWatchesExistIsServed() throws {
        let server = try ServerProcess(environment: ["AASA_TEST_WATCH_DELAY_MS": "1500"])
        let watch = try #require((try server.status()["summary"] as? [String: Any])?["watch"] as? [String: Any])
        #expect(watch["coveredAfterReadySeconds"] is NSNull, "not yet: \(watch)")
        let edited = #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/early/*"}]}]}}"#
        try server.directory.write("config/example.com/apple-app-site-association", edited)
        #expect(server.waitForLog("folders watched", timeout: 5), "\(server.log)")
        #expect(ServerProcess.waitFor(timeout: 2) {
            let r = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
            return RawHTTP.body(r) == edited
        })
        // And the watch works from then on.
        let later = edited.replacingOccurrences(of: "/early/*", with: "/later/*")
        try server.directory.write("config/example.com/apple-app-site-association", later)
        #expect(ServerProcess.waitFor(timeout: 2) {
            let r = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
            return RawHTTP.body(r) == later
        })
    }

    /// The development dashboard asks for its sites a page at a time, and searches on the server.
    @Test func theDashboardAPIPagesAndSearchesTheSites() throws {
        let server = try ServerProcess(sites: ServeManySitesTests.sites(5), dev: true)
        func api(_ path: String) throws -> [String: Any] {
            let r = try RawHTTP.exchange(port: server.http, "GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            return try json(RawHTTP.body(r))
        }
        let first = try api("/api/sites?limit=2")
        #expect(hosts(first) == ["s00.example.com", "s01.example.com"])
        #expect(first["next"] as? String == "s01.example.com")
        #expect((first["summary"] as? [String: Any])?["sites"] as? Int == 5)
        let rest = try api("/api/sites?limit=10&after=s01.example.com")
        #expect(hosts(rest) == ["s02.example.com", "s03.example.com", "s04.example.com"])
        #expect(rest["next"] is NSNull)
        #expect(hosts(try api("/api/sites?search=s03")) == ["s03.example.com"])
        let bad = try RawHTTP.exchange(port: server.http, "GET /api/sites?limit=0 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(bad) == 400)
    }
}
