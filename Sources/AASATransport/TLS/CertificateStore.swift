#if canImport(Glibc)
import Glibc
#endif

/// Every certificate of `--certs`, indexed by subjectAltName (docs/serving.md, "Certificates"). Immutable: a reload
/// makes a new store from the previous one, changing only the certificates that changed.
///
/// Coverage and selection go through two name indexes (exact names, and wildcards by the name
/// under `*.`), as h2o resolves SNI: a lookup costs one or two dictionary probes whatever the
/// number of certificates, so no step compares every site with every certificate.
public final class CertificateStore: Sendable {
    /// In byte order of name.
    public let certificates: [TLSCertificate]
    public let defaultCertificate: TLSCertificate?
    package let defaultName: String?
    private let byName: [String: TLSCertificate]
    /// The certificate that wins each name: the first in byte order of certificate name, so the
    /// choice is stable across reloads.
    private let exact: [String: TLSCertificate]
    private let wildcard: [String: TLSCertificate]
    /// The other certificates of a name two certificates share (rare), to fall back on when the
    /// winner goes.
    private let shadowed: [String: [TLSCertificate]]
    /// Names of the certificates ACME issued (docs/acme.md): `/status` says `"source":"acme"`,
    /// and only these are renewed.
    public let acmeNames: Set<String>

    public convenience init(certificates: [TLSCertificate], defaultName: String?, acmeNames: Set<String> = []) {
        let built = CertificateStore(Parts(), defaultName: nil)
            .updating(removing: [], adding: certificates, acmeNames: acmeNames, defaultName: defaultName)
        self.init(copying: built)
    }

    private struct Parts {
        var certificates: [TLSCertificate] = []
        var byName: [String: TLSCertificate] = [:]
        var exact: [String: TLSCertificate] = [:]
        var wildcard: [String: TLSCertificate] = [:]
        var shadowed: [String: [TLSCertificate]] = [:]
        var acmeNames: Set<String> = []
    }

    private init(_ parts: Parts, defaultName: String?) {
        certificates = parts.certificates
        byName = parts.byName
        exact = parts.exact
        wildcard = parts.wildcard
        shadowed = parts.shadowed
        acmeNames = parts.acmeNames
        self.defaultName = defaultName
        defaultCertificate = defaultName.flatMap { parts.byName[$0] } ?? parts.certificates.first
    }

    private convenience init(copying other: CertificateStore) {
        self.init(Parts(certificates: other.certificates, byName: other.byName, exact: other.exact, wildcard: other.wildcard,
                        shadowed: other.shadowed, acmeNames: other.acmeNames), defaultName: other.defaultName)
    }

    public static let empty = CertificateStore(certificates: [], defaultName: nil)

    /// A store with the certificates named in `removing` taken out and `adding` put in (a
    /// certificate replaced is in both). Costs the names of the certificates changed, plus one
    /// copy of the indexes: never a walk that compares certificates with each other.
    package func updating(removing: Set<String>, adding: [TLSCertificate], acmeNames acmeChanges: Set<String>, defaultName: String?) -> CertificateStore {
        var p = Parts(certificates: certificates, byName: byName, exact: exact, wildcard: wildcard, shadowed: shadowed, acmeNames: acmeNames)
        let added = Set(adding.map(\.name))
        for name in removing.union(added) {
            p.acmeNames.remove(name)
            guard let old = p.byName.removeValue(forKey: name) else { continue }
            let i = CertificateStore.position(of: name, in: p.certificates)
            if i < p.certificates.count, p.certificates[i] === old { p.certificates.remove(at: i) }
            for dnsName in old.dnsNames {
                if dnsName.hasPrefix("*.") {
                    CertificateStore.unindex(old, key: String(dnsName.dropFirst(2)), in: &p.wildcard, shadowed: &p.shadowed, shadowKey: dnsName)
                } else {
                    CertificateStore.unindex(old, key: dnsName, in: &p.exact, shadowed: &p.shadowed, shadowKey: dnsName)
                }
            }
        }
        // A first load's certificates come in byte order of name (a sorted listing): checked, not sorted.
        let inOrder = zip(adding, adding.dropFirst()).allSatisfy { CertificateStore.precedes($0.name, $1.name) }
        if adding.count > 64 {
            // One allocation per table, not a doubling at every power of two (100 000 at start).
            p.certificates.reserveCapacity(p.certificates.count + adding.count)
            p.byName.reserveCapacity(p.byName.count + adding.count)
            p.exact.reserveCapacity(p.exact.count + adding.count)
        }
        for cert in inOrder ? adding : adding.sorted(by: { CertificateStore.precedes($0.name, $1.name) }) {
            p.byName[cert.name] = cert
            if let last = p.certificates.last, !CertificateStore.precedes(last.name, cert.name) {
                p.certificates.insert(cert, at: CertificateStore.position(of: cert.name, in: p.certificates))
            } else {
                // After every name so far: the common case, with no search.
                p.certificates.append(cert)
            }
            for (k, dnsName) in cert.dnsNames.enumerated() where !cert.dnsNames[..<k].contains(dnsName) {
                if dnsName.hasPrefix("*.") {
                    CertificateStore.index(cert, key: String(dnsName.dropFirst(2)), in: &p.wildcard, shadowed: &p.shadowed, shadowKey: dnsName)
                } else {
                    CertificateStore.index(cert, key: dnsName, in: &p.exact, shadowed: &p.shadowed, shadowKey: dnsName)
                }
            }
        }
        p.acmeNames.formUnion(acmeChanges.filter { p.byName[$0] != nil })
        return CertificateStore(p, defaultName: defaultName)
    }

