/// A response's status line and header fields, as the client's callers read them.
public struct HTTPResponseHead: Sendable, Equatable {
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    public var status: Int
    public var reason: String
    /// Every field in order, names as sent.
    public var fields: [(name: String, value: String)]

    public init(version: String, status: Int, reason: String, fields: [(name: String, value: String)]) {
        self.version = version
        self.status = status
        self.reason = reason
        self.fields = fields
    }

    /// The first field named `name` (case-insensitive).
    public subscript(name: String) -> String? {
        let lower = name.lowercased()
        return fields.first { $0.name.lowercased() == lower }?.value
    }

    /// Every value of `name`, in order (`Set-Cookie`-like fields, or a list split over lines).
    public func values(_ name: String) -> [String] {
        let lower = name.lowercased()
        return fields.filter { $0.name.lowercased() == lower }.map(\.value)
    }

    /// `404 Not Found`.
    public var statusText: String { reason.isEmpty ? "\(status)" : "\(status) \(reason)" }

    public static func == (a: HTTPResponseHead, b: HTTPResponseHead) -> Bool {
        a.version == b.version && a.status == b.status && a.reason == b.reason
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }
}

/// Why a response could not be read.
public enum ResponseParseError: Error, Equatable, Sendable, CustomStringConvertible {
    case malformedStatusLine(String)
    case malformedHeader(String)
    /// The status line and fields together, interim (1xx) responses included, were longer
    /// than the limit.
    case headTooLarge(limit: Int)
    /// The trailer section after a chunked body was longer than the limit.
    case trailersTooLarge(limit: Int)
    /// The body (after de-chunking) was longer than the limit; the head was read.
    case bodyTooLarge(limit: Int)
    case invalidContentLength(String)
    /// `Transfer-Encoding` other than `chunked` (gzip, deflate… as a transfer coding).
    case unsupportedTransferEncoding(String)
    case malformedChunk(String)
    /// The connection ended before the response did.
    case truncated

    public var description: String {
        switch self {
        case .malformedStatusLine(let line): return "not an HTTP/1.x status line: \(line.debugDescription)"
        case .malformedHeader(let line): return "malformed header field: \(line.debugDescription)"
        case .headTooLarge(let limit): return "the response head (interim 1xx responses included) is larger than \(limit) bytes"
        case .trailersTooLarge(let limit): return "the trailer section is larger than \(limit) bytes"
        case .bodyTooLarge(let limit): return "the response body is larger than \(limit) bytes (the read limit)"
        case .invalidContentLength(let v): return "invalid Content-Length: \(v.debugDescription)"
        case .unsupportedTransferEncoding(let v): return "unsupported Transfer-Encoding: \(v)"
        case .malformedChunk(let why): return "malformed chunked body: \(why)"
        case .truncated: return "the connection closed before the response was complete"
        }
    }
}

/// An incremental HTTP/1.1 response reader (RFC 9112): bytes in as they arrive, in pieces of
/// any size; the head, then the body framed by `Content-Length`, chunked coding, or the end
/// of the connection. Pure: no I/O, so it is tested byte-split at every boundary.
///
/// Content codings (gzip) are not decoded: the client never asks for one (no
/// `Accept-Encoding`), and a body that arrives encoded anyway is handed over as it is, with its
/// `Content-Encoding` in the head for the caller to judge.
public struct ResponseParser: Sendable {
    public struct Limits: Sendable {
        /// Status line plus fields, counted over every interim (1xx) response before the
        /// final one: a peer that sends `100 Continue` forever reaches it.
        public var maxHeadBytes = 64 * 1024
        /// The body after de-chunking; `aasa check` reads a response up to 1 MiB.
        public var maxBodyBytes = 1024 * 1024
        /// The trailer section after a chunked body (RFC 9112 §7.1.2), read and dropped.
        public var maxTrailerBytes = 64 * 1024

        public init(maxHeadBytes: Int = 64 * 1024, maxBodyBytes: Int = 1024 * 1024, maxTrailerBytes: Int = 64 * 1024) {
            self.maxHeadBytes = maxHeadBytes
            self.maxBodyBytes = maxBodyBytes
            self.maxTrailerBytes = maxTrailerBytes
        }
    }

