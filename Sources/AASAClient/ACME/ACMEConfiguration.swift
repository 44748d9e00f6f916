/// `aasa serve --acme` (docs/acme.md), each setting with its flag and variable.
public struct ACMEConfiguration: Sendable {
    public static let letsEncrypt = "https://acme-v02.api.letsencrypt.org/directory"
    public static let letsEncryptStaging = "https://acme-staging-v02.api.letsencrypt.org/directory"

    /// `--acme-directory`.
    public var directory = ACMEConfiguration.letsEncrypt
    /// `--acme-email`: the account's contact, sent as `mailto:`.
    public var email: String?
    /// `--acme-ca-root`: trust this CA (PEM) for the directory's HTTPS instead of the system's.
    public var caRoot: String?
    /// `--acme-challenge`.
    public var challenge = ChallengeType.tlsALPN01
    /// `--acme-eab-kid` and `--acme-eab-hmac-key` (decoded from base64url).
    public var externalAccountKeyID: String?
    public var externalAccountMACKey: [UInt8]?
    /// New orders per 3 hours (`--acme-order-rate`): the capacity of the server's order bucket.
    public var orderRate = ACMEConfiguration.defaultOrderRate
    /// Let's Encrypt's limit of new orders per account and 3 hours is 300.
    public static let defaultOrderRate = 300
    /// The first retry after a failure; it doubles per failure up to ``maximumRetryMilliseconds``.
    /// One minute; `AASA_ACME_RETRY_BASE_MS` shortens it, for tests only.
    public var retryBaseMilliseconds: Int64 = 60_000
    public var maximumRetryMilliseconds: Int64 = 6 * 3_600_000

    public init() {}

    /// The wait before attempt `failures + 1`: base · 2^(failures−1), capped, and never less
    /// than the CA's `Retry-After` — but a renewal, whose certificate expires in
    /// `expiresInMilliseconds`, is never put off past its deadline: at most half the time left
    /// (and at least the base), so the retries close in on the expiry instead of missing it.
    package func retryDelay(failures: Int, retryAfterSeconds: Int?, expiresInMilliseconds: Int64? = nil) -> Int64 {
        let exponent = min(max(failures - 1, 0), 30)
        let backoff = min(retryBaseMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent).partialValue, maximumRetryMilliseconds)
        // The CA's wait is clamped here too (to a day), whoever parsed it.
        let asked = Int64(min(max(retryAfterSeconds ?? 0, 0), ACMEClient.maximumRetryAfterSeconds)) * 1000
        let delay = max(backoff, asked)
        guard let left = expiresInMilliseconds else { return delay }
        return min(delay, max(retryBaseMilliseconds, left / 2))
    }
}

extension ACMEConfiguration {
    /// An EAB MAC key as CAs hand it out: base64url (standard base64 accepted). Nil when it is
    /// not base64 or empty.
    public static func decodeMACKey(_ text: String) -> [UInt8]? {
        guard let bytes = Base64URL.decode(text), !bytes.isEmpty else { return nil }
        return bytes
    }
}

/// The challenge types aasa answers itself.
public enum ChallengeType: String, Sendable, CaseIterable {
    /// RFC 8737: answered on the HTTPS listeners, in the TLS handshake.
    case tlsALPN01 = "tls-alpn-01"
    /// RFC 8555 §8.3: answered on the `--http` listeners.
    case http01 = "http-01"
}
