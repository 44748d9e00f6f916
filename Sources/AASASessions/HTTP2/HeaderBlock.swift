import AASAHTTP

/// A header block being received (HEADERS, then CONTINUATION frames until END_HEADERS,
/// RFC 9113 §4.3, §6.10) and what it is for.
struct HeaderBlock {
    enum Target {
        /// A new request stream.
        case request(HTTP2Stream)
        /// Trailers: a second block on an open stream, which must end it.
        case trailers(HTTP2Stream)
        /// A stream beyond SETTINGS_MAX_CONCURRENT_STREAMS: RST_STREAM REFUSED_STREAM once decoded.
        case refused(Int32)
        /// Decoded for the HPACK table only (a stream after GOAWAY, or one the server reset).
        case ignored
    }

    let streamID: Int32
    let endStream: Bool
    var target: Target
    /// Bytes received (HEADERS and CONTINUATION fragments) and decoded (RFC 9113 §6.5.2).
    var receivedBytes: Int
    var decodedBytes = 0
    var continuations = 0
    var check = RequestFieldCheck()
    /// The fragments so far of a block in several frames.
    var gathered: [UInt8] = []
    /// Why the request is malformed, once a field says so; the rest of the block is decoded
    /// (for the HPACK table) but not used.
    var malformed: StaticString?

    init(streamID: Int32, endStream: Bool, target: Target, receivedBytes: Int) {
        self.streamID = streamID
        self.endStream = endStream
        self.target = target
        self.receivedBytes = receivedBytes
    }
}

/// Header blocks as they arrive (RFC 9113 §4.3, §6.10): the fragments of HEADERS and
/// CONTINUATION frames gathered until END_HEADERS, bounded in bytes and frames, then decoded by
/// the connection's one HPACK decoder, field by field into their stream. A block over a limit,
/// or one that cannot be decoded, is a connection error: the HPACK state cannot be trusted once a
/// block is abandoned half decoded.
struct HeaderBlockReader {
    private let decoder = HeaderDecoder()
    private var fields: RequestFieldReader
    private let maxHeaderListSize: Int
    private let maxContinuationFrames: Int
    /// The block being received: nothing else may come between its frames (§6.10).
    private(set) var current: HeaderBlock? { didSet { currentStreamID = current?.streamID } }
    /// The stream of the block being received, kept aside: reading it from `current` copied
    /// the block (its stream and its buffer retained and released) at each frame.
    private(set) var currentStreamID: Int32?

    init(configuration: HTTP2Configuration) {
        fields = RequestFieldReader(targets: configuration.targets)
        maxHeaderListSize = configuration.maxHeaderListSize
        maxContinuationFrames = configuration.maxContinuationFrames
    }

    /// HEADERS: `block` begins with `fragment`. True when that is the whole block, decoded in
    /// place (a usual request: the block is never stored, nor copied); false when it waits here
    /// for CONTINUATION frames.
    mutating func begin(_ block: inout HeaderBlock, _ fragment: UnsafeRawBufferPointer, isLast: Bool) throws(ConnectionError) -> Bool {
        guard isLast else {
            block.gathered.append(contentsOf: fragment)
            current = block
            return false
        }
        try HeaderBlockReader.check(decode(fragment, into: &block))
        return true
    }

    /// CONTINUATION: the next fragment of the current block. Returns the block once whole and
    /// decoded (the fragments gathered first, bounded by the header list limit).
    mutating func `continue`(_ fragment: UnsafeRawBufferPointer, isLast: Bool) throws(ConnectionError) -> HeaderBlock? {
        guard current != nil else { throw ConnectionError(.protocolError, "CONTINUATION without HEADERS") }
        current!.receivedBytes += fragment.count
        current!.continuations += 1
        if current!.continuations > maxContinuationFrames { throw ConnectionError(.enhanceYourCalm, "too many CONTINUATION frames") }
        if current!.receivedBytes > maxHeaderListSize { throw ConnectionError(.enhanceYourCalm, "header block over the limit") }
        current!.gathered.append(contentsOf: fragment)
        guard isLast, var block = current.take() else { return nil }
        var whole: [UInt8] = []
        swap(&whole, &block.gathered)
        try HeaderBlockReader.check(whole.withUnsafeBytes { decode($0, into: &block) })
        switch block.target {
        case .request(let stream), .trailers(let stream):
            // Reset while its block arrived (the request timeout): the stream is closed, and
            // nothing more is sent on it (RFC 9113 §5.1); the block was for the HPACK table only.
            if stream.state == .closed { block.target = .ignored }
        case .refused, .ignored: break
        }
        return block
    }

    private static func check(_ outcome: HeaderDecoder.Outcome) throws(ConnectionError) {
        switch outcome {
        case .done: return
        case .invalid: throw ConnectionError(.compressionError, "an invalid header block")
        case .stopped: throw ConnectionError(.enhanceYourCalm, "header list over the limit")
        }
    }