    private enum State: Sendable {
        case head
        case fixed(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case untilClose
        case complete
    }

    public let limits: Limits
    /// A response to HEAD has no body whatever its fields say (RFC 9110 §9.3.2).
    public let isResponseToHEAD: Bool
    public private(set) var head: HTTPResponseHead?
    public private(set) var body: [UInt8] = []
    private var state = State.head
    /// Bytes of the line (or head section) being collected.
    private var pending: [UInt8] = []
    /// Head bytes of the interim responses already read, which count toward the head's limit.
    private var interimHeadBytes = 0
    /// Trailer bytes read so far.
    private var trailerBytes = 0

    public init(limits: Limits = Limits(), isResponseToHEAD: Bool = false) {
        self.limits = limits
        self.isResponseToHEAD = isResponseToHEAD
    }

    /// True once the whole response has been read; later bytes are ignored.
    public var isComplete: Bool {
        if case .complete = state { return true }
        return false
    }

    /// Whether the body runs to the end of the connection (no framing).
    public var isCloseDelimited: Bool {
        if case .untilClose = state { return true }
        return false
    }

    /// Feeds the next bytes, whatever their size.
    public mutating func parse(_ bytes: some Collection<UInt8>) throws(ResponseParseError) {
        var i = bytes.startIndex
        while i != bytes.endIndex {
            switch state {
            case .complete:
                return
            case .head:
                pending.append(bytes[i])
                i = bytes.index(after: i)
                if interimHeadBytes + pending.count > limits.maxHeadBytes { throw .headTooLarge(limit: limits.maxHeadBytes) }
                if endsHead(pending) { try finishHead() }
            case .fixed(let remaining):
                let available = bytes.distance(from: i, to: bytes.endIndex)
                let take = min(remaining, available)
                let end = bytes.index(i, offsetBy: take)
                try appendBody(bytes[i..<end])
                i = end
                state = remaining - take == 0 ? .complete : .fixed(remaining: remaining - take)
            case .chunkData(let remaining):
                let available = bytes.distance(from: i, to: bytes.endIndex)
                let take = min(remaining, available)
                let end = bytes.index(i, offsetBy: take)
                try appendBody(bytes[i..<end])
                i = end
                state = remaining - take == 0 ? .chunkDataEnd : .chunkData(remaining: remaining - take)
            case .untilClose:
                try appendBody(bytes[i...])
                i = bytes.endIndex
            case .chunkSize, .chunkDataEnd, .trailers:
                let b = bytes[i]
                i = bytes.index(after: i)
                if case .trailers = state {
                    trailerBytes += 1
                    if trailerBytes > limits.maxTrailerBytes { throw .trailersTooLarge(limit: limits.maxTrailerBytes) }
                }
                guard b == UInt8(ascii: "\n") else {
                    pending.append(b)
                    // A chunk-size line with extensions, or a trailer field: generous, but bounded.
                    if pending.count > 4096 { throw .malformedChunk("a chunk line longer than 4096 bytes") }
                    continue
                }
                if pending.last == UInt8(ascii: "\r") { pending.removeLast() }
                let line = pending
                pending.removeAll(keepingCapacity: true)
                try endOfLine(line)
            }
        }
    }

    /// The connection ended: completes a close-delimited body, or reports a truncated response.
    public mutating func endOfInput() throws(ResponseParseError) {
        switch state {
        case .complete: return
        case .untilClose: state = .complete
        default: throw .truncated
        }
    }

