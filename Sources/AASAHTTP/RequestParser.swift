/// An incremental HTTP/1.1 request-head parser (RFC 9112). Bytes in, a request or an error out;
/// no I/O. Feed it the unconsumed input each time more arrives: it resumes its search for the
/// end of the head where it stopped, so the work over a slow client's byte-at-a-time head stays
/// linear, and it checks every limit as bytes arrive rather than once the head is complete.
public struct RequestParser: Sendable {
    /// The reason of the 400 for a request line whose version is not `HTTP/` digit `.` digit.
    public static let malformedVersion = "malformed HTTP version"

    public enum Result: Sendable, Equatable {
        /// The head is not complete yet; no limit has been broken.
        case needMore
        /// A complete head of `headLength` bytes (leading empty lines included).
        case request(HTTPRequest, headLength: Int)
        case error(HTTPError)
    }

    public let limits: HTTPLimits
    /// How far the input has been scanned for the end of the head.
    private var scanned = 0
    /// Offset of the first byte of the request line (after empty lines before it).
    private var lineStart = 0
    private var requestLineEnd: Int?
    private var lines = 0
    /// The last Host value and User-Agent, and the Strings made of them: a keep-alive client
    /// sends the same ones with every request, and comparing the bytes costs less than checking
    /// and copying them again (~400 instructions a keep-alive request, perf_instr.py).
    private var lastHost = RememberedField()
    private var lastUserAgent = RememberedField()

    /// Targets whose Strings are made once (``InternedTargets``).
    private let targets: InternedTargets?

    public init(limits: HTTPLimits = HTTPLimits(), targets: InternedTargets? = nil) {
        self.limits = limits
        self.targets = targets
    }

    /// Forgets the request just parsed; call before parsing the next one.
    public mutating func reset() {
        scanned = 0
        lineStart = 0
        requestLineEnd = nil
        lines = 0
    }

    /// What ``parse(_:into:)`` found.
    public enum Outcome: Sendable, Equatable {
        /// The head is not complete yet; no limit has been broken.
        case needMore
        /// A complete head of `headLength` bytes (leading empty lines included), written into
        /// the request.
        case complete(headLength: Int)
        case error(HTTPError)
    }

    /// ``parse(_:into:)`` with the request in the result (tests, the fuzzer).
    public mutating func parse(_ input: UnsafeRawBufferPointer) -> Result {
        var request = HTTPRequest()
        switch parse(input, into: &request) {
        case .needMore: return .needMore
        case .complete(let headLength): return .request(request, headLength: headLength)
        case .error(let error): return .error(error)
        }
    }

    /// Parses what has arrived; a complete head's request is written into `request` (every
    /// field, the body emptied), so that it is made where it is used and never copied (the
    /// server's session).
    public mutating func parse(_ input: UnsafeRawBufferPointer, into request: inout HTTPRequest) -> Outcome {
        let bytes = input.bindMemory(to: UInt8.self)
        let count = bytes.count
        var i = scanned
        while i < count {
            // Jump to the next CR or LF: only they change the state. The limits are checked on
            // the span jumped over, which is the same as checking every byte.
            let j = ByteScan.firstLineBreak(bytes, from: i)
            // Checked only when content bytes were skipped (not at the CR/LF themselves), and
            // "over" the limit: a line of exactly the limit is allowed.
            if j > i, requestLineEnd == nil, j - lineStart > limits.maxRequestLine {
                return .error(HTTPError(.uriTooLong, "request line longer than \(limits.maxRequestLine) bytes"))
            }
            if j > i, requestLineEnd != nil, j - lineStart > limits.maxHeaderBytes {
                return .error(HTTPError(.requestHeaderFieldsTooLarge, "header section longer than \(limits.maxHeaderBytes) bytes"))
            }
            i = j
            guard i < count else { break }
            if bytes[i] == 0x0D {
                // A CR must be followed by LF; at the end of the input, look again when more comes.
                guard i + 1 < count else { break }
                if bytes[i + 1] != 0x0A {
                    return .error(HTTPError(.badRequest, "bare CR in the request head"))
                }
                // The LF of this CRLF, taken in the same turn.
                i += 1
            } else {
                // An LF the scan reached first has no CR before it: a CR stops the scan, and is
                // taken with its LF (or left for the next input when it ends this one).
                return .error(HTTPError(.badRequest, "bare LF as a line ending"))
            }
            if requestLineEnd == nil {
                if i - 1 == lineStart {
                    // RFC 9112 §2.2: empty lines before the request line are ignored.
                    lineStart = i + 1
                    if lineStart > limits.maxHeaderBytes {
                        return .error(HTTPError(.badRequest, "too many empty lines before the request"))
                    }
                } else {
                    requestLineEnd = i - 1
                }
            } else if i >= 3, bytes[i - 2] == 0x0A, bytes[i - 3] == 0x0D {
                scanned = i + 1
                return parseHead(bytes, headEnd: i + 1, into: &request)
            } else {
                lines += 1
                if lines > limits.maxHeaderFields {
                    return .error(HTTPError(.requestHeaderFieldsTooLarge, "more than \(limits.maxHeaderFields) header fields"))
                }
            }
            i += 1
        }
        scanned = i
        return .needMore
    }

