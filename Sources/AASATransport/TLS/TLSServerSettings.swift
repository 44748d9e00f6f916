import COpenSSL

/// The server's side of TLS, one per server: how its certificates' contexts are made (ALPN) and
/// what their callbacks consult. Given to every TLS connection's handshake (``HandshakeData``)
/// and to every context made from it, so no callback reaches for a process-wide value.
final package class TLSServerSettings: Sendable {
    /// Whether ALPN offers `h2` before `http/1.1` (docs/serving.md, "HTTP/2": `--http2 off`
    /// offers `http/1.1` only).
    package let offersHTTP2: Bool
    /// With `--acme`: the pending TLS-ALPN-01 challenges and the names asked for that no
    /// certificate covers.
    package let challenges: (any TLSChallenges)?
    /// The contexts made so far, bounded.
    let contexts: TLSContextCache

    package init(offersHTTP2: Bool, challenges: (any TLSChallenges)? = nil, contextCapacity: Int = TLSContextCache.defaultCapacity) {
        self.offersHTTP2 = offersHTTP2
        self.challenges = challenges
        self.contexts = TLSContextCache(capacity: contextCapacity)
    }
}

/// What ACME asks of every handshake (docs/acme.md): the ACME side implements it, the TLS layer
/// calls it and knows nothing more of ACME.
package protocol TLSChallenges: AnyObject, Sendable {
    /// Called with each ClientHello, before the ServerName and ALPN steps: a ClientHello for a
    /// pending TLS-ALPN-01 challenge (RFC 8737 §3) is moved to that challenge's context here.
    func clientHello(_ ssl: OpaquePointer)
    /// A client asked for a name no certificate covers (it goes to the front of the order queue).
    func uncovered(serverName: String)
}

/// The two ex-data slots of a server connection's SSL during its handshake: the certificates
/// of the snapshot it started in (slot 0) and the server's ``TLSServerSettings`` (slot 1). The
/// connection holds both references until the handshake is over, then clears the slots.
package enum HandshakeData {
    static package func set(_ ssl: OpaquePointer, certificates: CertificateStore, settings: TLSServerSettings) {
        _ = SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(certificates).toOpaque())
        _ = SSL_set_ex_data(ssl, 1, Unmanaged.passUnretained(settings).toOpaque())
    }

    static func clear(_ ssl: OpaquePointer) {
        _ = SSL_set_ex_data(ssl, 0, nil)
        _ = SSL_set_ex_data(ssl, 1, nil)
    }

    static package func certificates(_ ssl: OpaquePointer) -> CertificateStore? {
        SSL_get_ex_data(ssl, 0).map { Unmanaged<CertificateStore>.fromOpaque($0).takeUnretainedValue() }
    }

    static package func settings(_ ssl: OpaquePointer) -> TLSServerSettings? {
        SSL_get_ex_data(ssl, 1).map { Unmanaged<TLSServerSettings>.fromOpaque($0).takeUnretainedValue() }
    }
}

/// The ClientHello callback of every serving context: hands the ClientHello to the server's
/// ``TLSChallenges`` when it has any; any other ClientHello goes on untouched.
package let tlsClientHelloCallback: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?) -> Int32 = { ssl, _, _ in
    if let ssl, let challenges = HandshakeData.settings(ssl)?.challenges { challenges.clientHello(ssl) }
    return Int32(SSL_CLIENT_HELLO_SUCCESS)
}