    /// Where `name` is or would go in `sorted` (byte order; names are ASCII file names mostly,
    /// and byte order is what `/status` promises).
    private static func position(of name: String, in sorted: [TLSCertificate]) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if precedes(sorted[mid].name, name) { low = mid + 1 } else { high = mid }
        }
        return low
    }

    static package func precedes(_ a: String, _ b: String) -> Bool {
        DirectoryListing.bytewise(a, b)
    }

    private static func index(_ cert: TLSCertificate, key: String, in table: inout [String: TLSCertificate],
                              shadowed: inout [String: [TLSCertificate]], shadowKey: String) {
        guard let winner = table[key] else {
            table[key] = cert
            return
        }
        if precedes(cert.name, winner.name) {
            table[key] = cert
            shadowed[shadowKey, default: []].append(winner)
        } else {
            shadowed[shadowKey, default: []].append(cert)
        }
    }

    private static func unindex(_ cert: TLSCertificate, key: String, in table: inout [String: TLSCertificate],
                                shadowed: inout [String: [TLSCertificate]], shadowKey: String) {
        if table[key] === cert {
            // The next in byte order of name takes the name over.
            if var others = shadowed[shadowKey], let next = others.indices.min(by: { precedes(others[$0].name, others[$1].name) }) {
                table[key] = others.remove(at: next)
                shadowed[shadowKey] = others.isEmpty ? nil : others
            } else {
                table[key] = nil
            }
        } else if var others = shadowed[shadowKey] {
            others.removeAll { $0 === cert }
            shadowed[shadowKey] = others.isEmpty ? nil : others
        }
    }

    /// The certificate of a name as in the layouts of `--certs`.
    package func certificate(named name: String) -> TLSCertificate? { byName[name] }

    /// The certificate for a ServerName: exact, then wildcard, then the default. docs/serving.md, "Certificates".
    public func select(serverName: String?) -> TLSCertificate? {
        guard let serverName else { return defaultCertificate }
        return covering(serverName) ?? defaultCertificate
    }

    /// The certificate whose names cover `host`, exact name before wildcard (RFC 6125 §6.4.3:
    /// a wildcard covers exactly one label).
    package func covering(_ host: String, work: BuildWork? = nil) -> TLSCertificate? {
        work?.add()
        if let c = exact[host] { return c }
        if let dot = host.utf8.firstIndex(of: UInt8(ascii: ".")), dot != host.utf8.startIndex {
            work?.add()
            return wildcard[String(host[host.utf8.index(after: dot)...])]
        }
        return nil
    }

    /// Whether any certificate covers `host`: two dictionary probes at most (counted in `work`).
    public func covers(_ host: String) -> Bool {
        covering(host) != nil
    }

    package func covers(_ host: String, work: BuildWork?) -> Bool {
        covering(host, work: work) != nil
    }

    public func isACME(_ certificate: TLSCertificate) -> Bool {
        acmeNames.contains(certificate.name)
    }
}
