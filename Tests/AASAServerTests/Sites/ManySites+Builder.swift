import TestCertificates
@testable import AASAServer
@testable import AASATransport

extension ManySites {
    /// A builder over these sites and certificates, as the server makes its own.
    func builder(work: BuildWork? = nil) -> SnapshotBuilder {
        SnapshotBuilder(configDirectory: config, certsDirectory: certs, defaultCertificate: nil, cacheControl: "no-cache",
                        usesTLS: true, log: Log(minimum: .error), work: work)
    }
}
