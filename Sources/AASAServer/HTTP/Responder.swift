import AASACore
import AASAHTTP

/// Turns a request into response bytes (SPEC 3.2). The site's own responses are prepared per
/// version; the responder only picks one, adds the date and the connection header, and copies.
struct Responder {
    static let wellKnownPath = "/.well-known/apple-app-site-association"
    static let rootPath = "/apple-app-site-association"

    /// What was sent, for the access log and the metrics.
    struct Outcome {
        var status: Int
        /// The site's name, or "unknown" when the host is not configured (a fixed label set
        /// keeps the metrics' cardinality bounded whatever hosts clients send).
        var siteLabel: String
        var bodyBytes: Int
    }

    /// Writes the response to `request` into `out`.
    /// - Parameter certificate: for a TLS connection, the certificate it was handshaken with.
    /// Bodies above this size are not copied into the connection's buffer: they are written
    /// from the site's prepared bytes after the head.
    static let copyLimit = 16 * 1024

    static func respond(to request: HTTPRequest, snapshot: SiteSnapshot, isTLS: Bool, certificate: TLSCertificate?,
                        date: [UInt8], into out: inout [UInt8], largeBody: inout [UInt8]?, cache: inout HostCache) -> Outcome {
        let isHead = request.method == .head
        guard let host = request.host, let (name, site) = cache.lookup(host, in: snapshot) else {
            let n = simple(.notFound, "unknown host\n", request: request, date: date, into: &out)
            return Outcome(status: 404, siteLabel: "unknown", bodyBytes: n)
        }
        let label = name.description
        // The connection's certificate does not name this host: the client reached us with a
        // connection meant for another site (RFC 9110 §15.5.20).
        if isTLS, !cache.certificateCovers(host, certificate) {
            let n = simple(.misdirectedRequest, "this connection's certificate does not cover \(host)\n", request: request, date: date, into: &out)
            return Outcome(status: 421, siteLabel: label, bodyBytes: n)
        }
        guard request.path == wellKnownPath || request.path == rootPath else {
            let n = simple(.notFound, "not found\n", request: request, date: date, into: &out)
            return Outcome(status: 404, siteLabel: label, bodyBytes: n)
        }
        guard request.method == .get || isHead else {
            let n = simple(.methodNotAllowed, "only GET and HEAD\n", request: request, date: date, extraHeaders: "Allow: GET, HEAD\r\n", into: &out)
            return Outcome(status: 405, siteLabel: label, bodyBytes: n)
        }
        guard let served = site.served else {
            let n = simple(.notFound, "this site's file has errors and is not served\n", request: request, date: date, into: &out)
            return Outcome(status: 404, siteLabel: label, bodyBytes: n)
        }
        if served.isNotModified(ifNoneMatch: request.ifNoneMatch, ifModifiedSince: request.ifModifiedSince) {
            out.append(contentsOf: served.notModifiedHead)
            finishHead(request: request, date: date, into: &out)
            return Outcome(status: 304, siteLabel: label, bodyBytes: 0)
        }
        out.append(contentsOf: served.okHead)
        finishHead(request: request, date: date, into: &out)
        if isHead { return Outcome(status: 200, siteLabel: label, bodyBytes: 0) }
        if served.body.count > copyLimit {
            largeBody = served.body
        } else {
            out.append(contentsOf: served.body)
        }
        return Outcome(status: 200, siteLabel: label, bodyBytes: served.body.count)
    }

    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let closeLine = Array("Connection: close\r\n".utf8)
    private static let keepAliveLine = Array("Connection: keep-alive\r\n".utf8)

    /// The date, the connection header and the blank line that ends the head.
    static func finishHead(request: HTTPRequest?, date: [UInt8], into out: inout [UInt8]) {
        out.append(contentsOf: date)
        out.append(contentsOf: crlf)
        if let request, request.keepAlive {
            if request.version == .http10 { out.append(contentsOf: keepAliveLine) }
        } else {
            out.append(contentsOf: closeLine)
        }
        out.append(contentsOf: crlf)
    }

    /// A small text/plain response. Returns the number of body bytes written.
    @discardableResult
    static func simple(_ status: HTTPStatus, _ body: String, request: HTTPRequest?, date: [UInt8],
                       extraHeaders: String = "", contentType: String = "text/plain; charset=utf-8",
                       into out: inout [UInt8]) -> Int {
        let isHead = request?.method == .head
        let bodyBytes = Array(body.utf8)
        out.append(contentsOf: "\(status.statusLine)\r\nContent-Type: \(contentType)\r\nContent-Length: \(bodyBytes.count)\r\n\(extraHeaders)X-Content-Type-Options: nosniff\r\nDate: ".utf8)
        finishHead(request: request, date: date, into: &out)
        if isHead { return 0 }
        out.append(contentsOf: bodyBytes)
        return bodyBytes.count
    }
}

/// A connection's last host and what it resolved to. Keep-alive clients ask for the same host
/// again and again; comparing the string is cheaper than hashing it into the site index, and the
/// certificate check is done once per host, not once per request.
struct HostCache {
    private var host: String?
    private weak var snapshot: SiteSnapshot?
    private var entry: (name: SiteName, value: Site)?
    private var coveredHost: String?
    private weak var coveredCertificate: TLSCertificate?

    mutating func lookup(_ host: String, in snapshot: SiteSnapshot) -> (name: SiteName, value: Site)? {
        if self.host == host, self.snapshot === snapshot { return entry }
        self.host = host
        self.snapshot = snapshot
        entry = snapshot.index.lookup(host)
        return entry
    }

    mutating func certificateCovers(_ host: String, _ certificate: TLSCertificate?) -> Bool {
        guard let certificate else { return false }
        if coveredHost == host, coveredCertificate === certificate { return true }
        guard certificate.covers(host) else { return false }
        coveredHost = host
        coveredCertificate = certificate
        return true
    }
}
