/// The statuses this server sends, with their reason phrases (RFC 9110 §15).
public enum HTTPStatus: Int, Sendable, CaseIterable {
    case ok = 200
    case created = 201
    case noContent = 204
    case notModified = 304
    case badRequest = 400
    case unauthorized = 401
    case forbidden = 403
    case notFound = 404
    case methodNotAllowed = 405
    case requestTimeout = 408
    case conflict = 409
    case lengthRequired = 411
    case preconditionFailed = 412
    case payloadTooLarge = 413
    case uriTooLong = 414
    case misdirectedRequest = 421
    case unprocessableContent = 422
    case requestHeaderFieldsTooLarge = 431
    case internalServerError = 500
    case notImplemented = 501
    case serviceUnavailable = 503
    case httpVersionNotSupported = 505
    case insufficientStorage = 507

    public var reason: String {
        switch self {
        case .ok: return "OK"
        case .created: return "Created"
        case .noContent: return "No Content"
        case .unauthorized: return "Unauthorized"
        case .forbidden: return "Forbidden"
        case .lengthRequired: return "Length Required"
        case .preconditionFailed: return "Precondition Failed"
        case .unprocessableContent: return "Unprocessable Content"
        case .insufficientStorage: return "Insufficient Storage"
        case .notModified: return "Not Modified"
        case .badRequest: return "Bad Request"
        case .notFound: return "Not Found"
        case .methodNotAllowed: return "Method Not Allowed"
        case .requestTimeout: return "Request Timeout"
        case .conflict: return "Conflict"
        case .payloadTooLarge: return "Content Too Large"
        case .uriTooLong: return "URI Too Long"
        case .misdirectedRequest: return "Misdirected Request"
        case .requestHeaderFieldsTooLarge: return "Request Header Fields Too Large"
        case .internalServerError: return "Internal Server Error"
        case .notImplemented: return "Not Implemented"
        case .serviceUnavailable: return "Service Unavailable"
        case .httpVersionNotSupported: return "HTTP Version Not Supported"
        }
    }

    /// `HTTP/1.1 404 Not Found`
    public var statusLine: String { "HTTP/1.1 \(rawValue) \(reason)" }
}

/// A request the server refuses before it reaches a handler: the status to answer with and
/// why. Every such error closes the connection, since the framing of what follows is unknown.
public struct HTTPError: Error, Sendable, Equatable {
    public var status: HTTPStatus
    public var reason: String

    public init(_ status: HTTPStatus, _ reason: String) {
        self.status = status
        self.reason = reason
    }
}
