import AASACore
import AASAHTTP
import AASATransport

/// The last fetch of each site's AASA file by Apple's CDN (`User-Agent` starting `AASA-Bot`)
/// and the last by a device (`swcd` or `CFNetwork`), whatever the listener, protocol or status.
///
/// One lock for the whole server: it is taken only for those two kinds of fetch, which come a
/// few times a day per site from the CDN and once per app install from a device; every other
/// request (a browser, a balancer's probe, a benchmark) never reaches it.
final class FetchRecords: Sendable {
    struct Fetch: Sendable, Equatable {
        /// Wall-clock milliseconds.
        var at: Int64
        var status: Int
        /// The version served or matched (as `/status` shows versions), nil when none.
        var version: String?
        /// The client's address without port (the PROXY header's when that is on).
        var client: String
    }

    struct Entry: Sendable, Equatable {
        var appleCDN: Fetch?
        var device: Fetch?
    }

    enum Fetcher {
        case appleCDN
        case device
    }

    private let entries = Locked<[String: Entry]>([:])

    init() {}

    /// Who a user agent is, by the access log's test: a prefix, then one pass.
    static func fetcher(userAgent: String) -> Fetcher? {
        var ua = userAgent
        return ua.withUTF8({ AccessLog.fetcher(userAgent: $0) }).map(fetcher)
    }

    /// The access log's answer ("apple-cdn" or "device"), told apart by its first byte.
    static func fetcher(_ kind: StaticString) -> Fetcher {
        kind.utf8Start.pointee == UInt8(ascii: "a") ? .appleCDN : .device
    }

    /// Whether a path is the AASA file's, at either location.
    @inline(__always)
    static func isAASAPath(_ path: String) -> Bool {
        AssociationFileHandler.kind(of: path) == .aasa
    }

    /// Records a fetch of a site's AASA file (the caller has checked the path and the agent).
    func record(_ fetcher: Fetcher, site: String, host: String, status: Int, client: String, snapshot: SiteSnapshot) {
        // The version served (200) or matched (304); an error answer names none.
        let version = status == 200 || status == 304 ? snapshot.index.lookup(host)?.value.served?.version : nil
        record(site: site, fetcher, Fetch(at: wallClockMilliseconds(), status: status, version: version, client: client))
    }

    func record(site: String, _ fetcher: Fetcher, _ fetch: Fetch) {
        entries.withLock { entries in
            switch fetcher {
            case .appleCDN: entries[site, default: Entry()].appleCDN = fetch
            case .device: entries[site, default: Entry()].device = fetch
            }
        }
    }

    func entry(site: String) -> Entry? {
        entries.withLock { $0[site] }
    }

    /// Every site's entry at once, for a whole `/status`.
    func all() -> [String: Entry] {
        entries.withLock { $0 }
    }
}

extension FetchRecords.Fetch {
    func write(to w: inout JSONWriter) {
        w.beginObject()
        w.key("at"); w.value(HTTPDate.iso8601(milliseconds: at))
        w.key("status"); w.value(status)
        w.key("version"); w.value(version)
        w.key("client"); w.value(client)
        w.endObject()
    }
}
