import COpenSSL

/// Decoders of private keys in DER, kept for reuse. OpenSSL 3.0 makes `d2i_AutoPrivateKey`'s
/// decoder context anew each call, walking every decoder of every provider by name: 4.3 M of
/// its 4.8 M instructions for a P-256 key, half of a cold handshake before (callgrind,
/// docs/performance.md, "Cold handshakes"). A context made once per key type (`EC`, `RSA`, …)
/// decodes the next key in a tenth of that (`OSSL_DECODER_from_data` can be called again on the
/// same context, OSSL_DECODER_from_bio(3)). A context is used by one thread at a time: each is
/// taken from the pool for one decode and put back.
/// `@unchecked Sendable`: its contexts are behind a ``Locked``.
final class PrivateKeyDecoders: @unchecked Sendable {
    /// One reusable decoder and the slot it writes the key it decoded into (its address is
    /// given to OpenSSL once, when the context is made).
    private final class Decoder {
        let context: OpaquePointer
        let output: UnsafeMutablePointer<OpaquePointer?>

        init?(type: String) {
            output = .allocate(capacity: 1)
            output.initialize(to: nil)
            guard let context = OSSL_DECODER_CTX_new_for_pkey(output, "DER", nil, type, aasa_evp_pkey_keypair(), nil, nil) else {
                output.deallocate()
                return nil
            }
            self.context = context
        }

        deinit {
            OSSL_DECODER_CTX_free(context)
            output.deallocate()
        }

        func decode(_ der: [UInt8]) -> OpaquePointer? {
            output.pointee = nil
            let ok = der.withUnsafeBufferPointer { buffer -> Bool in
                var p = buffer.baseAddress
                var length = buffer.count
                return OSSL_DECODER_from_data(context, &p, &length) == 1
            }
            defer { output.pointee = nil }
            guard ok else {
                if let key = output.pointee { EVP_PKEY_free(key) }
                return nil
            }
            return output.pointee
        }
    }

    /// Idle decoders by key type; as many of a type as handshakes decoded at once, at most.
    private let idle = Locked<[String: [Decoder]]>([:])

    init() {}

    /// The key, owned by the caller (`EVP_PKEY_free`); `type` as `EVP_PKEY_get0_type_name`
    /// named it when the certificate was loaded. Any key a typed decoder does not read goes
    /// through `d2i_AutoPrivateKey`, as every key did before.
    func decode(_ der: [UInt8], type: String) -> OpaquePointer? {
        TLSError.clearQueue()
        let decoder = idle.withLock { $0[type]?.popLast() } ?? Decoder(type: type)
        if let decoder {
            defer { idle.withLock { $0[type, default: []].append(decoder) } }
            if let key = decoder.decode(der) { return key }
        }
        TLSError.clearQueue()
        return der.withUnsafeBufferPointer { buffer in
            var p = buffer.baseAddress
            return d2i_AutoPrivateKey(nil, &p, buffer.count)
        }
    }
}
