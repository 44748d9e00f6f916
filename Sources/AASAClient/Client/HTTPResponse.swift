import AASAHTTP
import AASATransport

/// A request for ``HTTPSClient``: any method, extra header fields, a body (the ACME client
/// POSTs JWS bodies with `Content-Type: application/jose+json`).
public struct HTTPClientRequest: Sendable {
    public var method: String
    public var url: HTTPURL
    /// Sent after `Host` (always the URL's); one named `User-Agent`, `Accept` or `Connection`
    /// replaces the default, and `Content-Length` is always computed from `body`.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String = "GET", url: HTTPURL, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The bytes on the wire: one request, then the server closes (`Connection: close`), so a
    /// body without framing is read to the end of the connection.
    func serialized(userAgent: String) -> [UInt8] {
        let given = Set(headers.map { $0.name.lowercased() })
        var text = "\(method) \(url.target) HTTP/1.1\r\nHost: \(url.hostField)\r\n"
        if !given.contains("user-agent") { text += "User-Agent: \(userAgent)\r\n" }
        if !given.contains("accept") { text += "Accept: */*\r\n" }
        if !given.contains("connection") { text += "Connection: close\r\n" }
        for (name, value) in headers where !["content-length", "host"].contains(name.lowercased()) {
            text += "\(name): \(value)\r\n"
        }
        // POST and PUT always say their length, even an empty one (RFC 9110 §8.6).
        if !body.isEmpty || method == "POST" || method == "PUT" { text += "Content-Length: \(body.count)\r\n" }
        text += "\r\n"
        return Array(text.utf8) + body
    }
}

/// What the TLS handshake settled, for reporting (`aasa check`'s `tls` line).
public struct TLSSummary: Sendable, Equatable {
    /// `TLSv1.3`, `TLSv1.2`.
    public var protocolVersion: String
    /// OpenSSL's verdict on the chain and name ("certificate has expired", "hostname
    /// mismatch", "unable to get local issuer certificate"), nil when it verified.
    public var verificationFailure: String?
    /// The server certificate's notAfter, seconds since 1970.
    public var peerNotAfter: Int?
    public var negotiatedProtocol: String?
}

/// A whole response: head, body (de-chunked, at most the configured limit), and how it came.
public struct HTTPResponse: Sendable {
    public var head: HTTPResponseHead
    public var body: [UInt8]
    /// The address the connection went to.
    public var address: SocketAddress
    /// nil for `http://`.
    public var tls: TLSSummary?

    public var status: Int { head.status }

    /// The first header field named `name`, case-insensitive.
    public subscript(name: String) -> String? { head[name] }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}

/// Why an exchange failed, and in which phase, so a caller can say which step broke.
public struct HTTPClientError: Error, CustomStringConvertible, Sendable {
    public enum Phase: String, Sendable {
        case resolve
        case connect
        case tls
        /// Sending the request or reading the response.
        case response
    }

    public var phase: Phase
    public var message: String
    public var isTimeout = false
    /// Set once the handshake finished (a certificate that does not verify, a bad response).
    public var tls: TLSSummary?
    /// Set when the head arrived before the failure (a body over the limit).
    public var head: HTTPResponseHead?
    public var parseError: ResponseParseError?
    /// Bytes of a response arrived before the failure: the peer was reached and answered, with
    /// something that is no usable HTTP response (not HTTP, a head over the limit, cut short).
    /// `aasa entitlements --live` calls such a host `no-file`, not `unreachable` (docs/check.md).
    public var answered = false

    public var description: String { message }
}
