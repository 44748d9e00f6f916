import AASACore
import AASAHTTP
import AASATransport
import AASASessions
#if canImport(Glibc)
import Glibc
#endif

/// The admin listener's write API (docs/platforms.md): sites' files and certificates put,
/// read and deleted by a platform's backend. A file is validated by the shared core exactly as
/// one read from disk and refused with its diagnostics; what is accepted is stored durably and
/// then goes through the one road every change takes (``SnapshotPublisher``), so this replica
/// serves it before the answer leaves. Runs on the admin listener's own loop: a write's
/// `fsync`s never hold up a client's request.
final class WriteAPI: Sendable {
    let tokens: APITokens
    let store: any SiteStore
    let publisher: SnapshotPublisher
    let state: ServerState
    let log: Log
    /// A file or certificate body larger than this is refused with 413 (the admin listener's
    /// sessions read at most this much, ``HTTP1Configuration/admin``).
    static let maximumBody = 1024 * 1024

    init(tokens: APITokens, store: any SiteStore, publisher: SnapshotPublisher, state: ServerState, log: Log) {
        self.tokens = tokens
        self.store = store
        self.publisher = publisher
        self.state = state
        self.log = log
    }

    /// Whether the path is the API's (with or without the API turned on).
    static func handles(_ path: String) -> Bool {
        path.hasPrefix("/sites/") || path == "/sites" || path.hasPrefix("/certificates/") || path == "/certificates"
    }

    /// Without `--admin-token-file`: the paths exist, and say how to turn them on.
    static func disabled(_ request: HTTPRequest) -> Answer {
        json(.forbidden, error: "the write API is off: start aasa serve with --admin-token-file FILE (one token a line) to turn it on",
             request: request)
    }

    func respond(to request: HTTPRequest) -> Answer {
        guard let name = tokens.authorize(request.authorization) else {
            let response = WriteAPI.json(.unauthorized, error: "a valid bearer token is required (Authorization: Bearer TOKEN)",
                                         request: request, extraFields: [("www-authenticate", "Bearer")])
            count(request, response)
            return response
        }
        let response = route(request, by: name)
        count(request, response)
        return response
    }

    private func count(_ request: HTTPRequest, _ response: Answer) {
        state.metrics.countAPIRequest(method: request.method.text, status: response.status)
    }

    private func route(_ request: HTTPRequest, by token: String) -> Answer {
        let parts = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        switch parts.first {
        case "sites":
            guard parts.count == 2 || parts.count == 3, !parts[1].isEmpty else {
                return WriteAPI.json(.badRequest, error: "the path is /sites/HOST/FILE or /sites/HOST", request: request)
            }
            let host = WriteAPI.decodeHost(parts[1])
            guard let site = SiteName(host), site.description == host else {
                return WriteAPI.json(.badRequest, error: "\(WriteAPI.quoted(host)) is not a site name: a lower-case host name without a port or trailing dot (IDN as punycode), or *. and one (%2A. in a path)", request: request)
            }
            // Refused as a new site; one there already (from before, or by SQL) can still be
            // read and deleted.
            if request.method.text == "PUT", let refusal = PublicSuffixes.system.refusal(of: site) {
                return WriteAPI.json(.badRequest, error: refusal, request: request)
            }
            if parts.count == 2 {
                guard request.method.text == "DELETE" else { return WriteAPI.notAllowed(request, allow: "DELETE") }
                return deleteSite(site, request: request, by: token)
            }
            guard let kind = AssociationFileKind.allCases.first(where: { $0.fileName == parts[2] }) else {
                let names = AssociationFileKind.allCases.map(\.fileName).joined(separator: ", ")
                return WriteAPI.json(.badRequest, error: "\(WriteAPI.quoted(parts[2])) is not an association file: one of \(names)", request: request)
            }
            switch request.method.text {
            case "GET", "HEAD": return getFile(site, kind, request: request)
            case "PUT": return putFile(site, kind, request: request, by: token)
            case "DELETE": return deleteFile(site, kind, request: request, by: token)
            default: return WriteAPI.notAllowed(request, allow: "GET, HEAD, PUT, DELETE")
            }
        case "certificates":
            guard parts.count == 2, WriteAPI.isCertificateName(parts[1]) else {
                return WriteAPI.json(.badRequest, error: "the path is /certificates/NAME, NAME letters, digits, '.', '-' and '_' (at most 200, not starting with '.')", request: request)
            }
            let name = parts[1]
            switch request.method.text {
            case "GET", "HEAD": return getCertificate(name, request: request)
            case "PUT": return putCertificate(name, request: request, by: token)
            case "DELETE": return deleteCertificate(name, request: request, by: token)
            default: return WriteAPI.notAllowed(request, allow: "GET, HEAD, PUT, DELETE")
            }
        default:
            return WriteAPI.json(.notFound, error: "the API's paths are /sites/HOST/FILE, /sites/HOST and /certificates/NAME", request: request)
        }
    }

