/// Settings of the transport layer (docs/serving.md, docs/deployment.md for PROXY protocol), times
/// in milliseconds.
public struct TransportConfiguration: Sendable {
    /// A TLS handshake (and a PROXY header) must be complete within this time.
    public var handshakeTimeout: Int64 = 10_000
    /// How long a closing connection reads and discards, waiting for the client to close after
    /// our last response (RFC 9112 §9.6).
    public var lingerTimeout: Int64 = 2_000
    /// Expect a PROXY protocol header on HTTPS and HTTP connections (never on admin ones).
    public var proxyProtocol = false
    /// A connection whose unsent output makes no progress for this long is closed (a client
    /// that stopped reading).
    public var writeStallTimeout: Int64 = 60_000
    /// OpenSSL gives a TLS connection's record buffers (some 34 KB) back after each record
    /// (SSL_MODE_RELEASE_BUFFERS), which costs a busy connection some 900 instructions a
    /// request. One idle twice within this time keeps them until it has been idle this long.
    public var idleBufferRelease: Int64 = 20
    /// Connections one client address may hold at once (docs/serving.md); 0 = no limit. nil: 256 on
    /// HTTPS listeners and on any listener with PROXY protocol, none on a plain HTTP listener
    /// (usually behind a balancer whose one address carries every client).
    public var maxConnectionsPerClient: Int?

    /// The per-client limit on a listener, or nil for none. The admin listener has none.
    package func perClientLimit(_ listener: ListenerKind) -> Int? {
        guard listener != .admin else { return nil }
        if let limit = maxConnectionsPerClient { return limit == 0 ? nil : limit }
        return listener == .https || proxyProtocol ? 256 : nil
    }

    public init() {}
}