    private mutating func appendBody(_ slice: some Collection<UInt8>) throws(ResponseParseError) {
        if body.count + slice.count > limits.maxBodyBytes { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
        body.append(contentsOf: slice)
    }

    private mutating func endOfLine(_ line: [UInt8]) throws(ResponseParseError) {
        switch state {
        case .chunkSize:
            // chunk-size [; extensions] (RFC 9112 §7.1.1); extensions are ignored.
            let sizeBytes = line.prefix { $0 != UInt8(ascii: ";") }
            let text = String(decoding: sizeBytes, as: UTF8.self).trimmingSpaces()
            // chunk-size = 1*HEXDIG: no sign (Int(_:radix:) would take "+66" and "-0").
            guard !text.isEmpty, text.count <= 15, text.utf8.allSatisfy(\.isHexDigit), let size = Int(text, radix: 16) else {
                throw .malformedChunk("bad chunk size \(String(decoding: line, as: UTF8.self).debugDescription)")
            }
            if body.count + size > limits.maxBodyBytes { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
            state = size == 0 ? .trailers : .chunkData(remaining: size)
        case .chunkDataEnd:
            guard line.isEmpty else { throw .malformedChunk("chunk data not followed by CRLF") }
            state = .chunkSize
        case .trailers:
            // Trailer fields are read and dropped; an empty line ends the message.
            if line.isEmpty { state = .complete }
        default:
            preconditionFailure("endOfLine in a state without lines")
        }
    }

    /// CRLF CRLF, or the bare LF LF that RFC 9112 §2.2 lets a recipient accept.
    private func endsHead(_ b: [UInt8]) -> Bool {
        let n = b.count
        guard n >= 2, b[n - 1] == UInt8(ascii: "\n") else { return false }
        if b[n - 2] == UInt8(ascii: "\n") { return true }
        return n >= 3 && b[n - 2] == UInt8(ascii: "\r") && b[n - 3] == UInt8(ascii: "\n")
    }

    private mutating func finishHead() throws(ResponseParseError) {
        let headBytes = pending.count
        var lines = pending.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line -> Substring in
            var l = line[...]
            if l.last == UInt8(ascii: "\r") { l = l.dropLast() }
            return Substring(String(decoding: l, as: UTF8.self))
        }
        pending.removeAll(keepingCapacity: true)
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let statusLine = lines.first else { throw .malformedStatusLine("") }
        // HTTP-version SP status-code SP [reason-phrase] (RFC 9112 §4)
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "HTTP/1.1" || parts[0] == "HTTP/1.0",
              parts[1].count == 3, let status = Int(parts[1]), (100...999).contains(status) else {
            throw .malformedStatusLine(String(statusLine))
        }
        var fields: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            // Obsolete line folding (RFC 9112 §5.2): a continuation joins the previous value.
            if line.first == " " || line.first == "\t" {
                guard !fields.isEmpty else { throw .malformedHeader(String(line)) }
                fields[fields.count - 1].value += " " + String(line).trimmingSpaces()
                continue
            }
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex,
                  !line[..<colon].contains(where: { $0 == " " || $0 == "\t" }) else {
                throw .malformedHeader(String(line))
            }
            fields.append((String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingSpaces()))
        }
        let head = HTTPResponseHead(version: String(parts[0]), status: status,
                                    reason: parts.count > 2 ? String(parts[2]) : "", fields: fields)
        // An interim response (100 Continue, 103 Early Hints) is followed by the real one; its
        // bytes count toward the head's limit.
        if (100...199).contains(status), status != 101 {
            interimHeadBytes += headBytes
            state = .head
            return
        }
        self.head = head
        if isResponseToHEAD || status == 204 || status == 304 || status == 101 {
            state = .complete
            return
        }
        if let coding = head["Transfer-Encoding"] {
            // Chunked must be the last coding (RFC 9112 §6.1); anything else before it would
            // need decoding this client does not do.
            let codings = head.values("Transfer-Encoding").joined(separator: ",")
                .split(separator: ",").map { String($0).trimmingSpaces().lowercased() }
            guard codings == ["chunked"] else { throw .unsupportedTransferEncoding(coding) }
            state = .chunkSize
            return
        }
        let lengths = head.values("Content-Length")
        if !lengths.isEmpty {
            // Repeated identical values are allowed (RFC 9110 §8.6); differing ones are not.
            let values = Set(lengths.flatMap { $0.split(separator: ",").map { String($0).trimmingSpaces() } })
            guard values.count == 1, let text = values.first, !text.isEmpty, text.count <= 15,
                  text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int(text) else {
                throw .invalidContentLength(lengths.joined(separator: ", "))
            }
            if length > limits.maxBodyBytes { throw .bodyTooLarge(limit: limits.maxBodyBytes) }
            state = length == 0 ? .complete : .fixed(remaining: length)
            return
        }
        state = .untilClose
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

extension String {
    fileprivate func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
