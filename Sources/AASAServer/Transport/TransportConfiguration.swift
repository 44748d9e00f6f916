/// Settings of the transport layer (SPEC 3.3, 3.7), times in milliseconds.
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

    public init() {}
}
