import COpenSSL

/// The certificates after the leaf, parsed once per server and shared by every key pair whose
/// file lists the same DER: most sites' chains end in one of a CA's few intermediates (Let's
/// Encrypt signs from a handful), and parsing one costs as much as parsing the leaf, most of it
/// OpenSSL 3.0 decoding its public key (docs/performance.md, "Cold handshakes"). At most
/// ``capacity`` are kept; any other is parsed for its pair alone.
/// `@unchecked Sendable`: the table of `X509`s is behind a ``Locked``.
final class ChainCertificates: @unchecked Sendable {
    static let capacity = 256

    private struct DER: Hashable {
        let bytes: [UInt8]
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// `X509 *`, one reference each owned by the table.
    private let parsed = Locked<[DER: OpaquePointer]>([:])

    init() {}

    deinit {
        parsed.withLock { for cert in $0.values { X509_free(cert) } }
    }

    /// The certificate with a reference for the caller (`X509_free`), or nil when OpenSSL does
    /// not read it.
    func certificate(_ der: [UInt8]) -> OpaquePointer? {
        let key = DER(bytes: der)
        if let cert = parsed.withLock({ table -> OpaquePointer? in
            guard let cert = table[key] else { return nil }
            X509_up_ref(cert)
            return cert
        }) {
            return cert
        }
        guard let cert = ChainCertificates.decode(der) else { return nil }
        parsed.withLock { table in
            // Another thread may have kept one meanwhile: the caller's is its own either way.
            guard table.count < ChainCertificates.capacity, table[key] == nil else { return }
            X509_up_ref(cert)
            table[key] = cert
        }
        return cert
    }

    static func decode(_ der: [UInt8]) -> OpaquePointer? {
        der.withUnsafeBufferPointer { buffer in
            var p = buffer.baseAddress
            return d2i_X509(nil, &p, buffer.count)
        }
    }
}
