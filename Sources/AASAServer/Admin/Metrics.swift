import AASACore
import Synchronization

/// Process-wide counters for `/metrics` (SPEC 3.5). Request counts live per loop (see
/// ``LoopCounters``) so the hot path never contends for a lock with another thread.
public final class Metrics: Sendable {
    let openConnections = Atomic<Int>(0)
    let tlsHandshakes = Atomic<Int>(0)
    let tlsHandshakeErrors = Atomic<Int>(0)
    let reloads = Atomic<Int>(0)
    let reloadErrors = Locked<[String: Int]>([:])
    /// ACME orders by outcome (SPEC 3.10).
    let acmeOrdersIssued = Atomic<Int>(0)
    let acmeOrdersFailed = Atomic<Int>(0)

    init() {}

    func recordReloadErrors(sites: [String]) {
        guard !sites.isEmpty else { return }
        reloadErrors.withLock { counts in
            for site in sites { counts[site, default: 0] += 1 }
        }
    }
}

/// The file a request asked for, as `/metrics` names it: one of the association files, or
/// `other` for any other path (a fixed label set, whatever paths clients send). A small integer,
/// so counting a request indexes an array instead of building a label.
enum RequestedFile: Int, CaseIterable, Sendable {
    case aasa
    case assetLinks
    case merchantID
    case webAuthn
    case other

    init(_ kind: AssociationFileKind?) {
        switch kind {
        case .aasa: self = .aasa
        case .assetLinks: self = .assetLinks
        case .merchantID: self = .merchantID
        case .webAuthn: self = .webAuthn
        case nil: self = .other
        }
    }

    /// The `file` label: the association file's name (`apple-app-site-association`, …) or `other`.
    var label: String {
        switch self {
        case .aasa: return AssociationFileKind.aasa.fileName
        case .assetLinks: return AssociationFileKind.assetLinks.fileName
        case .merchantID: return AssociationFileKind.merchantID.fileName
        case .webAuthn: return AssociationFileKind.webAuthn.fileName
        case .other: return "other"
        }
    }
}

/// One loop's request counts by site, file and status. Written by its own thread; read by the
/// admin endpoint through the same uncontended lock (a pthread mutex: see ``Locked`` for why).
final class LoopCounters: Sendable {
    struct Key: Hashable {
        var site: String
        var status: Int
    }

    /// The counts of one site and status, by reference (the last one counted is kept at hand),
    /// one per ``RequestedFile``, indexed by its raw value.
    final class Count {
        var byFile = [Int](repeating: 0, count: RequestedFile.allCases.count)
    }

    struct Tally {
        var counts: [Key: Count] = [:]
        /// A keep-alive client asks for the same site again and again: comparing its key with
        /// the last one costs less than hashing it (a few hundred instructions, callgrind).
        var last: (key: Key, count: Count)?
    }

    let requests = Locked<Tally>(Tally())

    func count(site: String, file: RequestedFile, status: Int) {
        requests.withLock { tally in
            if let last = tally.last, last.key.status == status, last.key.site == site {
                last.count.byFile[file.rawValue] += 1
                return
            }
            let key = Key(site: site, status: status)
            let count = tally.counts[key] ?? Count()
            tally.counts[key] = count
            count.byFile[file.rawValue] += 1
            tally.last = (key, count)
        }
    }
}
