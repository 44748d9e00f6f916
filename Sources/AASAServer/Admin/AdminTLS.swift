import AASATransport

/// The admin listener over HTTPS (`--admin-tls NAME`, docs/platforms.md): the certificate named
/// NAME, whichever name a client asks for, in a TLS context of its own that offers `http/1.1`
/// only (the admin listener speaks no HTTP/2). One per loop, touched by its thread only; its
/// one-certificate store is made again when a reload replaced the certificate.
final class AdminTLS {
    let name: String
    /// ALPN `http/1.1` only, no ACME challenges; one certificate to parse.
    let settings = TLSServerSettings(offersHTTP2: false, challenges: nil, keyPairCapacity: 4)
    private var made: (certificate: TLSCertificate, store: CertificateStore)?

    init(name: String) { self.name = name }

    /// The certificates to serve on a new connection: the one named NAME alone, so SNI picks it
    /// for any name (it is the default); nil when no certificate of that name is loaded.
    func certificates(_ loaded: CertificateStore) -> CertificateStore? {
        guard let certificate = loaded.certificate(named: name) else { return nil }
        if let made, made.certificate === certificate { return made.store }
        let store = CertificateStore(certificates: [certificate], defaultName: certificate.name)
        made = (certificate, store)
        return store
    }
}
