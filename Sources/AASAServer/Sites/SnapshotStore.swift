import Synchronization
import AASATransport

/// Where the current snapshot is published. A reload swaps it under a lock and bumps the
/// generation; each loop compares the generation (one atomic load per request) and takes the
/// lock only when it changed, keeping its own strong reference meanwhile, so a snapshot in use
/// is never freed under a reader (STYLE: no raw pointer swaps).
public final class SnapshotStore: Sendable {
    private let current: Locked<SiteSnapshot>
    private let generationCounter = Atomic<Int>(0)

    init(_ snapshot: SiteSnapshot) {
        current = Locked(snapshot)
    }

    var generation: Int { generationCounter.load(ordering: .acquiring) }

    func load() -> (SiteSnapshot, Int) {
        current.withLock { ($0, generationCounter.load(ordering: .relaxed)) }
    }

    func publish(_ snapshot: SiteSnapshot) {
        current.withLock {
            $0 = snapshot
            generationCounter.add(1, ordering: .releasing)
        }
    }
}
