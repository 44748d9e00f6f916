import AASACore

/// Requests to an ACME server are JWS in the flattened JSON serialization (RFC 8555 §6.2,
/// RFC 7515 §7.2.2), signed ES256 by the account key; the protected header carries the
/// nonce and the URL it is for, and either the account's URL (`kid`) or, before there is an
/// account, the key itself (`jwk`).
package enum JWS {
    package enum Signer {
        /// newAccount (and revocation by certificate key): the public key in the header.
        case jwk
        /// Every other request: the account URL.
        case kid(String)
    }

    /// - Parameter payload: the JSON payload; nil for POST-as-GET (RFC 8555 §6.3), whose
    ///   payload is the empty string.
    static package func sign(payload: String?, url: String, nonce: String, key: P256Key, signer: Signer) throws(ACMEError) -> [UInt8] {
        var header = JSONWriter()
        header.beginObject()
        header.key("alg"); header.value("ES256")
        switch signer {
        case .jwk: header.key("jwk"); header.raw(key.jwk)
        case .kid(let account): header.key("kid"); header.value(account)
        }
        header.key("nonce"); header.value(nonce)
        header.key("url"); header.value(url)
        header.endObject()
        let protected = Base64URL.encode(header.output)
        let encodedPayload = payload.map { Base64URL.encode($0) } ?? ""
        let signature = try key.signES256(Array("\(protected).\(encodedPayload)".utf8))
        return Array(flattened(protected: protected, payload: encodedPayload, signature: Base64URL.encode(signature)).utf8)
    }

    /// The external account binding of newAccount (RFC 8555 §7.3.4): a JWS over the account's
    /// JWK, MAC'd HS256 with the key the CA handed out, naming the CA's key identifier and
    /// the newAccount URL. No nonce.
    static func externalAccountBinding(keyID: String, macKey: [UInt8], accountJWK: String, url: String) -> String {
        var header = JSONWriter()
        header.beginObject()
        header.key("alg"); header.value("HS256")
        header.key("kid"); header.value(keyID)
        header.key("url"); header.value(url)
        header.endObject()
        let protected = Base64URL.encode(header.output)
        let payload = Base64URL.encode(accountJWK)
        let mac = SHA256Digest.hmac(key: macKey, Array("\(protected).\(payload)".utf8))
        return flattened(protected: protected, payload: payload, signature: Base64URL.encode(mac))
    }

    private static func flattened(protected: String, payload: String, signature: String) -> String {
        "{\"protected\":\"\(protected)\",\"payload\":\"\(payload)\",\"signature\":\"\(signature)\"}"
    }
}