    /// Hands each field of a whole block to its stream; stops once the decoded fields pass the
    /// header list limit (name + value + 32 each, §6.5.2).
    private mutating func decode(_ bytes: UnsafeRawBufferPointer, into block: inout HeaderBlock) -> HeaderDecoder.Outcome {
        // Read once: a copy of the target per field retains and releases its stream.
        let target = block.target
        return decoder.decode(bytes) { name, value, origin in
            block.decodedBytes += name.count + value.count + 32
            if block.decodedBytes > maxHeaderListSize { return false }
            guard block.malformed == nil else { return true }
            switch target {
            case .request(let stream): block.malformed = fields.read(name, value, origin, into: stream, check: &block.check)
            case .trailers: block.malformed = RequestFieldCheck.checkTrailer(name, value)
            case .refused, .ignored: break
            }
            return true
        }
    }
}

/// Reads the decoded fields of a connection's request blocks into their streams: each checked
/// (``RequestFieldCheck``), and kept on the stream when the server acts on it. It remembers the
/// last `:authority` (or Host) and User-Agent as made from their bytes: a client sends the same
/// ones on every stream, and comparing bytes costs less than normalizing a host and making
/// Strings again (~1,000 instructions a request, callgrind). A field that is a dynamic table
/// entry is read once: what it is goes in the entry's ``FieldMemo``, and the entry's next use
/// costs the check of where it stands (pseudo-header order, repeats), not a name match, a
/// value check and a comparison.
struct RequestFieldReader {
    /// The paths the server serves files at: a request for one of them makes no String.
    private let targets: InternedTargets
    private var lastAuthority: HTTP2Stream.HostField?
    /// The dynamic table entry `lastAuthority` was last found equal to (its ``FieldMemo/entry``).
    private var lastAuthorityEntry = -1
    private var lastUserAgent = RememberedField()
    /// The last User-Agent made from a dynamic table entry, and which.
    private var entryUserAgent: (entry: Int, text: String)?
    /// The last `:path` found among the served targets: clients send it as a literal (never
    /// indexed, RFC 7541 §6.2.3), the same on every stream.
    private var lastInterned: (bytes: [UInt8], text: String)?

    /// What a dynamic table entry is to the reader (``FieldMemo/kind``): set once the field was
    /// read without fault, so the name and value are valid (§8.2.1) and not connection-specific
    /// (§8.2.2); a field that was refused is read in full at each use, and refused again.
    private enum Kind {
        static let unread: UInt8 = 0
        /// A regular field the server does not act on.
        static let ignored: UInt8 = 1
        static let authority: UInt8 = 2
        static let host: UInt8 = 3
        static let userAgent: UInt8 = 4
        /// `:method GET`.
        static let get: UInt8 = 5
        /// `:scheme` http or https.
        static let scheme: UInt8 = 6
        /// Any other: read in full at each use (what it sets on the stream is made each time).
        static let other: UInt8 = 7
    }

    /// HPACK's static table indexes of `:method GET`, `:scheme http` and `:scheme https` (RFC
    /// 7541 Appendix A), which a client sends as one byte each.
    private enum StaticIndex {
        static let get = 2, http = 6, https = 7
    }

    init(targets: InternedTargets) { self.targets = targets }

    /// Reads one field of `stream`'s block; returns why the request is malformed, or nil. Inlined
    /// in the decoder's loop, with the full reading out of line (called, it cost some 100
    /// instructions a request more, callgrind).
    @inline(__always)
    mutating func read(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ origin: HeaderDecoder.Origin,
                       into stream: HTTP2Stream, check: inout RequestFieldCheck) -> StaticString? {
        switch origin {
        case .staticEntry(StaticIndex.get):
            if let why = check.knownPseudo(RequestFieldCheck.Pseudo.method) { return why }
            stream.method = .get
            return nil
        case .staticEntry(StaticIndex.https), .staticEntry(StaticIndex.http):
            return check.knownPseudo(RequestFieldCheck.Pseudo.scheme)
        case .staticEntry, .literal:
            return read(name, value, into: stream, check: &check, entry: -1).why
        case .dynamicEntry(let memo):
            let entry = memo.pointee.entry
            switch memo.pointee.kind {
            case Kind.unread:
                let (why, known) = read(name, value, into: stream, check: &check, entry: entry)
                if why == nil { memo.pointee.kind = RequestFieldReader.kind(of: name, value, known) }
                return why
            case Kind.ignored:
                check.knownRegular()
                return nil
            case Kind.authority:
                if let why = check.knownPseudo(RequestFieldCheck.Pseudo.authority) { return why }
                stream.setAuthority(hostField(value, entry: entry))
                return nil
            case Kind.host:
                check.knownRegular(isHost: true)
                stream.setHostField(hostField(value, entry: entry))
                return nil
            case Kind.userAgent:
                if let known = entryUserAgent, known.entry == entry {
                    check.knownRegular()
                    stream.userAgent = known.text
                    return nil
                }
                return read(name, value, into: stream, check: &check, entry: entry).why
            case Kind.get:
                if let why = check.knownPseudo(RequestFieldCheck.Pseudo.method) { return why }
                stream.method = .get
                return nil
            case Kind.scheme:
                return check.knownPseudo(RequestFieldCheck.Pseudo.scheme)
            default:
                return read(name, value, into: stream, check: &check, entry: entry).why
            }
        }
    }

