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

/// `/status` and `/metrics` at scale (README, "Admin"): a summary first, pages of sites.
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
}
