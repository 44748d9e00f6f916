import AASACore

/// The admin listener's write API (docs/platforms.md) and its `/status`, one request per call,
/// for `aasa site`. Every failure to get an HTTP answer (resolve, connect, TLS, time-out, a
/// broken response) is an ``HTTPClientError``; any answer, whatever its status, is returned.
public struct AdminClient: Sendable {
    /// Where the admin listener is: its scheme, address and port, and a path prefix (empty, or
    /// `/aasa` when a proxy puts the listener under a path).
    public let base: HTTPURL
    /// Sent as `Authorization: Bearer TOKEN` on the write API's paths; never on `/status`,
    /// which needs none.
    private let token: String?
    private let client: HTTPSClient

    /// Sites asked for per `/status` page: a site entry with its files, fetches and CDN state
    /// is about a kilobyte, more with a rejected file's findings.
    public static let statusPageSize = 250

    public init(base: HTTPURL, token: String?, configuration: HTTPSClient.Configuration) throws(HTTPClientError) {
        var base = base
        if let query = base.target.firstIndex(of: "?") { base.target = String(base.target[..<query]) }
        while base.target.hasSuffix("/") { base.target.removeLast() }
        self.base = base
        self.token = token
        client = try HTTPSClient(configuration)
    }

    /// `ADDR:PORT` (as `aasa serve --admin` takes it) is `http://ADDR:PORT`; otherwise an
    /// `http://` or `https://` URL, whose path (if any) is a prefix for every request. A listener
    /// bound to every address (`0.0.0.0`, `::`, as `AASA_ADMIN` may say for the server) is
    /// reached on loopback.
    public static func baseURL(_ text: String) throws(HTTPURL.ParseError) -> HTTPURL {
        var url = try HTTPURL(text.contains("://") ? text : "http://" + text)
        if url.target.contains("?") { throw HTTPURL.ParseError(description: "a query has no place in the admin URL: \(text)") }
        if url.host == "0.0.0.0" { url.host = "127.0.0.1" }
        if url.host == "::" { url.host = "::1" }
        return url
    }

    /// `/sites/HOST` or `/sites/HOST/FILE`. A wildcard's `*` is written `%2A`: a site name has
    /// no other character a path must escape.
    public static func sitePath(_ site: SiteName, _ file: AssociationFileKind?) -> String {
        let host = site.isWildcard ? "%2A." + site.host : site.host
        return "/sites/" + host + (file.map { "/" + $0.fileName } ?? "")
    }

    /// `PUT /sites/HOST/FILE` with the file as the body; `ifNoneMatch: "*"` stores it only when
    /// the site has no such file yet (else `412`).
    public func put(_ site: SiteName, _ file: AssociationFileKind, body: [UInt8], ifMatch: String? = nil,
                    ifNoneMatch: String? = nil) throws(HTTPClientError) -> HTTPResponse {
        var headers = [(name: "Content-Type", value: file.contentType)]
        if let ifMatch { headers.append((name: "If-Match", value: ifMatch)) }
        if let ifNoneMatch { headers.append((name: "If-None-Match", value: ifNoneMatch)) }
        return try send("PUT", AdminClient.sitePath(site, file), headers: headers, body: body, authorized: true)
    }

    /// `GET /sites/HOST/FILE`: the stored bytes.
    public func get(_ site: SiteName, _ file: AssociationFileKind) throws(HTTPClientError) -> HTTPResponse {
        try send("GET", AdminClient.sitePath(site, file), authorized: true)
    }

    /// `DELETE /sites/HOST/FILE`, or with no file `DELETE /sites/HOST` (the site and all its files).
    public func delete(_ site: SiteName, _ file: AssociationFileKind?, ifMatch: String? = nil) throws(HTTPClientError) -> HTTPResponse {
        let headers = ifMatch.map { [(name: "If-Match", value: $0)] } ?? []
        return try send("DELETE", AdminClient.sitePath(site, file), headers: headers, authorized: true)
    }

    /// `/certificates/NAME`.
    public static func certificatePath(_ name: String) -> String { "/certificates/" + name }

    /// `PUT /certificates/NAME` with `{"certificate": CHAIN, "key": KEY}`.
    public func putCertificate(_ name: String, chain: String, key: String, ifMatch: String? = nil) throws(HTTPClientError) -> HTTPResponse {
        var w = JSONWriter()
        w.beginObject()
        w.key("certificate"); w.value(chain)
        w.key("key"); w.value(key)
        w.endObject()
        var headers = [(name: "Content-Type", value: "application/json")]
        if let ifMatch { headers.append((name: "If-Match", value: ifMatch)) }
        return try send("PUT", AdminClient.certificatePath(name), headers: headers, body: Array(w.output.utf8), authorized: true)
    }

    /// `GET /certificates/NAME`: its names, expiry and chain (never the key).
    public func getCertificate(_ name: String) throws(HTTPClientError) -> HTTPResponse {
        try send("GET", AdminClient.certificatePath(name), authorized: true)
    }

    /// `DELETE /certificates/NAME`.
    public func deleteCertificate(_ name: String, ifMatch: String? = nil) throws(HTTPClientError) -> HTTPResponse {
        let headers = ifMatch.map { [(name: "If-Match", value: $0)] } ?? []
        return try send("DELETE", AdminClient.certificatePath(name), headers: headers, authorized: true)
    }

    /// One page of `/status`'s certificates, after the certificate named `after`.
    public func certificates(after: String?, limit: Int = AdminClient.statusPageSize) throws(HTTPClientError) -> HTTPResponse {
        var query = "limit=\(limit)&state=rejected"
        if let after { query += "&certificatesAfter=" + AdminClient.queryValue(after) }
        return try send("GET", "/status?" + query, authorized: false)
    }

    /// One page of `/status`: at most `limit` sites after `after`, narrowed to `state` when given.
    public func status(after: String?, limit: Int = AdminClient.statusPageSize, state: String? = nil) throws(HTTPClientError) -> HTTPResponse {
        var query = "limit=\(limit)"
        if let after { query += "&after=" + AdminClient.queryValue(after) }
        if let state { query += "&state=" + AdminClient.queryValue(state) }
        return try send("GET", "/status?" + query, authorized: false)
    }

    private func send(_ method: String, _ path: String, headers: [(name: String, value: String)] = [], body: [UInt8] = [],
                      authorized: Bool) throws(HTTPClientError) -> HTTPResponse {
        var url = base
        url.target = base.target + path
        var fields = headers
        if authorized, let token { fields.append((name: "Authorization", value: "Bearer " + token)) }
        fields.append((name: "Accept", value: method == "GET" && path.hasPrefix("/sites/") ? "*/*" : "application/json"))
        return try client.send(HTTPClientRequest(method: method, url: url, headers: fields, body: body))
    }

    /// Every byte but RFC 3986's unreserved ones percent-encoded: a host from a peer's `next`
    /// goes back into the query as it came, `*` and all.
    static func queryValue(_ s: String) -> String {
        var out = ""
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
