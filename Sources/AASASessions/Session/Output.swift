/// The bytes a session has queued for its connection, in order: a buffer it appends to, then
/// at most one large body written straight from its prepared storage (never copied).
public struct Output {
    public var buffer: [UInt8] = []
    public var sent = 0
    public var body: [UInt8]?
    public var bodySent = 0

    public init() {}

    /// Bytes not yet written.
    @inlinable
    public var pending: Int { buffer.count - sent + (body.map { $0.count - bodySent } ?? 0) }
    @inlinable
    public var isEmpty: Bool { pending == 0 }

    /// Drops the written prefix once it is this large: a peer that reads steadily but never
    /// lets the output drain completely (a small receive window, a window opened a little at a
    /// time) must not make the buffer grow by what it has already read.
    public static let compactionThreshold = 64 * 1024

    /// Drops what was written, when that is at least ``compactionThreshold`` bytes: what a
    /// connection holds stays below that plus its high-water mark, whatever its peer's pace.
    @inlinable
    mutating public func dropWritten() {
        guard sent >= Output.compactionThreshold else { return }
        buffer.removeSubrange(0..<sent)
        sent = 0
    }

    /// Forgets what was written; keeps a modest buffer's capacity for the next response.
    @inlinable
    mutating public func reset() {
        if buffer.capacity > 256 * 1024 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
        sent = 0
        body = nil
        bodySent = 0
    }
}
