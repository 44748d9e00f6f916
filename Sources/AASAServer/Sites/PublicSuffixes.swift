import AASACore
import AASATransport

/// The Public Suffix List the server refuses wildcard sites over (`*.com`, `*.co.uk`), read
/// from the system's copy (Debian's `publicsuffix` package) at start and again on SIGHUP, never
/// from a copy of our own that would go stale. See ``PublicSuffixList``.
final class PublicSuffixes: Sendable {
    /// The one list the loader and the write API ask.
    static let system = PublicSuffixes(path: PublicSuffixList.systemPath)

    let path: String
    private let list: Locked<PublicSuffixList?> = Locked(nil)
    /// The file as last read: a SIGHUP that finds it unchanged does not parse it again.
    private let stamp: Locked<FileStamp?> = Locked(nil)

    init(path: String) {
        self.path = path
    }

    /// Reads the list again; says what it read, for the log. Unreadable, the last list read
    /// stays (or, with none, only the list's default rule: a wildcard over a single label).
    @discardableResult
    func reload() -> (message: String, isError: Bool) {
        let current = FileStamp(path: path)
        if let current, stamp.withLock({ $0 == current }), let count = list.withLock({ $0?.count }) {
            return ("sites: \(count) public suffix rules from \(path) (unchanged)", false)
        }
        do {
            guard let read = try SnapshotBuilder.read(path) else {
                return ("sites: no Public Suffix List at \(path) (Debian's publicsuffix package); only IP addresses and wildcards over a single label (*.com) are refused as site names", true)
            }
            let parsed = PublicSuffixList(text: String(decoding: read.bytes, as: UTF8.self))
            list.withLock { $0 = parsed }
            stamp.withLock { $0 = read.stamp }
            return ("sites: \(parsed.count) public suffix rules from \(path)", false)
        } catch {
            return ("sites: cannot read the Public Suffix List \(path): \(error.message); \(list.withLock { $0 == nil } ? "only wildcards over a single label are refused" : "the list read before stays")", true)
        }
    }

    /// Reads the list again and logs what it read.
    func reload(logTo log: Log) {
        let (message, isError) = reload()
        if isError { log.error(message) } else { log.info(message) }
    }

    /// Why `site` is not a site name, or nil (``PublicSuffixList/refusal(of:)``). The list is read
    /// on first use when the server has not read it yet (tools and tests).
    func refusal(of site: SiteName) -> String? {
        if !site.isWildcard, !SiteName.isIPAddress(site.host) { return nil }
        let current = list.withLock { $0 } ?? {
            reload()
            return list.withLock { $0 } ?? PublicSuffixList()
        }()
        return current.refusal(of: site)
    }
}
