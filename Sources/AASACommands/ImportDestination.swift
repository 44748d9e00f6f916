import AASACore
import AASAClient
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// Where `aasa import` writes: a config directory's site folders (`--to DIR`, in the layout
/// `aasa serve --config` reads), or a running server's write API (`--admin URL`).
package enum ImportDestination: Sendable {
    case folders(String)
    case api(AdminClient)

    /// What the destination holds for a file now.
    struct Held {
        var bytes: [UInt8]
        /// The entity tag it is (or would be) served with, unquoted.
        var version: String
    }

    /// How a write ended.
    enum Written {
        case written(version: String)
        /// Something was there already (the API's `412` to `If-None-Match: *`).
        case exists
        /// The server refused the file (`422`), with its findings.
        case refused([AdminAnswer.Finding])
        case failed(String)
    }

    struct Failure: Error {
        var message: String
    }

    /// The version a server serves these bytes with (docs/serving.md, "Responses").
    static func version(_ bytes: [UInt8]) -> String { String(Digest.entityTag(bytes).dropFirst().dropLast()) }

    /// Where a file of `host` is, for messages: `DIR/HOST/FILE`, or the API's URL.
    func place(_ host: String, _ kind: AssociationFileKind) -> String {
        switch self {
        case .folders(let dir): return "\(dir)/\(host)/\(kind.fileName)"
        case .api(let client): return "\(client.base)\(AdminClient.sitePath(SiteName(host)!, kind))"
        }
    }

    /// The file held now, nil when there is none.
    func held(_ host: String, _ kind: AssociationFileKind) throws(Failure) -> Held? {
        switch self {
        case .folders:
            let path = place(host, kind)
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT || errno == ENOTDIR { return nil }
                throw Failure(message: "cannot read \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(fd) }
            var st = stat()
            guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
                throw Failure(message: "\(path) is not a regular file")
            }
            switch FileContents.read(fd, expectedSize: Int(st.st_size), limit: 16 * 1024 * 1024) {
            case .success(let bytes): return Held(bytes: bytes, version: ImportDestination.version(bytes))
            case .failure(let error): throw Failure(message: "cannot read \(path): \(error)")
            }
        case .api(let client):
            let response: HTTPResponse
            do { response = try client.get(SiteName(host)!, kind) } catch {
                throw Failure(message: "no answer from the admin listener at \(client.base) to GET \(AdminClient.sitePath(SiteName(host)!, kind)): \(error.message)")
            }
            if response.status == 404 { return nil }
            guard response.status == 200 else {
                throw Failure(message: "the admin listener answered \(response.head.statusText) to GET \(AdminClient.sitePath(SiteName(host)!, kind))\(ImportDestination.said(response))")
            }
            let version = response["ETag"].map(ImportDestination.unquoted) ?? ImportDestination.version(response.body)
            return Held(bytes: response.body, version: version)
        }
    }

    /// Writes the file; `replace: false` stores it only where there is none yet.
    func write(_ host: String, _ kind: AssociationFileKind, _ bytes: [UInt8], replace: Bool) -> Written {
        switch self {
        case .folders(let dir):
            let folder = dir + "/" + host
            do {
                try DurableFile.makeFolder(folder, in: dir)
                try DurableFile.write(bytes, to: kind.fileName, in: folder, mode: 0o644)
            } catch {
                return .failed("cannot write \(place(host, kind)): \(error.call): \(String(cString: strerror(error.errno)))")
            }
            return .written(version: ImportDestination.version(bytes))
        case .api(let client):
            let path = AdminClient.sitePath(SiteName(host)!, kind)
            let response: HTTPResponse
            do {
                response = try client.put(SiteName(host)!, kind, body: bytes, ifNoneMatch: replace ? nil : "*")
            } catch {
                return .failed("no answer from the admin listener at \(client.base) to PUT \(path): \(error.message)")
            }
            switch response.status {
            case 200, 201:
                let version = AdminAnswer.version(response.body) ?? response["ETag"].map(ImportDestination.unquoted) ?? ImportDestination.version(bytes)
                return .written(version: version)
            case 412:
                return .exists
            case 422:
                return .refused(AdminAnswer.findings(response.body) ?? [])
            default:
                return .failed("the admin listener answered \(response.head.statusText) to PUT \(path)\(ImportDestination.said(response))")
            }
        }
    }

    /// `: MESSAGE` from a JSON error answer, else nothing.
    static func said(_ response: HTTPResponse) -> String {
        AdminAnswer.errorMessage(response.body).map { ": " + $0 } ?? ""
    }

    static func unquoted(_ etag: String) -> String {
        var s = Substring(etag)
        if s.hasPrefix("W/") { s = s.dropFirst(2) }
        if s.count >= 2, s.hasPrefix("\""), s.hasSuffix("\"") { s = s.dropFirst().dropLast() }
        return String(s)
    }
}
