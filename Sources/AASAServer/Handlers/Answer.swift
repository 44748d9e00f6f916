import AASACore
import AASAHTTP
import AASASessions

/// What a handler answers: the response the session writes, and the labels the metrics count
/// it under (the sessions know neither).
struct Answer {
    let response: Response
    /// The site's name, or "unknown" when the host is not configured (a fixed label set keeps
    /// the metrics' cardinality bounded whatever hosts clients send); "" for admin requests.
    let site: String
    /// The file the request asked for, the metrics' `file` label.
    let file: RequestedFile

    @inline(__always)
    init(_ response: Response, site: String, file: RequestedFile = .other) {
        self.response = response
        self.site = site
        self.file = file
    }

    var status: Int { response.status }

    /// A message made for this request (`text/plain` unless told otherwise).
    static func message(_ status: HTTPStatus, _ text: String, request: HTTPRequest?, site: String,
                        file: RequestedFile = .other, contentType: String = "text/plain; charset=utf-8",
                        extraFields: [(name: String, value: String)] = []) -> Answer {
        Answer(Response.message(status, text, request: request, contentType: contentType, extraFields: extraFields), site: site, file: file)
    }
}

/// The file a request asked for, as `/metrics` names it: one of the association files, or
/// `other` for any other path (a fixed label set, whatever paths clients send). A small integer,
/// so counting a request indexes an array instead of building a label.
enum RequestedFile: Int, CaseIterable, Sendable {
    case aasa
    case assetLinks
    case merchantID
    case webAuthn
    case other

    init(_ kind: AssociationFileKind?) {
        switch kind {
        case .aasa: self = .aasa
        case .assetLinks: self = .assetLinks
        case .merchantID: self = .merchantID
        case .webAuthn: self = .webAuthn
        case nil: self = .other
        }
    }

    /// The `file` label: the association file's name (`apple-app-site-association`, …) or `other`.
    var label: String {
        switch self {
        case .aasa: return AssociationFileKind.aasa.fileName
        case .assetLinks: return AssociationFileKind.assetLinks.fileName
        case .merchantID: return AssociationFileKind.merchantID.fileName
        case .webAuthn: return AssociationFileKind.webAuthn.fileName
        case .other: return "other"
        }
    }
}

extension InternedTargets {
    /// The paths the association files are served at (``AssociationFileKind/servedPaths``),
    /// handed to every session: a request for one of them makes no String.
    static let associationFiles = InternedTargets(AssociationFileKind.servedPaths.map(\.path))
}