    // MARK: - Files

    /// The version a stored file is (or would be) served with: its ETag.
    static func etag(_ bytes: [UInt8]) -> String { Digest.entityTag(bytes) }

    private func getFile(_ site: SiteName, _ kind: AssociationFileKind, request: HTTPRequest) -> Answer {
        let stored: [UInt8]?
        do { stored = try store.file(site, kind) } catch { return storeFailure(error, request: request) }
        guard let stored else { return WriteAPI.json(.notFound, error: "no \(kind.fileName) for \(site)", request: request) }
        let head = ResponseHead(status: .ok, fields: [("content-type", kind.contentType), ("etag", WriteAPI.etag(stored)),
                                                      ("cache-control", "no-store"), ("x-content-type-options", "nosniff")],
                                contentLength: stored.count)
        return Answer(Response(head: head, body: stored, sendsBody: request.method != .head), site: "")
    }

    private func putFile(_ site: SiteName, _ kind: AssociationFileKind, request: HTTPRequest, by token: String) -> Answer {
        let file = AssociationFile(kind: kind, bytes: request.body)
        guard file.isValid else {
            var w = JSONWriter()
            w.beginObject()
            w.key("error"); w.value("invalid")
            w.key("diagnostics"); w.write(file.diagnostics)
            w.endObject()
            return audit(request, site: site, kind: kind, by: token,
                         .message(.unprocessableContent, w.output + "\n", request: request, site: "", contentType: "application/json",
                                  extraFields: [("cache-control", "no-store")]))
        }
        let response = writing(site, kind, request: request) { (existing: [UInt8]?, scope: inout ReloadScope) throws(StoreError) -> Answer in
            scope = try store.putFile(site, kind, request.body)
            let etag = WriteAPI.etag(request.body)
            var w = JSONWriter()
            w.beginObject()
            w.key("host"); w.value(site.description)
            w.key("file"); w.value(kind.fileName)
            w.key("version"); w.value(String(etag.dropFirst().dropLast()))
            w.endObject()
            return .message(existing == nil ? .created : .ok, w.output + "\n", request: request, site: "", contentType: "application/json",
                            extraFields: [("etag", etag), ("cache-control", "no-store")])
        }
        return audit(request, site: site, kind: kind, by: token, response)
    }

    private func deleteFile(_ site: SiteName, _ kind: AssociationFileKind, request: HTTPRequest, by token: String) -> Answer {
        let response = writing(site, kind, request: request) { (existing: [UInt8]?, scope: inout ReloadScope) throws(StoreError) -> Answer in
            guard existing != nil, let deleted = try store.deleteFile(site, kind) else {
                return WriteAPI.json(.notFound, error: "no \(kind.fileName) for \(site)", request: request)
            }
            scope = deleted
            return WriteAPI.noContent(request)
        }
        return audit(request, site: site, kind: kind, by: token, response)
    }

