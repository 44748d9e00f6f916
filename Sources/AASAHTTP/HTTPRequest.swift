/// Limits on what a client may send (docs/serving.md, "HTTP/1.1 and limits"). The defaults are the
/// contract.
public struct HTTPLimits: Sendable {
    /// A request line longer than this is answered with 414.
    public var maxRequestLine = 8 * 1024
    /// A header section (request line included) longer than this is answered with 431.
    public var maxHeaderBytes = 16 * 1024
    /// More header fields than this is answered with 431.
    public var maxHeaderFields = 100
    /// A body up to this size is read and discarded; a larger one is answered with 413.
    public var maxBody = 64 * 1024

    public init() {}
}

public enum HTTPVersion: Sendable, Equatable {
    case http10
    case http11
    /// A stream of an HTTP/2 connection (RFC 9113); never produced by this parser.
    case http2

    /// As the access log writes it.
    public var text: String {
        switch self {
        case .http10: return "HTTP/1.0"
        case .http11: return "HTTP/1.1"
        case .http2: return "HTTP/2.0"
        }
    }
}

public enum HTTPMethod: Sendable, Equatable {
    case get
    case head
    case other(String)

    public var text: String {
        switch self {
        case .get: return "GET"
        case .head: return "HEAD"
        case .other(let m): return m
        }
    }
}

/// A parsed request head: only what this server acts on or logs.
public struct HTTPRequest: Sendable, Equatable {
    public var method: HTTPMethod
    /// The request target as sent.
    public var target: String
    /// The path of the target, without the query: `/.well-known/apple-app-site-association`.
    public var path: String
    /// From the absolute-form target, else the `Host` field: lower case, no port, no trailing dot.
    public var host: String?
    public var version: HTTPVersion
    /// Whether the connection may carry another request after this one.
    public var keepAlive: Bool
    public var ifNoneMatch: String?
    public var ifModifiedSince: String?
    public var userAgent: String?
    /// Body bytes that follow the head (from `Content-Length`), to be read and discarded.
    public var contentLength: Int
    /// A `Transfer-Encoding` body: its end cannot be found without decoding it, so the
    /// connection closes after the response.
    public var hasUnframedBody: Bool
    /// `Authorization` and `If-Match`: read by the admin listener's write API (docs/platforms.md).
    public var authorization: String?
    public var ifMatch: String?
    /// The request carries ``RequestParser/ownCheckField``: `aasa check` or `aasa monitor`
    /// asking as Apple's bot, not Apple's bot (docs/apple-view.md, "Fetch record").
    public var isOwnCheck: Bool
    /// The body, for a session that keeps bodies (the admin listener); empty otherwise.
    public var body: [UInt8]
    /// An HTTP/1.1 request with `Expect: 100-continue`: the client waits for `100 Continue`
    /// (or the final answer) before it sends its body (RFC 9110 §10.1.1).
    public var expectsContinue: Bool

    /// A request to be filled in by ``RequestParser/parse(_:into:)``: `GET /`, no fields.
    public init() {
        method = .get
        target = "/"
        path = "/"
        host = nil
        version = .http11
        keepAlive = true
        ifNoneMatch = nil
        ifModifiedSince = nil
        userAgent = nil
        contentLength = 0
        hasUnframedBody = false
        authorization = nil
        ifMatch = nil
        isOwnCheck = false
        body = []
        expectsContinue = false
    }

    public init(method: HTTPMethod, target: String, path: String, host: String?, version: HTTPVersion,
                keepAlive: Bool, ifNoneMatch: String? = nil, ifModifiedSince: String? = nil,
                userAgent: String? = nil, contentLength: Int = 0, hasUnframedBody: Bool = false,
                authorization: String? = nil, ifMatch: String? = nil, isOwnCheck: Bool = false) {
        self.method = method
        self.target = target
        self.path = path
        self.host = host
        self.version = version
        self.keepAlive = keepAlive
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
        self.userAgent = userAgent
        self.contentLength = contentLength
        self.hasUnframedBody = hasUnframedBody
        self.authorization = authorization
        self.ifMatch = ifMatch
        self.isOwnCheck = isOwnCheck
        self.body = []
        self.expectsContinue = false
    }
}
