/// The key pairs one server parsed on first use, at most ``capacity`` at once (oldest parsed,
/// first freed): memory for parsed certificates follows the certificates in use, not those that
/// exist. Also holds what the parses share: the private-key decoders, the chain certificates
/// and the private keys several certificates use.
final package class TLSKeyPairCache: Sendable {
    /// 2 048 pairs of a P-256 leaf and key are some 14 MB.
    static package let defaultCapacity = 2048
    package let capacity: Int
    let decoders = PrivateKeyDecoders()
    let chainCertificates = ChainCertificates()
    let sharedKeys = SharedPrivateKeys()

    private let order = Locked<[TLSCertificate]>([])

    package init(capacity: Int = TLSKeyPairCache.defaultCapacity) { self.capacity = capacity }

    func added(_ certificate: TLSCertificate) {
        let evicted = order.withLock { order -> [TLSCertificate] in
            order.append(certificate)
            guard order.count > capacity else { return [] }
            let n = order.count - capacity
            let out = Array(order.prefix(n))
            order.removeFirst(n)
            return out
        }
        for cert in evicted { cert.evictKeyPair() }
    }

    package var count: Int { order.withLock { $0.count } }
}