    private func deleteSite(_ site: SiteName, request: HTTPRequest, by token: String) -> Answer {
        let response = serialWrite(request) { (scope: inout ReloadScope) throws(StoreError) -> Answer in
            if let ifMatch = request.ifMatch {
                // Any of the site's files with that version.
                var versions: [String] = []
                for kind in AssociationFileKind.allCases {
                    if let bytes = try store.file(site, kind) { versions.append(WriteAPI.etag(bytes)) }
                }
                guard versions.contains(where: { WriteAPI.matches(ifMatch, $0) }) else {
                    return WriteAPI.json(.preconditionFailed, error: "no file of \(site) has the version If-Match names", request: request)
                }
            }
            guard let deleted = try store.deleteSite(site) else {
                return WriteAPI.json(.notFound, error: "no site \(site)", request: request)
            }
            scope = deleted
            return WriteAPI.noContent(request)
        }
        return audit(request, target: site.description, by: token, response)
    }

    /// One write of a file: If-Match and If-None-Match decided against what is stored, under
    /// the same lock as the write, so two writers racing on one file get answers that are both
    /// true (docs/platforms.md, "Writing safely").
    private func writing(_ site: SiteName, _ kind: AssociationFileKind, request: HTTPRequest,
                         _ body: ([UInt8]?, inout ReloadScope) throws(StoreError) -> Answer) -> Answer {
        serialWrite(request) { (scope: inout ReloadScope) throws(StoreError) -> Answer in
            let existing = try store.file(site, kind)
            if let ifMatch = request.ifMatch {
                guard let existing, WriteAPI.matches(ifMatch, WriteAPI.etag(existing)) else {
                    let why = existing.map { "the stored version is \(WriteAPI.etag($0)), not the one If-Match names" }
                    return WriteAPI.json(.preconditionFailed, error: why ?? "no \(kind.fileName) for \(site) to match", request: request)
                }
            }
            if let ifNoneMatch = request.ifNoneMatch, WriteAPI.trimmedField(Substring(ifNoneMatch)) == "*", existing != nil {
                return WriteAPI.json(.preconditionFailed, error: "\(site)/\(kind.fileName) exists (If-None-Match: *)", request: request)
            }
            return try body(existing, &scope)
        }
    }

    /// Writes of this replica, one at a time: a condition checked and the write it guards are
    /// one step, in one transaction of the store (which, for PostgreSQL, also holds other
    /// replicas' writes to the same row back). What the write changed is published once the
    /// store has committed it, before the answer leaves.
    /// Counts the writes (not `Void`: see ``SnapshotPublisher``'s lock).
    private let writes = Locked<Int>(0)

    private func serialWrite(_ request: HTTPRequest, _ body: (inout ReloadScope) throws(StoreError) -> Answer) -> Answer {
        let outcome: Result<Answer, StoreError> = writes.withLock { count in
            count += 1
            do throws(StoreError) {
                var scope = ReloadScope()
                let response = try store.transaction { () throws(StoreError) -> Answer in try body(&scope) }
                if !scope.isEmpty { publisher.reload(scope) }
                return .success(response)
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let response): return response
        case .failure(let error): return storeFailure(error, request: request)
        }
    }

    private func storeFailure(_ error: StoreError, request: HTTPRequest) -> Answer {
        log.error("api: store: \(error.message)")
        if error.isCommitted {
            // The row is the store's now: the next pass of the store's follower reads it again.
            state.storeSync.withLock { $0 }?.retryCopy(error.uncopied)
            return WriteAPI.json(.internalServerError, error: "the write was committed to the store and the other replicas serve it, but this replica could not write its local copy (\(error.message)); it reads the store again and serves it once it can", request: request)
        }
        if error.isConflict {
            return WriteAPI.json(.conflict, error: error.message, request: request)
        }
        if error.isUnavailable {
            return WriteAPI.json(.serviceUnavailable, error: "the store is unreachable (\(error.message)); this replica keeps serving what it has, and takes writes again once it reconnects", request: request)
        }
        return WriteAPI.json(error.isFull ? .insufficientStorage : .internalServerError,
                             error: "the store refused the write: \(error.message); nothing served changed", request: request)
    }

    /// Whether an `If-Match` value names `etag` (or is `*`). An unquoted value is read as the
    /// quoted one: the `version` of an answer's JSON may be sent back as it is.
    static func matches(_ field: String, _ etag: String) -> Bool {
        for candidate in field.split(separator: ",") {
            let tag = trimmedField(candidate)
            if tag == "*" || tag == etag { return true }
            if !tag.hasPrefix("\""), etag.utf8.count == tag.utf8.count + 2, etag.dropFirst().dropLast() == tag { return true }
        }
        return false
    }