    /// What a field read without fault is, for its entry's memo.
    private static func kind(of name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, _ known: KnownField?) -> UInt8 {
        switch known {
        case .method: return KnownField.equals(value, "GET") ? Kind.get : Kind.other
        case .authority: return Kind.authority
        case .host: return Kind.host
        case .userAgent: return Kind.userAgent
        case .scheme: return Kind.scheme
        // Read without fault, so not connection-specific (§8.2.2); not acted on in HTTP/2.
        case .connection, .transferEncoding, .authorization, .ifMatch, .expect, nil: return Kind.ignored
        // `:method` other than GET, `:path`, the conditional fields...: what they set is made
        // from the bytes each time.
        case .path, .ifNoneMatch, .ifModifiedSince, .contentLength, .ownCheck: return Kind.other
        }
    }

    /// Reads a field in full. A value remembered from an earlier stream was checked then; GET
    /// and the served paths are valid values, not checked again. `entry` is the field's dynamic
    /// table entry, or -1. Returns why the request is malformed, or nil, and which field it is.
    private mutating func read(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, into stream: HTTP2Stream,
                               check: inout RequestFieldCheck, entry: Int) -> (why: StaticString?, known: KnownField?) {
        let known = KnownField.named(lowerCase: name)
        switch known {
        // A value checked on an earlier stream, or known valid: only the field's place is left
        // to check.
        case .authority:
            if let last = lastAuthority, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) {
                if let why = check.knownPseudo(RequestFieldCheck.Pseudo.authority) { return (why, known) }
                if entry >= 0 { lastAuthorityEntry = entry }
                stream.setAuthority(last)
                return (nil, known)
            }
        case .host:
            if let last = lastAuthority, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) {
                check.knownRegular(isHost: true)
                if entry >= 0 { lastAuthorityEntry = entry }
                stream.setHostField(last)
                return (nil, known)
            }
        case .userAgent:
            if let agent = lastUserAgent.value(for: value) {
                check.knownRegular()
                if entry >= 0 { entryUserAgent = (entry, agent) }
                stream.userAgent = agent
                return (nil, known)
            }
        case .method:
            // GET, nearly every request's, is a valid value (RFC 9113 §8.2.1), and not CONNECT.
            if KnownField.equals(value, "GET") {
                if let why = check.knownPseudo(RequestFieldCheck.Pseudo.method) { return (why, known) }
                stream.method = .get
                return (nil, known)
            }
        case .path:
            // So is a path the server serves files at (not empty).
            if let interned = interned(value) {
                if let why = check.knownPseudo(RequestFieldCheck.Pseudo.path) { return (why, known) }
                stream.setPath(interned: interned)
                return (nil, known)
            }
        default: break
        }
        if let why = check.check(name, value, known: known, valueIsChecked: false) { return (why, known) }
        switch known {
        case .method:
            stream.method = KnownField.equals(value, "HEAD") ? .head : .other(String(decoding: value, as: UTF8.self))
        case .path: stream.setPath(value)
        case .authority, .host:
            let field = HTTP2Stream.HostField(value)
            lastAuthority = field
            lastAuthorityEntry = entry
            if known == .authority { stream.setAuthority(field) } else { stream.setHostField(field) }
        case .ifNoneMatch: stream.ifNoneMatch = String(decoding: value, as: UTF8.self)
        case .ifModifiedSince: stream.ifModifiedSince = String(decoding: value, as: UTF8.self)
        case .userAgent:
            let agent = String(decoding: value, as: UTF8.self)
            lastUserAgent.remember(value, as: agent)
            if entry >= 0 { entryUserAgent = (entry, agent) }
            stream.userAgent = agent
        case .contentLength:
            // Checked to be digits; a longer one is over any limit anyway.
            stream.contentLength = value.count <= 18 ? value.reduce(0) { $0 * 10 + Int($1 &- 0x30) } : Int.max
        case .ownCheck: stream.isOwnCheck = true
        case .scheme, .connection, .transferEncoding, .authorization, .ifMatch, .expect, nil: break
        }
        return (nil, known)
    }

    /// The served target `value` names, if any: the last one again when the bytes are the same
    /// (one comparison, where the targets' lookup cost some 80 instructions, callgrind).
    private mutating func interned(_ value: UnsafeBufferPointer<UInt8>) -> String? {
        if let last = lastInterned, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) { return last.text }
        guard let text = targets.text(for: value) else { return nil }
        lastInterned = (Array(value), text)
        return text
    }

    /// The host field of a `:authority` or Host value that is dynamic table entry `entry`, its
    /// value checked when the entry was first read: the last one when it was made from, or
    /// found equal to, the same entry; else made, or found equal, again.
    private mutating func hostField(_ value: UnsafeBufferPointer<UInt8>, entry: Int) -> HTTP2Stream.HostField {
        if lastAuthorityEntry == entry, let last = lastAuthority { return last }
        lastAuthorityEntry = entry
        if let last = lastAuthority, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) { return last }
        let field = HTTP2Stream.HostField(value)
        lastAuthority = field
        return field
    }
}
