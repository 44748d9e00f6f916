import COpenSSL

/// How a client end of ``TLSStream`` is configured: TLS 1.2 or 1.3, the peer's chain verified
/// against the system trust store or one CA file, the host name checked, and the ALPN
/// protocols offered. One context serves many connections.
/// `@unchecked Sendable`: it wraps an `SSL_CTX`, configured in `init` and only read after.
public final class TLSClientContext: @unchecked Sendable {
    package let context: OpaquePointer

    /// - Parameters:
    ///   - caFile: a PEM file of trusted CAs instead of the system store (`--cacert`).
    ///   - keepsSystemStore: trust `caFile` besides the system store, not instead of it
    ///     (`--cdn-cacert`: extra trust for a private or test CDN).
    ///   - verifyPeer: false only to look at a server whose chain does not verify: the
    ///     handshake then completes and ``TLSStream/verificationFailure`` says why.
    ///   - alpn: protocols to offer, most preferred first.
    public init(caFile: String? = nil, keepsSystemStore: Bool = false, verifyPeer: Bool = true, alpn: [String] = ["http/1.1"]) throws(TLSError) {
        TLSError.clearQueue()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw TLSError("SSL_CTX_new") }
        do throws(TLSError) {
            guard aasa_SSL_CTX_set_min_proto_version(ctx, aasa_tls1_2_version()) == 1 else { throw TLSError("setting TLS versions") }
            SSL_CTX_set_options(ctx, aasa_client_options())
            _ = aasa_SSL_CTX_set_mode(ctx, aasa_client_modes())
            if caFile == nil || keepsSystemStore {
                guard SSL_CTX_set_default_verify_paths(ctx) == 1 else { throw TLSError("loading the system trust store") }
            }
            if let caFile {
                guard SSL_CTX_load_verify_locations(ctx, caFile, nil) == 1 else { throw TLSError("loading CA file \(caFile)") }
            }
            // Without SSL_VERIFY_PEER the handshake completes whatever the chain, and the
            // verdict is still computed and readable from the stream.
            SSL_CTX_set_verify(ctx, verifyPeer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
            if !alpn.isEmpty {
                var wire: [UInt8] = []
                for p in alpn {
                    wire.append(UInt8(p.utf8.count))
                    wire.append(contentsOf: p.utf8)
                }
                // SSL_CTX_set_alpn_protos copies the list; it returns 0 on success.
                guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else { throw TLSError("SSL_CTX_set_alpn_protos") }
            }
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
        self.context = ctx
    }

    deinit { SSL_CTX_free(context) }
}
