/// The chunked transfer coding of a request body (RFC 9112 §7.1), decoded as bytes arrive:
/// each byte is looked at once, however the body is split into reads. Strict where leniency
/// lets two parsers disagree on where a body ends (request smuggling): every line ends in CRLF,
/// a chunk size is hex digits only, and a chunk's data is followed by CRLF. Extensions are
/// skipped; trailer fields are read and dropped.
public struct ChunkedDecoder: Sendable {
    public enum Outcome: Equatable, Sendable {
        /// Every byte given was read; the body goes on.
        case needMore
        /// The body ended after this many of the bytes given (what follows is the next request).
        case complete(consumed: Int)
        case error(HTTPError)
    }

    private enum State: Sendable {
        case size, extensions, sizeLF, data, dataCR, dataLF, trailerStart, trailer, trailerLF, finalLF, done
    }

    /// The decoded body so far.
    public private(set) var body: [UInt8] = []
    private let limit: Int
    private var state = State.size
    private var size = 0
    private var digits = 0
    private var remaining = 0
    private var trailerBytes = 0
    private var extensionBytes = 0
    /// A chunk's extensions are dropped; a line with more than this of them is refused.
    static let extensionLimit = 4096
    /// Trailer fields are dropped; more than this of them is refused.
    static let trailerLimit = 16 * 1024

    /// - Parameter limit: the largest body accepted (413 past it).
    public init(limit: Int) {
        self.limit = limit
    }

    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var i = 0
        while i < bytes.count {
            let b = bytes[i]
            switch state {
            case .size:
                if let v = ChunkedDecoder.hexValue(b) {
                    digits += 1
                    guard digits <= 8 else { return .error(HTTPError(.payloadTooLarge, "a chunk size over \(limit) bytes")) }
                    size = size * 16 + v
                } else if digits > 0, b == 0x3B || b == 0x20 || b == 0x09 {
                    state = .extensions
                } else if digits > 0, b == 0x0D {
                    state = .sizeLF
                } else {
                    return .error(HTTPError(.badRequest, "a malformed chunk size"))
                }
            case .extensions:
                // chunk-ext: anything visible up to the line's end (its content is not used),
                // bounded: the raw bytes of a body are kept until it ends.
                extensionBytes += 1
                guard extensionBytes <= ChunkedDecoder.extensionLimit else {
                    return .error(HTTPError(.badRequest, "a chunk extension over \(ChunkedDecoder.extensionLimit) bytes"))
                }
                if b == 0x0D { state = .sizeLF } else if b < 0x20 && b != 0x09 || b == 0x7F {
                    return .error(HTTPError(.badRequest, "a control character in a chunk extension"))
                }
            case .sizeLF:
                guard b == 0x0A else { return .error(HTTPError(.badRequest, "a chunk size line not ended by CRLF")) }
                if size == 0 {
                    state = .trailerStart
                } else {
                    guard body.count + size <= limit else { return .error(HTTPError(.payloadTooLarge, "body over \(limit) bytes")) }
                    body.reserveCapacity(body.count + size)
                    remaining = size
                    state = .data
                }
                size = 0
                digits = 0
                extensionBytes = 0
            case .data:
                let n = min(remaining, bytes.count - i)
                body.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + n)]))
                remaining -= n
                i += n
                if remaining == 0 { state = .dataCR }
                continue
            case .dataCR:
                guard b == 0x0D else { return .error(HTTPError(.badRequest, "chunk data not followed by CRLF")) }
                state = .dataLF
            case .dataLF:
                guard b == 0x0A else { return .error(HTTPError(.badRequest, "chunk data not followed by CRLF")) }
                state = .size
            case .trailerStart, .trailer:
                // An empty line ends the body; anything else is a trailer field, to its CRLF.
                guard b != 0x0A else { return .error(HTTPError(.badRequest, "a bare LF after a chunked body")) }
                if state == .trailerStart, b == 0x0D {
                    state = .finalLF
                } else {
                    trailerBytes += 1
                    guard trailerBytes <= ChunkedDecoder.trailerLimit else {
                        return .error(HTTPError(.requestHeaderFieldsTooLarge, "trailer fields over \(ChunkedDecoder.trailerLimit) bytes"))
                    }
                    state = b == 0x0D ? .trailerLF : .trailer
                }
            case .trailerLF:
                guard b == 0x0A else { return .error(HTTPError(.badRequest, "a trailer field not ended by CRLF")) }
                state = .trailerStart
            case .finalLF:
                guard b == 0x0A else { return .error(HTTPError(.badRequest, "a chunked body not ended by CRLF")) }
                state = .done
                return .complete(consumed: i + 1)
            case .done:
                return .complete(consumed: i)
            }
            i += 1
        }
        return state == .done ? .complete(consumed: 0) : .needMore
    }

    private static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }
}
