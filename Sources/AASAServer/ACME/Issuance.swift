import AASATransport
import AASAClient
#if canImport(Glibc)
import Glibc
#endif

/// One certificate for one host, from newOrder to the PEM chain (RFC 8555 §7.4): answer each
/// pending authorization's challenge, wait for it, finalize with a CSR for a new key, wait for
/// the certificate, download it. The challenge is published in ``PendingChallenges`` only while
/// the CA validates it.
struct Issuance {
    let client: ACMEClient
    let challengeType: ChallengeType
    let challenges: PendingChallenges
    /// Where the challenge is also published for the replicas sharing the store (nil: not shared).
    var storage: (any ACMEStore)?
    /// How long replicas get to pick a published challenge up (they look every 200 ms at
    /// `--certs`, and are notified by PostgreSQL) before the CA is told to validate.
    var propagationMilliseconds: UInt32 = 1_000
    let log: Log
    /// How long one order may take, polling included.
    var timeoutSeconds: Double = 180

    struct Issued {
        var privateKeyPEM: [UInt8]
        var chainPEM: [UInt8]
        var certificateURL: String
        var orderURL: String
    }

    func run(host: String) throws(ACMEError) -> Issued {
        let deadline = monotonicMilliseconds() + Int64(timeoutSeconds * 1000)
        var order = try client.newOrder(host: host)
        log.info("acme: \(host): order \(order.url) is \(order.status)")
        for url in order.authorizations {
            try authorize(url, host: host, deadline: deadline)
        }
        order = try poll("order \(order.url)", deadline: deadline) { () throws(ACMEError) in try client.order(order.url) } until: { o throws(ACMEError) in
            if o.status == "invalid" { throw ACMEError(.protocolViolation, "order \(o.url) became invalid\(o.error.map { ": \($0)" } ?? "")") }
            return o.status != "pending"
        }
        let csr = try CertificateRequest(host: host)
        if order.status == "ready" {
            let (finalized, _) = try client.finalize(order, csr: csr.der)
            order = finalized
        }
        order = try poll("order \(order.url)", deadline: deadline) { () throws(ACMEError) in try client.order(order.url) } until: { o throws(ACMEError) in
            if o.status == "invalid" { throw ACMEError(.protocolViolation, "order \(o.url) became invalid after finalize\(o.error.map { ": \($0)" } ?? "")") }
            return o.status == "valid"
        }
        guard let certificateURL = order.certificate else { throw ACMEError(.protocolViolation, "valid order \(order.url) has no certificate URL") }
        let chain = try client.downloadCertificate(certificateURL)
        return Issued(privateKeyPEM: try csr.key.privateKeyPEM(), chainPEM: chain, certificateURL: certificateURL, orderURL: order.url)
    }

    /// Answers one authorization's challenge of our type and waits until it is valid.
    private func authorize(_ url: String, host: String, deadline: Int64) throws(ACMEError) {
        let (authorization, _) = try client.authorization(url)
        if authorization.status == "valid" { return }
        guard authorization.status == "pending" else {
            throw ACMEError(.protocolViolation, "authorization for \(host) is \(authorization.status)")
        }
        guard let challenge = authorization.challenges.first(where: { $0.type == challengeType.rawValue }) else {
            let offered = authorization.challenges.map(\.type).joined(separator: ", ")
            throw ACMEError(.protocolViolation, "the CA offers no \(challengeType.rawValue) challenge for \(host) (offered: \(offered))")
        }
        // The key authorization binds the token to our account key (RFC 8555 §8.1).
        let keyAuthorization = challenge.token + "." + client.key.thumbprint
        switch challengeType {
        case .http01:
            challenges.addToken(challenge.token, keyAuthorization: keyAuthorization)
        case .tlsALPN01:
            challenges.addCertificate(try ChallengeCertificate(host: host, keyAuthorization: keyAuthorization))
        }
        let sharedName = challengeType == .http01 ? challenge.token : host
        defer {
            storage?.withdrawChallenge(challengeType, name: sharedName)
            switch challengeType {
            case .http01: challenges.removeToken(challenge.token)
            case .tlsALPN01: challenges.removeCertificate(host: host)
            }
        }
        if let storage {
            try storage.publishChallenge(challengeType, name: sharedName, keyAuthorization: keyAuthorization)
            usleep(propagationMilliseconds * 1000)
        }
        try client.respond(to: challenge)
        _ = try poll("authorization for \(host)", deadline: deadline) { () throws(ACMEError) in try client.authorization(url) } until: { a throws(ACMEError) in
            if a.status == "invalid" {
                // The CA's reason is on the challenge it tried (RFC 8555 §7.1.5, §8.2).
                let problem = a.challenges.first(where: { $0.type == challengeType.rawValue })?.error
                    ?? a.challenges.compactMap(\.error).first
                if let problem { throw ACMEError(.problem(problem), "\(challengeType.rawValue) validation of \(host) failed") }
                throw ACMEError(.protocolViolation, "\(challengeType.rawValue) validation of \(host) failed")
            }
            return a.status == "valid"
        }
    }

    /// Fetches until `done`, waiting what `Retry-After` says (1 to 10 s), else 250 ms doubling
    /// up to 4 s (RFC 8555 §7.5.1 asks clients to honour Retry-After when polling).
    private func poll<T>(_ what: String, deadline: Int64, fetch: () throws(ACMEError) -> (T, retryAfter: Int?),
                         until done: (T) throws(ACMEError) -> Bool) throws(ACMEError) -> T {
        var delay: Int64 = 250
        while true {
            let (value, retryAfter) = try fetch()
            if try done(value) { return value }
            let wait = retryAfter.map { Int64(min(max($0, 1), 10)) * 1000 } ?? delay
            delay = min(delay * 2, 4000)
            guard monotonicMilliseconds() + wait < deadline else {
                throw ACMEError(.transport, "\(what): still not done after \(Int(timeoutSeconds)) s")
            }
            usleep(UInt32(wait * 1000))
        }
    }
}
