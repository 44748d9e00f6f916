import AASATransport

/// What a handler may know of the connection a request came on, whatever its protocol.
struct ConnectionFacts {
    /// Which listener accepted it.
    let listener: ListenerKind
    /// The client's address: the peer's, or the one a PROXY header gave.
    var client: String
    /// For a TLS connection, the certificate it was handshaken with (SNI's choice).
    var certificate: TLSCertificate?

    var isTLS: Bool { listener == .https }
}