    // MARK: - The complete head

    private mutating func parseHead(_ bytes: UnsafeBufferPointer<UInt8>, headEnd: Int, into request: inout HTTPRequest) -> Outcome {
        guard let lineEnd = requestLineEnd else { return .error(HTTPError(.badRequest, "no request line")) }
        let line = UnsafeBufferPointer(rebasing: bytes[lineStart..<lineEnd])

        // request-line = method SP request-target SP HTTP-version
        let sp1 = ByteScan.firstIndex(of: 0x20, or: 0x20, in: line, from: 0)
        guard sp1 < line.count, sp1 > 0 else {
            return .error(HTTPError(.badRequest, "malformed request line"))
        }
        let methodBytes = line[0..<sp1]
        guard methodBytes.allSatisfy(RequestParser.isTokenChar) else {
            return .error(HTTPError(.badRequest, "invalid method"))
        }
        let sp2 = ByteScan.firstIndex(of: 0x20, or: 0x20, in: line, from: sp1 + 1)
        guard sp2 < line.count, sp2 > sp1 + 1 else {
            return .error(HTTPError(.badRequest, "malformed request line"))
        }
        let targetBytes = line[(sp1 + 1)..<sp2]
        // One of the paths the server expects, whose String is made once: its bytes are known good.
        let interned = targets?.text(for: UnsafeBufferPointer(rebasing: targetBytes))
        guard interned != nil || ByteScan.isVisibleASCII(UnsafeBufferPointer(rebasing: targetBytes)) else {
            return .error(HTTPError(.badRequest, "invalid character in the request target"))
        }
        let versionBytes = line[(sp2 + 1)...]
        guard versionBytes.count == 8, RequestParser.equals(versionBytes.prefix(5), "HTTP/"),
              let major = RequestParser.digit(versionBytes[versionBytes.startIndex + 5]),
              versionBytes[versionBytes.startIndex + 6] == UInt8(ascii: "."),
              let minor = RequestParser.digit(versionBytes[versionBytes.startIndex + 7])
        else { return .error(HTTPError(.badRequest, RequestParser.malformedVersion)) }
        guard major == 1 else {
            return .error(HTTPError(.httpVersionNotSupported, "HTTP/\(major).\(minor) is not supported on this connection"))
        }
        // RFC 9110 §2.5: a higher minor version is answered as the highest we support.
        let version: HTTPVersion = minor == 0 ? .http10 : .http11

        let method: HTTPMethod
        if RequestParser.equals(methodBytes, "GET") {
            method = .get
        } else if RequestParser.equals(methodBytes, "HEAD") {
            method = .head
        } else {
            method = .other(String(decoding: methodBytes, as: UTF8.self))
        }

        // The path is found on bytes: routing compares it, and only the target is kept whole
        // (for the log). Strings are made once, at the end.
        var pathStart = targetBytes.startIndex
        var targetHost: String?
        if targetBytes.first == UInt8(ascii: "/") || targetBytes.elementsEqual(CollectionOfOne(UInt8(ascii: "*"))) {
            // origin-form or asterisk-form
        } else if let schemeLength = RequestParser.schemeLength(targetBytes) {
            // absolute-form (RFC 9112 §3.2.2): the host in the target wins over Host.
            let authorityStart = targetBytes.startIndex + schemeLength
            var authorityEnd = authorityStart
            while authorityEnd < targetBytes.endIndex, targetBytes[authorityEnd] != UInt8(ascii: "/"), targetBytes[authorityEnd] != UInt8(ascii: "?") {
                authorityEnd += 1
            }
            guard let host = RequestParser.normalizeHost(UnsafeBufferPointer(rebasing: line[authorityStart..<authorityEnd])) else {
                return .error(HTTPError(.badRequest, "invalid host in the request target"))
            }
            targetHost = host
            pathStart = authorityEnd
        } else {
            return .error(HTTPError(.badRequest, "unsupported request target form"))
        }
        let target: String, path: String
        if let interned {
            // A path (no query, origin form): target and path are its String.
            (target, path) = (interned, interned)
        } else {
            let pathEnd = ByteScan.firstIndex(of: UInt8(ascii: "?"), or: UInt8(ascii: "#"),
                                              in: UnsafeBufferPointer(rebasing: line[..<targetBytes.endIndex]), from: pathStart)
            target = String(decoding: targetBytes, as: UTF8.self)
            // An origin-form target without a query is its own path (most requests): one String.
            path = pathEnd == pathStart ? "/"
                : pathStart == targetBytes.startIndex && pathEnd == targetBytes.endIndex ? target
                : String(decoding: line[pathStart..<pathEnd], as: UTF8.self)
        }

        // Header fields.
        var hostField: String?
        var hostCount = 0
        var contentLength: Int?
        var transferEncoding = false
        /// Transfer codings in order, over every Transfer-Encoding field; only `chunked` alone
        /// is one this server can frame (RFC 9112 §6.1).
        var codings = 0
        var onlyChunked = true
        var connectionClose = false
        var connectionKeepAlive = false
        var ifNoneMatch: String?
        var ifModifiedSince: String?
        var userAgent: String?
        var authorization: String?
        var ifMatch: String?
        var isOwnCheck = false
        var expectsContinue = false

        var p = lineEnd + 2
        let end = headEnd - 2
        while p < end {
            // The head's line breaks are all CRLF (checked as it arrived).
            let crlf = ByteScan.firstLineBreak(UnsafeBufferPointer(rebasing: bytes[..<end]), from: p)
            guard crlf < end else { return .error(HTTPError(.badRequest, "malformed header field")) }
            let field = UnsafeBufferPointer(rebasing: bytes[p..<crlf])
            p = crlf + 2
            if let first = field.first, first == 0x20 || first == 0x09 {
                return .error(HTTPError(.badRequest, "obsolete line folding in a header field"))
            }
            let colon = ByteScan.firstIndex(of: UInt8(ascii: ":"), or: UInt8(ascii: ":"), in: field, from: 0)
            guard colon < field.count, colon > 0 else {
                return .error(HTTPError(.badRequest, "header field without a name"))
            }
            let name = field[0..<colon]
            // A name that is one of the known fields is made of token characters (see KnownField).
            let known = KnownField.named(anyCase: name)
            guard known != nil || name.allSatisfy(RequestParser.isTokenChar) else {
                // Includes white space before the colon, forbidden by RFC 9112 §5.1.
                return .error(HTTPError(.badRequest, "invalid header field name"))
            }
            var vs = colon + 1
            var ve = field.count
            while vs < ve, field[vs] == 0x20 || field[vs] == 0x09 { vs += 1 }
            while ve > vs, field[ve - 1] == 0x20 || field[ve - 1] == 0x09 { ve -= 1 }
            let valueBytes = UnsafeBufferPointer(rebasing: field[vs..<ve])
            if known == .host {
                hostCount += 1
                guard hostCount == 1 else { return .error(HTTPError(.badRequest, "more than one Host field")) }
            }
            // A Host or User-Agent the same as the last request's was checked then.
            if known == .host, let h = lastHost.value(for: valueBytes) {
                hostField = h
                continue
            }
            if known == .userAgent, let ua = lastUserAgent.value(for: valueBytes) {
                userAgent = ua
                continue
            }
            guard !ByteScan.containsControl(valueBytes) || valueBytes.allSatisfy({ $0 >= 0x20 && $0 != 0x7F || $0 == 0x09 }) else {
                return .error(HTTPError(.badRequest, "control character in a header field value"))
            }
            switch known {
            case .host:
                guard let h = RequestParser.normalizeHost(valueBytes) else {
                    return .error(HTTPError(.badRequest, "invalid Host field"))
                }
                lastHost.remember(valueBytes, as: h)
                hostField = h
            case .contentLength:
                guard contentLength == nil else { return .error(HTTPError(.badRequest, "more than one Content-Length field")) }
                guard !valueBytes.isEmpty, valueBytes.count <= 18, valueBytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                    return .error(HTTPError(.badRequest, "invalid Content-Length"))
                }
                contentLength = valueBytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            case .transferEncoding:
                transferEncoding = true
                RequestParser.forEachToken(valueBytes) { token in
                    codings += 1
                    if !RequestParser.equalsIgnoringCase(token, "chunked") { onlyChunked = false }
                }
            case .connection:
                RequestParser.forEachToken(valueBytes) { token in
                    if RequestParser.equalsIgnoringCase(token, "close") { connectionClose = true }
                    if RequestParser.equalsIgnoringCase(token, "keep-alive") { connectionKeepAlive = true }
                }
            case .ifNoneMatch:
                ifNoneMatch = String(decoding: valueBytes, as: UTF8.self)
            case .ifModifiedSince:
                ifModifiedSince = String(decoding: valueBytes, as: UTF8.self)
            case .userAgent:
                let ua = String(decoding: valueBytes, as: UTF8.self)
                lastUserAgent.remember(valueBytes, as: ua)
                userAgent = ua
            case .authorization:
                // Two credentials: which one counts would be a guess (RFC 9110 §11.6.2 has one).
                guard authorization == nil else { return .error(HTTPError(.badRequest, "more than one Authorization field")) }
                authorization = String(decoding: valueBytes, as: UTF8.self)
            case .expect:
                // RFC 9110 §10.1.1: the only expectation there is; anything else is ignored.
                if RequestParser.equalsIgnoringCase(valueBytes, "100-continue") { expectsContinue = true }
            case .ifMatch:
                ifMatch = String(decoding: valueBytes, as: UTF8.self)
            case .ownCheck:
                isOwnCheck = true
            case .method, .path, .authority, .scheme, nil:
                // HTTP/2's pseudo-header fields are never an HTTP/1.1 name.
                break
            }
        }

