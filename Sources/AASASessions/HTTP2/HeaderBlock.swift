import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

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
        return decoder.decode(bytes) { name, value in
            block.decodedBytes += name.count + value.count + 32
            if block.decodedBytes > maxHeaderListSize { return false }
            guard block.malformed == nil else { return true }
            switch target {
            case .request(let stream): block.malformed = fields.read(name, value, into: stream, check: &block.check)
            case .trailers: block.malformed = RequestFieldCheck.checkTrailer(name, value)
            case .refused, .ignored: break
            }
            return true
        }
    }
}

/// The fields of a request the server acts on, by name (RFC 9113 §8.3.1 for the pseudo-header
/// fields; HTTP/2 names are lower case, §8.2.2).
package enum RequestField {
    case method, path, authority, host, ifNoneMatch, ifModifiedSince, userAgent, contentLength
    /// ``RequestParser/ownCheckField``, lower case as HTTP/2 sends names.
    case ownCheck

    /// Which field a name is, by length first (most names cost one comparison).
    static package func named(_ name: UnsafeBufferPointer<UInt8>) -> RequestField? {
        switch name.count {
        case 4: return equals(name, "host") ? .host : nil
        case 5: return equals(name, ":path") ? .path : nil
        case 7: return equals(name, ":method") ? .method : nil
        case 10:
            if equals(name, ":authority") { return .authority }
            if equals(name, "user-agent") { return .userAgent }
            return equals(name, "aasa-check") ? .ownCheck : nil
        case 13: return equals(name, "if-none-match") ? .ifNoneMatch : nil
        case 14: return equals(name, "content-length") ? .contentLength : nil
        case 17: return equals(name, "if-modified-since") ? .ifModifiedSince : nil
        default: return nil
        }
    }

    /// memcmp: the generic `elementsEqual` cost some 130 instructions a field (callgrind).
    static package func equals(_ bytes: UnsafeBufferPointer<UInt8>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        return bytes.isEmpty || memcmp(bytes.baseAddress!, text.utf8Start, bytes.count) == 0
    }
}

/// Reads the decoded fields of a connection's request blocks into their streams: each checked
/// (``RequestFieldCheck``), and kept on the stream when the server acts on it. It remembers the
/// last `:authority` (or Host) and User-Agent as made from their bytes: a client sends the same
/// ones on every stream, and comparing bytes costs less than normalizing a host and making
/// Strings again (~1,000 instructions a request, callgrind).
struct RequestFieldReader {
    /// The paths the server serves files at: a request for one of them makes no String.
    private let targets: InternedTargets
    private var lastAuthority: HTTP2Stream.HostField?
    private var lastUserAgent = RememberedField()

    init(targets: InternedTargets) { self.targets = targets }

    /// Reads one field of `stream`'s block; returns why the request is malformed, or nil. A
    /// value remembered from an earlier stream was checked then; GET and the served paths are
    /// valid values, not checked again.
    mutating func read(_ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>, into stream: HTTP2Stream,
                       check: inout RequestFieldCheck) -> StaticString? {
        let known = RequestField.named(name)
        switch known {
        case .authority, .host:
            if let last = lastAuthority, last.bytes.withUnsafeBufferPointer({ ByteScan.equal($0, value) }) {
                if let why = check.check(name, value, known: known, valueIsChecked: true) { return why }
                if known == .authority { stream.setAuthority(last) } else { stream.setHostField(last) }
                return nil
            }
        case .userAgent:
            if let agent = lastUserAgent.value(for: value) {
                if let why = check.check(name, value, known: known, valueIsChecked: true) { return why }
                stream.userAgent = agent
                return nil
            }
        case .method:
            // GET, nearly every request's, is a valid value (RFC 9113 §8.2.1).
            if RequestField.equals(value, "GET") {
                if let why = check.check(name, value, known: known, valueIsChecked: true) { return why }
                stream.method = .get
                return nil
            }
        case .path:
            // So is a path the server serves files at.
            if let interned = targets.text(for: value) {
                if let why = check.check(name, value, known: known, valueIsChecked: true) { return why }
                stream.setPath(interned: interned)
                return nil
            }
        default: break
        }
        if let why = check.check(name, value, known: known, valueIsChecked: false) { return why }
        switch known {
        case .method:
            stream.method = RequestField.equals(value, "HEAD") ? .head : .other(String(decoding: value, as: UTF8.self))
        case .path: stream.setPath(value)
        case .authority: stream.setAuthority(hostField(value))
        case .host: stream.setHostField(hostField(value))
        case .ifNoneMatch: stream.ifNoneMatch = String(decoding: value, as: UTF8.self)
        case .ifModifiedSince: stream.ifModifiedSince = String(decoding: value, as: UTF8.self)
        case .userAgent:
            let agent = String(decoding: value, as: UTF8.self)
            lastUserAgent.remember(value, as: agent)
            stream.userAgent = agent
        case .contentLength:
            // Checked to be digits; a longer one is over any limit anyway.
            stream.contentLength = value.count <= 18 ? value.reduce(0) { $0 * 10 + Int($1 &- 0x30) } : Int.max
        case .ownCheck: stream.isOwnCheck = true
        case nil: break
        }
        return nil
    }

    /// A new field for a `:authority` or Host value, remembered for the next stream.
    private mutating func hostField(_ value: UnsafeBufferPointer<UInt8>) -> HTTP2Stream.HostField {
        let field = HTTP2Stream.HostField(value)
        lastAuthority = field
        return field
    }
}
