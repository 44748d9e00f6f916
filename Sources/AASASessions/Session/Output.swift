/// The bytes a session has queued for its connection, in order: a buffer it appends to, then
/// at most one large body written straight from its prepared storage (never copied).
package struct Output {
    package var buffer: [UInt8] = []
    package var sent = 0
    package var body: [UInt8]?
    package var bodySent = 0

    package init() {}

    /// Bytes not yet written.
    package var pending: Int { buffer.count - sent + (body.map { $0.count - bodySent } ?? 0) }
    package var isEmpty: Bool { pending == 0 }

    /// Forgets what was written; keeps a modest buffer's capacity for the next response.
    mutating package func reset() {
        if buffer.capacity > 256 * 1024 { buffer = [] } else { buffer.removeAll(keepingCapacity: true) }
        sent = 0
        body = nil
        bodySent = 0
    }
}
