/// The bytes a session has queued for its connection, in order: a buffer it appends to, then
/// at most one large body written straight from its prepared storage (never copied).
struct Output {
    var buffer: [UInt8] = []
    var sent = 0
    var body: [UInt8]?
    var bodySent = 0

    /// Bytes not yet written.
    var pending: Int { buffer.count - sent + (body.map { $0.count - bodySent } ?? 0) }
    var isEmpty: Bool { pending == 0 }

    /// Forgets what was written; keeps a modest buffer's capacity for the next response.
    mutating func reset() {
        if buffer.capacity > 256 * 1024 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
        sent = 0
        body = nil
        bodySent = 0
    }
}
