import AASACore
import AASAHTTP
import AASATransport
#if canImport(Glibc)
import Glibc
#endif

/// An RFC 8555 client over ``HTTPSClient``: one directory, one account key. Blocking; runs
/// on the ACME thread only. Every response's `Replay-Nonce` is kept for the next request.
final package class ACMEClient {
    package struct Directory {
        var newNonce: String
        var newAccount: String
        package var newOrder: String
        var externalAccountRequired: Bool

        /// RFC 8555 §7.1.1; nil when a required URL is missing.
        package init?(json: JSONValue?) {
            guard let json, let newNonce = json["newNonce"]?.stringValue, let newAccount = json["newAccount"]?.stringValue,
                  let newOrder = json["newOrder"]?.stringValue else { return nil }
            self.newNonce = newNonce
            self.newAccount = newAccount
            self.newOrder = newOrder
            self.externalAccountRequired = json["meta"]?["externalAccountRequired"]?.boolValue ?? false
        }
    }

    package struct Response {
        package var status: Int
        package var json: JSONValue?
        package var body: [UInt8]
        package var location: String?
        package var retryAfter: Int?
    }

    package let directoryURL: String
    package let key: P256Key
    private let http: HTTPSClient
    private let log: Log
    private var directory: Directory?
    private var nonce: String?
    /// The account URL, the `kid` of every request after newAccount.
    private(set) package var accountURL: String?

    /// badNonce is retried at once (RFC 8555 §6.5: "clients SHOULD retry"); a CA that keeps
    /// refusing nonces is broken, so the retries are bounded.
    static let badNonceRetries = 10

    package init(directoryURL: String, key: P256Key, http: HTTPSClient, accountURL: String? = nil, log: Log) {
        self.log = log
        self.directoryURL = directoryURL
        self.key = key
        self.http = http
        self.accountURL = accountURL
    }

    // MARK: - Directory and nonces (RFC 8555 §7.1.1, §7.2)

    func loadDirectory() throws(ACMEError) -> Directory {
        if let directory { return directory }
        let response = try exchange(HTTPClientRequest(url: try Self.url(directoryURL)), step: "directory")
        guard let d = Directory(json: response.json) else {
            throw ACMEError(.protocolViolation, "\(directoryURL) is not an ACME directory (no newNonce, newAccount or newOrder)")
        }
        directory = d
        return d
    }

    private func freshNonce() throws(ACMEError) -> String {
        if let nonce {
            self.nonce = nil
            return nonce
        }
        let d = try loadDirectory()
        _ = try exchange(HTTPClientRequest(method: "HEAD", url: try Self.url(d.newNonce)), step: "newNonce")
        guard let n = nonce else { throw ACMEError(.protocolViolation, "newNonce gave no Replay-Nonce") }
        nonce = nil
        return n
    }

    // MARK: - Requests

    /// A signed POST (or POST-as-GET with a nil payload), retried at once on badNonce.
    func post(_ target: String, payload: String?, step: String, signer: JWS.Signer? = nil, accept: String? = nil) throws(ACMEError) -> Response {
        guard let signer = signer ?? accountURL.map({ JWS.Signer.kid($0) }) else {
            throw ACMEError(.protocolViolation, "\(step): no account yet")
        }
        var attempt = 0
        while true {
            let body = try JWS.sign(payload: payload, url: target, nonce: try freshNonce(), key: key, signer: signer)
            var headers = [(name: "Content-Type", value: "application/jose+json")]
            if let accept { headers.append((name: "Accept", value: accept)) }
            do {
                return try exchange(HTTPClientRequest(method: "POST", url: try Self.url(target), headers: headers, body: body), step: step)
            } catch {
                attempt += 1
                if error.problem?.type == ACMEProblem.badNonce, attempt <= ACMEClient.badNonceRetries {
                    // The error response carried a fresh nonce; the request goes again with it.
                    log.info("acme: \(step): the CA refused the nonce (badNonce); retrying at once")
                    continue
                }
                throw error
            }
        }
    }

    /// One HTTP exchange: keeps the nonce, turns a problem document into ``ACMEError``.
    private func exchange(_ request: HTTPClientRequest, step: String) throws(ACMEError) -> Response {
        let response: HTTPResponse
        do {
            response = try http.send(request)
        } catch {
            throw ACMEError(.transport, "\(step): \(request.url): \(error.message)")
        }
        if let n = response["replay-nonce"], !n.isEmpty { nonce = n }
        let retryAfter = response["retry-after"].flatMap(ACMEClient.retryAfterSeconds)
        let contentType = response["content-type"]?.lowercased() ?? ""
        let json = contentType.contains("json") ? JSONParser.parse(response.body, expecting: "a JSON object").value : nil
        guard (200..<300).contains(response.status) else {
            if let problem = ACMEProblem(json: json) {
                throw ACMEError(.problem(problem), "\(step): \(response.status)", retryAfter: retryAfter)
            }
            throw ACMEError(.transport, "\(step): \(request.url) answered \(response.head.statusText)", retryAfter: retryAfter)
        }
        return Response(status: response.status, json: json, body: response.body, location: response["location"], retryAfter: retryAfter)
    }

    /// Every URL the CA hands out (directory entries, Location, order, authorization,
    /// challenge and certificate URLs) must be HTTPS (RFC 8555 §6.1): anything else is refused
    /// before a request is made, so no signed request ever travels in the clear.
    static package func url(_ text: String) throws(ACMEError) -> HTTPURL {
        let parsed: HTTPURL
        do { parsed = try HTTPURL(text) } catch { throw ACMEError(.protocolViolation, "bad URL from the CA: \(error)") }
        guard parsed.isSecure else {
            throw ACMEError(.protocolViolation, "the CA handed out a URL that is not HTTPS, refused with no request sent (RFC 8555 §6.1): \(text.debugDescription)")
        }
        return parsed
    }

    /// The longest wait a CA's `Retry-After` may ask for: a day (a longer one is a day).
    static let maximumRetryAfterSeconds = 86_400

    /// `Retry-After` in seconds or as an HTTP date (RFC 9110 §10.2.3), as seconds from now,
    /// clamped to 0 ... ``maximumRetryAfterSeconds``: the value comes from a peer, and Swift
    /// traps on overflow, so no arithmetic sees it unclamped.
    static package func retryAfterSeconds(_ value: String) -> Int? {
        let text = String(value.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
        let limit = maximumRetryAfterSeconds
        if !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Any run of digits, however long: more than the limit's digits is over the limit.
            return text.utf8.count > 9 ? limit : min(Int(text)!, limit)
        }
        if let date = HTTPDate.parse(text) {
            let now = wallClockSeconds()
            return date <= now ? 0 : (date - now > limit ? limit : date - now)
        }
        return nil
    }

    // MARK: - Account (RFC 8555 §7.3)

    package struct ExternalAccountBinding {
        package var keyID: String
        package var macKey: [UInt8]

        package init(keyID: String, macKey: [UInt8]) {
            self.keyID = keyID
            self.macKey = macKey
        }
    }

    /// Finds or creates the account for the key. newAccount with the same key answers with the
    /// existing account (200) rather than a new one, so this is also how a lost account URL is
    /// found again.
    @discardableResult
    package func ensureAccount(contact: String?, binding: ExternalAccountBinding?) throws(ACMEError) -> String {
        if let accountURL { return accountURL }
        let d = try loadDirectory()
        if d.externalAccountRequired, binding == nil {
            throw ACMEError(.protocolViolation, "the CA requires external account binding: give --acme-eab-kid and --acme-eab-hmac-key")
        }
        var w = JSONWriter()
        w.beginObject()
        w.key("termsOfServiceAgreed"); w.value(true)
        if let contact {
            w.key("contact"); w.beginArray(); w.value("mailto:" + contact); w.endArray()
        }
        if let binding {
            w.key("externalAccountBinding")
            w.raw(JWS.externalAccountBinding(keyID: binding.keyID, macKey: binding.macKey, accountJWK: key.jwk, url: d.newAccount))
        }
        w.endObject()
        let response = try post(d.newAccount, payload: w.output, step: "newAccount", signer: .jwk)
        guard let location = response.location else { throw ACMEError(.protocolViolation, "newAccount gave no Location") }
        accountURL = location
        return location
    }

    // MARK: - Orders (RFC 8555 §7.4)

    package struct Order {
        package var url: String
        package var status: String
        package var authorizations: [String]
        package var finalize: String
        package var certificate: String?
        package var error: ACMEProblem?

        package init(url: String, json: JSONValue?) throws(ACMEError) {
            guard let json, let status = json["status"]?.stringValue, let finalize = json["finalize"]?.stringValue else {
                throw ACMEError(.protocolViolation, "order \(url) has no status or finalize URL")
            }
            self.url = url
            self.status = status
            self.authorizations = (json["authorizations"]?.arrayValue ?? []).compactMap(\.stringValue)
            self.finalize = finalize
            self.certificate = json["certificate"]?.stringValue
            self.error = ACMEProblem(json: json["error"])
        }
    }

    package func newOrder(host: String) throws(ACMEError) -> Order {
        let d = try loadDirectory()
        var w = JSONWriter()
        w.beginObject()
        w.key("identifiers"); w.beginArray()
        w.beginObject(); w.key("type"); w.value("dns"); w.key("value"); w.value(host); w.endObject()
        w.endArray()
        w.endObject()
        let response = try post(d.newOrder, payload: w.output, step: "newOrder")
        guard let location = response.location else { throw ACMEError(.protocolViolation, "newOrder gave no Location") }
        return try Order(url: location, json: response.json)
    }

    package func order(_ url: String) throws(ACMEError) -> (Order, retryAfter: Int?) {
        let response = try post(url, payload: nil, step: "order")
        return (try Order(url: url, json: response.json), response.retryAfter)
    }

    package struct Challenge {
        package var type: String
        package var url: String
        package var token: String
        package var status: String
        package var error: ACMEProblem?
    }

    package struct Authorization {
        package var status: String
        package var host: String
        package var challenges: [Challenge]

        /// RFC 8555 §7.1.4: challenges without a type or URL are passed over.
        package init(url: String, json: JSONValue?) throws(ACMEError) {
            guard let json, let status = json["status"]?.stringValue else {
                throw ACMEError(.protocolViolation, "authorization \(url) has no status")
            }
            self.status = status
            self.host = json["identifier"]?["value"]?.stringValue ?? ""
            self.challenges = (json["challenges"]?.arrayValue ?? []).compactMap { c -> Challenge? in
                guard let type = c["type"]?.stringValue, let url = c["url"]?.stringValue else { return nil }
                return Challenge(type: type, url: url, token: c["token"]?.stringValue ?? "", status: c["status"]?.stringValue ?? "",
                                 error: ACMEProblem(json: c["error"]))
            }
        }
    }

    package func authorization(_ url: String) throws(ACMEError) -> (Authorization, retryAfter: Int?) {
        let response = try post(url, payload: nil, step: "authorization")
        return (try Authorization(url: url, json: response.json), response.retryAfter)
    }

    /// Tells the CA the challenge is ready to be validated (RFC 8555 §7.5.1): an empty object.
    package func respond(to challenge: Challenge) throws(ACMEError) {
        _ = try post(challenge.url, payload: "{}", step: "challenge")
    }

    package func finalize(_ order: Order, csr: [UInt8]) throws(ACMEError) -> (Order, retryAfter: Int?) {
        let response = try post(order.finalize, payload: "{\"csr\":\"\(Base64URL.encode(csr))\"}", step: "finalize")
        return (try Order(url: order.url, json: response.json), response.retryAfter)
    }

    /// The certificate chain, leaf first (RFC 8555 §7.4.2).
    package func downloadCertificate(_ url: String) throws(ACMEError) -> [UInt8] {
        let response = try post(url, payload: nil, step: "certificate", accept: "application/pem-certificate-chain")
        guard String(decoding: response.body.prefix(64), as: UTF8.self).contains("-----BEGIN CERTIFICATE-----") else {
            throw ACMEError(.protocolViolation, "the certificate at \(url) is not PEM")
        }
        return response.body
    }
}
