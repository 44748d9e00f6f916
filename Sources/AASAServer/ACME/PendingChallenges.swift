import COpenSSL
import Synchronization
import AASATransport

/// The challenges the ACME thread is answering right now, read by the loops: HTTP-01 key
/// authorizations by token, and TLS-ALPN-01 challenge certificates by host; and the names
/// clients asked for that no certificate covers. One per server with `--acme` (``ACMEStatus``),
/// reaching the TLS callbacks as the server's ``TLSChallenges``.
final class PendingChallenges: TLSChallenges {
    /// The ALPN protocol of TLS-ALPN-01 (RFC 8737 §6.2).
    static let alpnProtocol = "acme-tls/1"

    private let tokens = Locked<[String: String]>([:])
    private let certificates = Locked<[String: ChallengeCertificate]>([:])
    /// Checked before anything else on every handshake, so a server with no challenge pending
    /// pays one atomic load.
    private let certificateCount = Atomic<Int>(0)
    /// Names asked for in a ClientHello that no certificate covers, ordered first.
    let demand = ACMEDemand()

    init() {}

    // MARK: HTTP-01 (RFC 8555 §8.3)

    func addToken(_ token: String, keyAuthorization: String) {
        tokens.withLock { $0[token] = keyAuthorization }
    }

    func removeToken(_ token: String) {
        _ = tokens.withLock { $0.removeValue(forKey: token) }
    }

    func keyAuthorization(token: String) -> String? {
        tokens.withLock { $0[token] }
    }

    // MARK: TLS-ALPN-01 (RFC 8737)

    func addCertificate(_ certificate: ChallengeCertificate) {
        certificates.withLock {
            $0[certificate.host] = certificate
            certificateCount.store($0.count, ordering: .releasing)
        }
    }

    func removeCertificate(host: String) {
        certificates.withLock {
            $0.removeValue(forKey: host)
            certificateCount.store($0.count, ordering: .releasing)
        }
    }

    var hasCertificates: Bool { certificateCount.load(ordering: .acquiring) > 0 }

    /// Moves the handshake to `host`'s challenge context, if one is pending. Done under the
    /// lock: SSL_set_SSL_CTX takes its own reference, so the context outlives its removal.
    func switchToChallenge(_ ssl: OpaquePointer, host: String) -> Bool {
        certificates.withLock { pending in
            guard let certificate = pending[host] else { return false }
            return SSL_set_SSL_CTX(ssl, certificate.context) != nil
        }
    }

    // MARK: TLSChallenges

    /// A ClientHello that offers ALPN `acme-tls/1` for a name with a pending challenge is moved
    /// to that challenge's context (RFC 8737 §3).
    func clientHello(_ ssl: OpaquePointer) {
        guard hasCertificates else { return }
        var data: UnsafePointer<UInt8>?
        var length = 0
        guard SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_application_layer_protocol_negotiation), &data, &length) == 1, let data,
              ClientHelloExtensions.protocols(UnsafeBufferPointer(start: data, count: length), listIsPrefixed: true)
                .contains(PendingChallenges.alpnProtocol) else { return }
        // SSL_get_servername is not yet set in this callback: the extension is read raw.
        var sni: UnsafePointer<UInt8>?
        var sniLength = 0
        guard SSL_client_hello_get0_ext(ssl, UInt32(TLSEXT_TYPE_server_name), &sni, &sniLength) == 1, let sni,
              let host = ClientHelloExtensions.serverName(UnsafeBufferPointer(start: sni, count: sniLength)) else { return }
        _ = switchToChallenge(ssl, host: host)
    }

    func uncovered(serverName: String) {
        if demand.isEnabled { demand.note(serverName) }
    }
}

/// Readers of the two ClientHello extensions the callback needs, over the raw bytes.
enum ClientHelloExtensions {
    /// The protocol names of an ALPN extension (RFC 7301 §3.1). `listIsPrefixed`: the bytes
    /// start with the list's own 2-byte length (the extension as sent), not the list alone (as
    /// the select callback gets it). Malformed input gives what parsed before the fault.
    static func protocols(_ bytes: UnsafeBufferPointer<UInt8>, listIsPrefixed: Bool) -> [String] {
        var i = 0
        var end = bytes.count
        if listIsPrefixed {
            guard bytes.count >= 2 else { return [] }
            end = min(bytes.count, 2 + (Int(bytes[0]) << 8 | Int(bytes[1])))
            i = 2
        }
        var out: [String] = []
        while i < end {
            let n = Int(bytes[i])
            guard n > 0, i + 1 + n <= end else { break }
            out.append(String(decoding: UnsafeBufferPointer(rebasing: bytes[(i + 1)..<(i + 1 + n)]), as: UTF8.self))
            i += 1 + n
        }
        return out
    }

    /// The host_name of a server_name extension (RFC 6066 §3), lower case.
    static func serverName(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard bytes.count >= 2 else { return nil }
        let end = min(bytes.count, 2 + (Int(bytes[0]) << 8 | Int(bytes[1])))
        var i = 2
        while i + 3 <= end {
            let type = bytes[i]
            let n = Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
            guard i + 3 + n <= end else { return nil }
            if type == 0 {
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[(i + 3)..<(i + 3 + n)]), as: UTF8.self).lowercased()
            }
            i += 3 + n
        }
        return nil
    }
}
