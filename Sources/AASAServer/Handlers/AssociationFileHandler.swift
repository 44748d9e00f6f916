import AASACore
import AASAHTTP
import AASATransport
import AASASessions

/// The association files of the configured sites (docs/serving.md, "Responses"): picks the site by
/// host, checks the connection's certificate covers it, and answers with the site's prepared
/// response.
enum AssociationFileHandler {
    /// The kind of association file a path names (docs/serving.md, "Responses"), or nil. The AASA
    /// file is also served at the root, where iOS looked for it before `/.well-known/`.
    static func kind(of path: String) -> AssociationFileKind? {
        // Compared by length first. The parsers hand out these same Strings for these paths
        // (`InternedTargets`), which `==` finds equal at once.
        let count = path.utf8.count
        for (served, kind) in AssociationFileKind.servedPaths where served.utf8.count == count && served == path { return kind }
        return nil
    }

    /// The 404 body of a file that is there but refused: what a person with curl, or `aasa check`,
    /// needs to tell it from a missing file, and the first reason. A refusal names only its code
    /// (its message may hold a local path or errno text).
    static func rejectedMessage(_ file: SiteFile) -> String {
        var text = "this site's \(file.kind.fileName) has errors and is not served"
        if let error = file.error {
            text += "; first: \(error.line):\(error.column): \(error.message) [\(error.code.rawValue)]"
        } else if let refusal = file.refusal {
            text += "; the file was refused [\(refusal.code)]"
        }
        return text.escapingControlCharacters + "\n"
    }

    static func isAssociationPath(_ path: String) -> Bool {
        kind(of: path) != nil
    }

    /// - Parameter dev: development mode, where an unknown host's 404 lists the hosts that are
    ///   configured.
    static func respond(to request: HTTPRequest, snapshot: SiteSnapshot, connection: ConnectionFacts,
                        cache: inout HostCache, dev: Bool = false) -> Answer {
        let kind = kind(of: request.path)
        let file = RequestedFile(kind)
        guard let host = request.host, let (name, site) = cache.lookup(host, in: snapshot) else {
            let text = dev ? DevelopmentMode.unknownHostMessage(host: request.host ?? "(none)", snapshot: snapshot) : "unknown host\n"
            return .message(.notFound, text, request: request, site: "unknown", file: file)
        }
        let label = name.description
        // The connection's certificate does not name this host: the client reached us with a
        // connection meant for another site (RFC 9110 §15.5.20).
        if connection.isTLS, !cache.certificateCovers(host, connection.certificate) {
            return .message(.misdirectedRequest, "this connection's certificate does not cover \(host)\n", request: request, site: label, file: file)
        }
        guard let kind else {
            return .message(.notFound, "not found\n", request: request, site: label)
        }
        guard request.method == .get || request.method == .head else {
            return .message(.methodNotAllowed, "only GET and HEAD\n", request: request, site: label, file: file,
                            extraFields: [("allow", "GET, HEAD")])
        }
        guard let siteFile = site.file(kind) else {
            return .message(.notFound, "not found\n", request: request, site: label, file: file)
        }
        guard let served = siteFile.served else {
            return .message(.notFound, rejectedMessage(siteFile), request: request, site: label, file: file)
        }
        if served.isNotModified(ifNoneMatch: request.ifNoneMatch, ifModifiedSince: request.ifModifiedSince) {
            return Answer(Response(head: served.notModifiedHead, body: [], sendsBody: false), site: label, file: file)
        }
        return Answer(Response(head: served.okHead, body: served.body, sendsBody: request.method != .head), site: label, file: file)
    }
}

/// A connection's last host and what it resolved to. Keep-alive clients ask for the same host
/// again and again; comparing the string is cheaper than hashing it into the site index, and the
/// certificate check is done once per host, not once per request.
///
/// No weak references: a weak reference gives its object a side table, and every retain and
/// release of an object with one takes the runtime's slow path (the snapshot and the
/// certificate are retained several times a request; some 500 instructions an HTTP/2 request,
/// callgrind). The snapshot is told apart by its loop's serial (``LoopContext/snapshotSerial``),
/// and the certificate is the connection's own, which the connection holds anyway.
struct HostCache {
    private var host: String?
    private var entry: (name: SiteName, value: Site)?
    /// The loop's snapshot serial the entry was looked up in.
    private var snapshotSerial = -1
    private var coveredHost: String?
    private var coveredCertificate: TLSCertificate?

    /// The loop is at snapshot `serial`: an entry looked up in another one is forgotten.
    /// Called by the dispatcher before each request, so a lookup is always in the current one.
    mutating func follow(snapshot serial: Int) {
        guard serial != snapshotSerial else { return }
        snapshotSerial = serial
        host = nil
        entry = nil
    }

    /// The site for `host` in `snapshot`, the one the loop's serial given to
    /// ``follow(snapshot:)`` names.
    mutating func lookup(_ host: String, in snapshot: SiteSnapshot) -> (name: SiteName, value: Site)? {
        if self.host == host { return entry }
        self.host = host
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