    // MARK: - Certificates

    private func getCertificate(_ name: String, request: HTTPRequest) -> Answer {
        let chain: String?
        do { chain = try store.certificateChain(name) } catch { return storeFailure(error, request: request) }
        guard let chain else { return WriteAPI.json(.notFound, error: "no certificate \(name)", request: request) }
        var w = JSONWriter()
        w.beginObject()
        w.key("name"); w.value(name)
        if let loaded = state.snapshots.load().0.certificates.certificate(named: name) {
            WriteAPI.writeIdentity(loaded, to: &w)
        }
        w.key("certificate"); w.value(chain)
        w.endObject()
        return .message(.ok, w.output + "\n", request: request, site: "", contentType: "application/json", extraFields: [("cache-control", "no-store")])
    }

    private static func writeIdentity(_ cert: TLSCertificate, to w: inout JSONWriter) {
        w.key("dnsNames")
        w.beginArray()
        for name in cert.dnsNames { w.value(name) }
        w.endArray()
        w.key("notAfter"); w.value(HTTPDate.iso8601(milliseconds: Int64(cert.notAfter) * 1000))
    }

    private func putCertificate(_ name: String, request: HTTPRequest, by token: String) -> Answer {
        let parsed = JSONParser.parse(request.body)
        guard parsed.diagnostics.allSatisfy({ $0.severity != .error }), let value = parsed.value,
              let chain = value["certificate"]?.stringValue, let key = value["key"]?.stringValue else {
            return audit(request, target: "certificate " + name, by: token,
                         WriteAPI.json(.badRequest, error: "the body is a JSON object {\"certificate\": \"PEM chain, leaf first\", \"key\": \"PEM private key\"}", request: request))
        }
        let checked: TLSCertificate
        switch CertificateCheck.check(name: name, chain: chain, key: key) {
        case .failure(let message):
            return audit(request, target: "certificate " + name, by: token,
                         WriteAPI.json(.unprocessableContent, error: message, request: request))
        case .success(let cert):
            checked = cert
        }
        let response = serialWrite(request) { (scope: inout ReloadScope) throws(StoreError) -> Answer in
            let existing = try store.certificateChain(name)
            if let ifMatch = request.ifMatch {
                guard let existing, WriteAPI.matches(ifMatch, WriteAPI.etag(Array(existing.utf8))) else {
                    return WriteAPI.json(.preconditionFailed, error: "the stored certificate is not the one If-Match names", request: request)
                }
            }
            if request.ifNoneMatch.map({ WriteAPI.trimmedField(Substring($0)) }) == "*", existing != nil {
                return WriteAPI.json(.preconditionFailed, error: "certificate \(name) exists (If-None-Match: *)", request: request)
            }
            scope = try store.putCertificate(name, chain: chain, key: key)
            var w = JSONWriter()
            w.beginObject()
            w.key("name"); w.value(name)
            WriteAPI.writeIdentity(checked, to: &w)
            w.endObject()
            return .message(existing == nil ? .created : .ok, w.output + "\n", request: request, site: "", contentType: "application/json",
                            extraFields: [("etag", WriteAPI.etag(Array(chain.utf8))), ("cache-control", "no-store")])
        }
        return audit(request, target: "certificate " + name, by: token, response)
    }

    private func deleteCertificate(_ name: String, request: HTTPRequest, by token: String) -> Answer {
        if name == state.adminTLS {
            // Deleting it would close the admin listener, and this API with it, on every replica.
            return audit(request, target: "certificate " + name, by: token,
                         WriteAPI.json(.conflict, error: "certificate \(name) is the admin listener's own (--admin-tls \(name)) and cannot be deleted; replace it with PUT instead", request: request))
        }
        let response = serialWrite(request) { (scope: inout ReloadScope) throws(StoreError) -> Answer in
            let existing = try store.certificateChain(name)
            if let ifMatch = request.ifMatch {
                guard let existing, WriteAPI.matches(ifMatch, WriteAPI.etag(Array(existing.utf8))) else {
                    return WriteAPI.json(.preconditionFailed, error: "the stored certificate is not the one If-Match names", request: request)
                }
            }
            guard let deleted = try store.deleteCertificate(name) else {
                return WriteAPI.json(.notFound, error: "no certificate \(name)", request: request)
            }
            scope = deleted
            return WriteAPI.noContent(request)
        }
        return audit(request, target: "certificate " + name, by: token, response)
    }

