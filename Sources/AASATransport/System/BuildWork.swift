import Synchronization

/// Counts the steps a build takes, for the tests that check a build's work grows with what
/// exists and what changed, never with sites × certificates.
final package class BuildWork: Sendable {
    private let counter = Atomic<Int>(0)
    private let readCounter = Atomic<Int>(0)
    /// A step: a site folder or certificate looked at, a name looked up in an index.
    package func add(_ n: Int = 1) { counter.add(n, ordering: .relaxed) }
    package func addRead() { readCounter.add(1, ordering: .relaxed) }
    package var count: Int { counter.load(ordering: .relaxed) }
    /// Site files read, and certificates loaded.
    package var reads: Int { readCounter.load(ordering: .relaxed) }
}
