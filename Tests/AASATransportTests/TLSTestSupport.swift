@testable import AASATransport

extension TLSStream {
    /// The server's end of a test connection serving `certificate` whatever the name, ALPN
    /// `http/1.1` only.
    static func testServer(_ certificate: TLSCertificate, fd: Int32) throws -> TLSStream {
        try TLSStream(server: TLSServerSettings(offersHTTP2: false), certificates: CertificateStore(certificates: [certificate], defaultName: certificate.name), fd: fd)
    }
}