    static func isCertificateName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 200 && !name.hasPrefix(".")
            && name.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2E || $0 == 0x2D || $0 == 0x5F }
    }

    // MARK: - Answers

    /// The audit line of a write (reads are not logged): `api: PUT example.com/FILE by NAME: 201 "ETAG"`.
    private func audit(_ request: HTTPRequest, site: SiteName, kind: AssociationFileKind, by token: String, _ response: Answer) -> Answer {
        audit(request, target: "\(site)/\(kind.fileName)", by: token, response)
    }

    private func audit(_ request: HTTPRequest, target: String, by token: String, _ response: Answer) -> Answer {
        let etag = WriteAPI.etagField(of: response.response.head)
        let message = "api: \(request.method.text) \(target) by \(token): \(response.status)" + (etag.map { " " + $0 } ?? "")
        let level: Log.Level = response.status < 400 ? .info : .warning
        guard log.format == .json else {
            if level == .info { log.info(message) } else { log.warning(message) }
            return response
        }
        guard level >= log.minimum else { return response }
        var w = JSONWriter()
        w.beginObject()
        w.key("time"); w.value(HTTPDate.iso8601(milliseconds: wallClockMilliseconds()))
        w.key("level"); w.value(level.rawValue)
        w.key("message"); w.value(message)
        w.key("method"); w.value(request.method.text)
        w.key("target"); w.value(target)
        w.key("token"); w.value(token)
        w.key("status"); w.value(response.status)
        w.key("etag"); w.value(etag)
        w.endObject()
        LogStream.standardError.write(w.output + "\n")
        return response
    }

    /// The ETag a prepared head carries, read back from its HTTP/1.1 bytes (for the audit line).
    private static func etagField(of head: ResponseHead) -> String? {
        let marker = Array("\r\nETag: ".utf8)
        let bytes = head.http1
        guard bytes.count > marker.count, let i = (0...(bytes.count - marker.count)).first(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }) else {
            return nil
        }
        let value = bytes[(i + marker.count)...].prefix { $0 != 0x0D }
        return String(decoding: value, as: UTF8.self)
    }

    static func json(_ status: HTTPStatus, error: String, request: HTTPRequest,
                     extraFields: [(name: String, value: String)] = []) -> Answer {
        .message(status, ErrorDocument.json(error) + "\n", request: request, site: "", contentType: "application/json",
                 extraFields: [("cache-control", "no-store")] + extraFields)
    }

    private static func notAllowed(_ request: HTTPRequest, allow: String) -> Answer {
        json(.methodNotAllowed, error: "\(request.method.text) is not allowed here: \(allow)", request: request, extraFields: [("allow", allow)])
    }

    private static func noContent(_ request: HTTPRequest) -> Answer {
        Answer(Response(head: ResponseHead(status: .noContent, fields: [("cache-control", "no-store")], contentLength: nil),
                        body: [], sendsBody: false), site: "")
    }

    /// `%2A.example.org` → `*.example.org`; any other escape is left as it is (and refused as a host).
    static func decodeHost(_ segment: String) -> String {
        var s = segment
        if s.hasPrefix("%2A") || s.hasPrefix("%2a") { s = "*" + s.dropFirst(3) }
        return s
    }

    /// `"*"`-style field values without the white space around them.
    private static func trimmedField(_ s: Substring) -> Substring {
        var s = s
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }

    /// A peer's text in a message: quoted, control characters escaped, bounded.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars.prefix(200) {
            if scalar.value < 0x20 || scalar.value == 0x7F { out += "\\u{\(String(scalar.value, radix: 16))}" } else { out.unicodeScalars.append(scalar) }
        }
        return out + "\""
    }
}
