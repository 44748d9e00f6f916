/// What the session remembers of client streams beyond what nghttp2 keeps (it forgets a stream
/// once closed: `no_closed_streams`), to answer a late frame as RFC 9113 §5.1 asks: the highest
/// stream id opened, and the last streams to close, with when the server reset one.
package struct StreamHistory {
    /// How long after the server's own RST_STREAM frames the client had already sent on that
    /// stream are ignored (RFC 9113 §5.1, "closed": frames in flight); after it, they are
    /// errors like any other.
    static let resetGraceMilliseconds: Int64 = 1_000

    /// The highest client stream id a HEADERS frame opened.
    private(set) var highestOpened: Int32 = 0
    private var closed = [(id: Int32, resetByServerAt: Int64?)](repeating: (0, nil), count: 32)
    private var next = 0

    /// What a DATA or HEADERS frame on a client stream that is not open means.
    package enum Verdict: Equatable {
        /// A new stream (HEADERS with a higher id), or DATA on an idle one: nghttp2 decides.
        case new
        /// In flight when the server reset the stream: ignored.
        case late
        /// On a stream the client can no longer send on: STREAM_CLOSED.
        case closed
        /// HEADERS with a lower id than one already used, never opened: PROTOCOL_ERROR (§5.1.1).
        case reusedIdentifier
    }

    /// The frame of `type` on client stream `id`, which is not open; a new stream's HEADERS
    /// raises the highest id.
    mutating package func verdict(stream id: Int32, isHeaders: Bool, now: Int64) -> Verdict {
        if id > highestOpened {
            if isHeaders { highestOpened = id }
            return .new
        }
        guard let entry = closed.first(where: { $0.id == id }) else {
            // Not among the last to close: a skipped id (implicitly closed, §5.1.1), or one
            // closed long ago.
            return isHeaders ? .reusedIdentifier : .closed
        }
        if let at = entry.resetByServerAt, now - at < StreamHistory.resetGraceMilliseconds { return .late }
        return .closed
    }

    mutating func recordClose(_ id: Int32, resetByServerAt: Int64?) {
        closed[next] = (id, resetByServerAt)
        next = (next + 1) % closed.count
    }
}

/// Follows the frame boundaries of the client's bytes, ahead of nghttp2, for what nghttp2 lets
/// pass without a callback:
/// - a DATA frame on a stream it no longer knows (it keeps no closed streams) is skipped
///   silently, where RFC 9113 §5.1 asks for STREAM_CLOSED;
/// - a PRIORITY frame's payload is skipped unread once SETTINGS_NO_RFC7540_PRIORITIES is sent,
///   where a stream that depends on itself is a PROTOCOL_ERROR (RFC 7540 §5.3.1), which
///   conformance suites still check.
/// The session feeds nghttp2 the bytes before each event, then judges it with the state as
/// nghttp2 left it. A request without a body has no event: one call to nghttp2, as before.
package struct FrameScanner {
    package enum Event: Equatable {
        /// A DATA frame's header, on this stream.
        case data(stream: Int32)
        /// A PRIORITY frame whose stream depends on itself.
        case selfDependentPriority
    }

    /// Bytes to pass over before the next frame header: the client preface first.
    private var skip = 24
    /// The frame header being read, and a PRIORITY frame's payload after it.
    private var pending: [UInt8] = []

    /// Scans `bytes` from `start` to the next event. `offset` is the byte that completes it,
    /// which nghttp2 must not have yet (a frame header one byte short is not acted on); the
    /// scan goes on from `offset + 1`. Nil: no event up to the end.
    mutating package func next(in bytes: UnsafeRawBufferPointer, from start: Int) -> (offset: Int, event: Event)? {
        var i = start
        let n = bytes.count
        while i < n {
            if skip > 0 {
                let k = min(skip, n - i)
                skip -= k
                i += k
                continue
            }
            // A whole frame header in the buffer: read in place (the common case).
            if pending.isEmpty, i + 9 <= n {
                let length = Int(bytes[i]) << 16 | Int(bytes[i + 1]) << 8 | Int(bytes[i + 2])
                let type = bytes[i + 3]
                if type != FrameType.priority || length != 5 {
                    skip = length
                    i += 8
                    if type == FrameType.data {
                        let stream = Int32(bitPattern: FrameScanner.streamID(bytes, at: i - 3))
                        return (i, .data(stream: stream))
                    }
                    i += 1
                    continue
                }
            }
            pending.append(bytes[i])
            if pending.count == 9 {
                let length = Int(pending[0]) << 16 | Int(pending[1]) << 8 | Int(pending[2])
                let type = pending[3]
                if type == FrameType.priority, length == 5 {
                    i += 1
                    continue
                }
                skip = length
                let stream = Int32(bitPattern: FrameScanner.streamID(pending, at: 5))
                pending.removeAll(keepingCapacity: true)
                if type == FrameType.data { return (i, .data(stream: stream)) }
            } else if pending.count == 14 {
                let selfDependent = FrameScanner.streamID(pending, at: 5) == FrameScanner.streamID(pending, at: 9)
                pending.removeAll(keepingCapacity: true)
                if selfDependent { return (i, .selfDependentPriority) }
            }
            i += 1
        }
        return nil
    }

    private static func streamID(_ b: some RandomAccessCollection<UInt8>, at i: Int) -> UInt32 {
        let s = b.index(b.startIndex, offsetBy: i)
        return (UInt32(b[s]) << 24 | UInt32(b[b.index(s, offsetBy: 1)]) << 16 | UInt32(b[b.index(s, offsetBy: 2)]) << 8
            | UInt32(b[b.index(s, offsetBy: 3)])) & 0x7FFF_FFFF
    }
}
