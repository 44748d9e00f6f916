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

    /// Forgets what was written; keeps a modest buffer's capacity for the next response.
    @inlinable
    mutating public func reset() {
        if buffer.capacity > 256 * 1024 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
        sent = 0
        body = nil
        bodySent = 0
    }
}