        // RFC 9112 §6.1: Content-Length with Transfer-Encoding is how requests are smuggled.
        if transferEncoding && contentLength != nil {
            return .error(HTTPError(.badRequest, "both Content-Length and Transfer-Encoding"))
        }
        // A coding we cannot undo leaves the body's end unknown: 501, and the connection closes.
        if transferEncoding && (codings != 1 || !onlyChunked) {
            return .error(HTTPError(.notImplemented, "only Transfer-Encoding: chunked is supported"))
        }
        if let contentLength, contentLength > limits.maxBody {
            return .error(HTTPError(.payloadTooLarge, "body of \(contentLength) bytes is over \(limits.maxBody)"))
        }
        if version == .http11 && hostField == nil && targetHost == nil {
            return .error(HTTPError(.badRequest, "HTTP/1.1 request without Host"))
        }
        let keepAlive = !connectionClose && !transferEncoding && (version == .http11 || connectionKeepAlive)
        // Field by field into the caller's request: a request made here and returned in the
        // result was copied and the copy destroyed (a retain and a release per String, ~550
        // instructions a request, callgrind), however it was written.
        request.method = method
        request.target = target
        request.path = path
        request.host = targetHost ?? hostField
        request.version = version
        request.keepAlive = keepAlive
        request.ifNoneMatch = ifNoneMatch
        request.ifModifiedSince = ifModifiedSince
        request.userAgent = userAgent
        request.contentLength = contentLength ?? 0
        request.hasUnframedBody = transferEncoding
        request.authorization = authorization
        request.ifMatch = ifMatch
        request.isOwnCheck = isOwnCheck
        request.expectsContinue = expectsContinue && version == .http11
        if !request.body.isEmpty { request.body = [] }
        return .complete(headLength: headEnd)
    }

    // MARK: - Helpers

    /// The field `aasa check` and `aasa monitor` add to their requests, which send Apple's bot's
    /// User-Agent so that an origin answers them as it answers Apple: the fetch record leaves
    /// such requests out, and any access log that records the field tells them apart.
    public static let ownCheckField = "AASA-Check"

    /// RFC 9110 §5.6.2 tchar. It is asked for every byte of every field name: a bit set held
    /// in constants, where a global table cost a lazy-initialisation check per byte.
    @inline(__always)
    static func isTokenChar(_ b: UInt8) -> Bool {
        // 0-9 a-z A-Z ! # $ % & ' * + - . ^ _ ` | ~
        ByteSet(low: 0x03FF_6CFA_0000_0000, high: 0x57FF_FFFF_C7FF_FFFE).contains(b)
    }

    /// Byte for byte, case-sensitive; generic `elementsEqual` and `starts(with:)` over a
    /// String's UTF-8 cost some 50 instructions a byte (callgrind).
    static func equals(_ bytes: Slice<UnsafeBufferPointer<UInt8>>, _ text: StaticString) -> Bool {
        guard bytes.count == text.utf8CodeUnitCount else { return false }
        var i = 0
        for b in bytes {
            if b != text.utf8Start[i] { return false }
            i += 1
        }
        return true
    }

    static func digit(_ b: UInt8) -> Int? { b >= 0x30 && b <= 0x39 ? Int(b - 0x30) : nil }

    static func equalsIgnoringCase<C: Collection<UInt8>>(_ bytes: C, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        let l = lower.utf8Start
        var i = 0
        for b in bytes {
            let folded = (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b
            if folded != l[i] { return false }
            i += 1
        }
        return true
    }

    /// Calls `body` with each comma-separated token of a field value, white space trimmed.
    static func forEachToken(_ value: UnsafeBufferPointer<UInt8>, _ body: (Slice<UnsafeBufferPointer<UInt8>>) -> Void) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != UInt8(ascii: ",") { end += 1 }
            var s = start
            var e = end
            while s < e, value[s] == 0x20 || value[s] == 0x09 { s += 1 }
            while e > s, value[e - 1] == 0x20 || value[e - 1] == 0x09 { e -= 1 }
            if s < e { body(value[s..<e]) }
            start = end + 1
        }
    }

    /// The length of an `http://` or `https://` prefix (any case), or nil.
    static func schemeLength(_ target: Slice<UnsafeBufferPointer<UInt8>>) -> Int? {
        if target.count > 7, equalsIgnoringCase(target.prefix(7), "http://") { return 7 }
        if target.count > 8, equalsIgnoringCase(target.prefix(8), "https://") { return 8 }
        return nil
    }

    /// `Host` (RFC 9110 §7.2): `uri-host [":" port]`, where uri-host is a bracketed IPv6
    /// literal, or a reg-name (which covers IPv4) of non-empty labels (RFC 3986 §3.2.2). Returns
    /// it lower case without the port and without one trailing dot (the root label), or nil when
    /// it is not a valid host: userinfo (`user@host`, RFC 9110 §4.2.4 calls it an error), an
    /// empty label (`example.com..`), a character outside reg-name, a port that is not digits.
    public static func normalizeHost(_ value: String) -> String? {
        Array(value.utf8).withUnsafeBufferPointer { normalizeHost($0) }
    }

    public static func normalizeHost(_ value: UnsafeBufferPointer<UInt8>) -> String? {
        var end = value.count
        guard end > 0 else { return nil }
        if value[0] == UInt8(ascii: "[") {
            guard let close = value.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let after = value[(close + 1)..<end]
            guard after.isEmpty || (after.first == UInt8(ascii: ":") && after.dropFirst().allSatisfy { $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            guard close > 1, value[1..<close].allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ":") || $0 == UInt8(ascii: ".") }) else { return nil }
            return String(decoding: value[0...close].map(lower), as: UTF8.self)
        }
        if let colon = value.firstIndex(of: UInt8(ascii: ":")) {
            guard value[(colon + 1)..<end].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            end = colon
        }
        if end > 0, value[end - 1] == UInt8(ascii: ".") { end -= 1 }
        guard end > 0 else { return nil }
        var atLabelStart = true
        var hasUpper = false
        var i = 0
        while i < end {
            let b = value[i]
            if b == UInt8(ascii: ".") {
                if atLabelStart { return nil }
                atLabelStart = true
                i += 1
                continue
            }
            atLabelStart = false
            if b == UInt8(ascii: "%") {
                guard i + 2 < end, isHexDigit(value[i + 1]), isHexDigit(value[i + 2]) else { return nil }
                i += 3
                continue
            }
            guard isRegNameChar(b) else { return nil }
            if b >= 0x41 && b <= 0x5A { hasUpper = true }
            i += 1
        }
        // A dot left at the end was a second one: an empty label.
        if atLabelStart { return nil }
        if !hasUpper { return String(decoding: value[0..<end], as: UTF8.self) }
        return String(decoding: value[0..<end].map(lower), as: UTF8.self)
    }

    /// RFC 3986 §3.2.2 reg-name bytes other than "%" and ".": unreserved and sub-delims.
    @inline(__always)
    private static func isRegNameChar(_ b: UInt8) -> Bool {
        // 0-9 a-z A-Z - _ ~ ! $ & ' ( ) * + , ; =
        ByteSet(low: 0x2BFF_3FD2_0000_0000, high: 0x47FF_FFFE_87FF_FFFE).contains(b)
    }

    private static func lower(_ b: UInt8) -> UInt8 { b >= 0x41 && b <= 0x5A ? b | 0x20 : b }

    private static func isHexDigit(_ b: UInt8) -> Bool {
        (b >= 0x30 && b <= 0x39) || ((b | 0x20) >= 0x61 && (b | 0x20) <= 0x66)
    }
}


extension StringProtocol {
    func trimmingCharacters(in set: String) -> Substring {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return s
    }
}
