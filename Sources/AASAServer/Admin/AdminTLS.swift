import AASATransport
import COpenSSL

/// The admin listener over HTTPS (`--admin-tls NAME`, docs/platforms.md): the certificate named
/// NAME, whichever name a client asks for, and a context of its own that offers `http/1.1`
/// only (the admin listener speaks no HTTP/2). One per loop, touched by its thread only; made
/// again when a reload replaced the certificate.
final class AdminTLS {
    let name: String
    /// ALPN `http/1.1` only, no ACME challenges.
    let settings = TLSServerSettings(offersHTTP2: false, challenges: nil, contextCapacity: 4)
    private var made: (certificate: TLSCertificate, context: OpaquePointer)?

    init(name: String) { self.name = name }

    deinit {
        if let made { SSL_CTX_free(made.context) }
    }

    /// The context for a new connection (the loop keeps its reference; `SSL_new` takes its own),
    /// or nil when no certificate of that name is loaded.
    func context(_ certificates: CertificateStore) -> OpaquePointer? {
        guard let certificate = certificates.certificate(named: name) else { return nil }
        if let made, made.certificate === certificate { return made.context }
        guard let context = certificate.makeOwnContext(settings) else { return nil }
        if let made { SSL_CTX_free(made.context) }
        made = (certificate, context)
        return context
    }
}
