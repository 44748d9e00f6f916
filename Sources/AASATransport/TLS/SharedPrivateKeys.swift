import COpenSSL

/// Private keys parsed for ``LeafWithKey`` and kept for the next certificate with the same key:
/// a platform may serve many sites' certificates with one key (one key for a fleet, as
/// ``KeyReader`` already finds at load), and reading a P-256 key then exporting it to the
/// default provider on its first signature is 0.4 M instructions, most of what a cold
/// handshake still costs beyond a warm one (docs/performance.md, "Cold handshakes"). A key
/// shared this way is one object: certificate, signing key and the provider's copy made on
/// first use are shared by every pair that uses it, as they are by the connections of one pair.
/// The ``capacity`` most recently used keys are kept (one reference each, besides the pairs'),
/// so that sites with keys of their own cost at most that many keys more memory.
/// `@unchecked Sendable`: the table of `EVP_PKEY`s is behind a ``Locked``.
final class SharedPrivateKeys: @unchecked Sendable {
    static let capacity = 64

    private struct DER: Hashable {
        let bytes: [UInt8]
        func hash(into hasher: inout Hasher) { bytes.withUnsafeBytes { hasher.combine(bytes: $0) } }
    }

    /// `EVP_PKEY *` by the key's DER, and the DERs from least to most recently used.
    private let table = Locked<(keys: [DER: OpaquePointer], order: [DER])>(([:], []))

    init() {}

    deinit {
        table.withLock { for key in $0.keys.values { EVP_PKEY_free(key) } }
    }

    /// The key for `der` with a reference for the caller (`EVP_PKEY_free`): the kept one, or
    /// `parse(der)`'s, then kept. Nil when `parse` returns nil.
    func key(_ der: [UInt8], parse: ([UInt8]) -> OpaquePointer?) -> OpaquePointer? {
        let name = DER(bytes: der)
        if let key = table.withLock({ table -> OpaquePointer? in
            guard let key = table.keys[name] else { return nil }
            if let i = table.order.lastIndex(of: name), i != table.order.count - 1 {
                table.order.remove(at: i)
                table.order.append(name)
            }
            EVP_PKEY_up_ref(key)
            return key
        }) {
            return key
        }
        guard let key = parse(der) else { return nil }
        let evicted = table.withLock { table -> OpaquePointer? in
            // Another thread may have kept one meanwhile: the caller's is its own either way.
            guard table.keys[name] == nil else { return nil }
            EVP_PKEY_up_ref(key)
            table.keys[name] = key
            table.order.append(name)
            guard table.order.count > SharedPrivateKeys.capacity else { return nil }
            return table.keys.removeValue(forKey: table.order.removeFirst())
        }
        if let evicted { EVP_PKEY_free(evicted) }
        return key
    }

    var count: Int { table.withLock { $0.keys.count } }
}
