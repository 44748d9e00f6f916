/// The HTTP/2 frame codec (RFC 9113 §4, §6): frame types, flags, error codes and settings; the
/// frame header; each payload decoded into a typed ``Frame`` with every check a frame can fail on
/// its own; and the encoders of the frames the server writes. What a frame means for the
/// connection and its streams is ``HTTP2Session``'s; how responses become HEADERS and DATA,
/// ``ResponseScheduler``'s.

/// The frame types (RFC 9113 §6). Any other type is an extension frame, ignored (§5.5).
package enum FrameType: UInt8 {
    case data = 0x0
    case headers = 0x1
    case priority = 0x2
    case rstStream = 0x3
    case settings = 0x4
    case pushPromise = 0x5
    case ping = 0x6
    case goAway = 0x7
    case windowUpdate = 0x8
    case continuation = 0x9
}

package enum FrameFlag {
    static package let endStream: UInt8 = 0x1
    static package let ack: UInt8 = 0x1
    static package let endHeaders: UInt8 = 0x4
    static package let padded: UInt8 = 0x8
    static package let priority: UInt8 = 0x20
}

/// The error codes of RST_STREAM and GOAWAY (RFC 9113 §7).
package enum HTTP2ErrorCode: UInt32, Sendable {
    case noError = 0x0
    case protocolError = 0x1
    case flowControlError = 0x3
    case streamClosed = 0x5
    case frameSizeError = 0x6
    case refusedStream = 0x7
    case cancel = 0x8
    case compressionError = 0x9
    case enhanceYourCalm = 0xB
}

/// SETTINGS parameters (RFC 9113 §6.5.2; RFC 8441 §3; RFC 9218 §2.1).
package enum SettingID {
    static package let headerTableSize: UInt16 = 0x1
    static package let enablePush: UInt16 = 0x2
    static package let maxConcurrentStreams: UInt16 = 0x3
    static package let initialWindowSize: UInt16 = 0x4
    static package let maxFrameSize: UInt16 = 0x5
    static package let maxHeaderListSize: UInt16 = 0x6
    static package let enableConnectProtocol: UInt16 = 0x8
    static package let noRFC7540Priorities: UInt16 = 0x9
}

/// The client connection preface (RFC 9113 §3.4): these 24 bytes, then a SETTINGS frame.
package enum ClientPreface {
    static package let text: StaticString = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    static package var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount) }
    /// Its first line, `PRI * HTTP/2.0`, which an HTTP/1.1 parser reads as a request line.
    static package var requestLine: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[..<14]) }
}

/// A connection error (RFC 9113 §5.4.1): the GOAWAY code, and why, for logs and tests.
package struct ConnectionError: Error {
    package let code: HTTP2ErrorCode
    package let reason: StaticString

    init(_ code: HTTP2ErrorCode, _ reason: StaticString) {
        self.code = code
        self.reason = reason
    }
}

/// The nine bytes before every frame's payload (RFC 9113 §4.1).
package struct FrameHeader {
    package static let size = 9
    /// The largest frame we accept: our SETTINGS_MAX_FRAME_SIZE, the protocol's default and
    /// least value (§4.2); a client's frame over it is a FRAME_SIZE_ERROR.
    package static let maxLength = 16_384
    package var length: Int
    /// The type's byte as sent (an unknown one is an extension frame).
    package var type: UInt8
    package var flags: UInt8
    /// The stream identifier, the reserved bit cleared (it is ignored on receipt).
    package var stream: Int32

    /// Reads a header from the first nine bytes of `bytes`.
    package init(_ bytes: UnsafeRawBufferPointer) {
        length = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
        type = bytes[3]
        flags = bytes[4]
        stream = Int32(bitPattern: FrameHeader.uint32(bytes, at: 5) & 0x7FFF_FFFF)
    }

    package func has(_ flag: UInt8) -> Bool { flags & flag != 0 }

    package static func uint32(_ bytes: UnsafeRawBufferPointer, at i: Int) -> UInt32 {
        UInt32(bytes[i]) << 24 | UInt32(bytes[i + 1]) << 16 | UInt32(bytes[i + 2]) << 8 | UInt32(bytes[i + 3])
    }
}

/// A frame from the client, its payload decoded. Byte ranges point into the bytes read (or the
/// session's buffer of a frame split across reads) and live only while the frame is handled.
package enum Frame {
    /// `content` without padding; `flowLength` the whole payload, padding included, which is
    /// what flow control counts (§6.9.1).
    case data(stream: Int32, content: UnsafeRawBufferPointer, flowLength: Int, endStream: Bool)
    /// The header block fragment, without padding and priority fields.
    case headers(stream: Int32, fragment: UnsafeRawBufferPointer, endStream: Bool, endHeaders: Bool)
    case continuation(stream: Int32, fragment: UnsafeRawBufferPointer, endHeaders: Bool)
    /// Parsed and checked, though the priority scheme is deprecated (§5.3.2).
    case priority(stream: Int32)
    case rstStream(stream: Int32)
    case settings(Settings)
    case settingsAck
    case ping(opaque: UnsafeRawBufferPointer, isAck: Bool)
    case goAway
    /// A zero increment is left to the session: an error of the connection or of one stream.
    case windowUpdate(stream: Int32, increment: Int)
    /// An extension frame (§5.5).
    case unknown

    /// What a SETTINGS frame changes that the server acts on; when a parameter comes twice, the
    /// last value holds (§6.5.3).
    package struct Settings {
        package var headerTableSize: Int?
        package var initialWindowSize: Int?
        package var maxFrameSize: Int?
    }

    /// The largest flow-control window (§6.9.1).
    package static let maxWindow = 0x7FFF_FFFF
    /// Entries one SETTINGS frame may hold: seven parameters exist, and more entries than a few
    /// times that is only work for us (libnghttp2 stops at 32 as well, CVE-2020-11080).
    static let maxSettingsEntries = 32

    /// Decodes a whole frame, with every check the frame fails on its own (RFC 9113 §6): the
    /// stream it may be sent on, its length, padding, priority and setting values.
    package init(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer) throws(ConnectionError) {
        let id = header.stream
        switch FrameType(rawValue: header.type) {
        case .data:
            guard id != 0 else { throw ConnectionError(.protocolError, "DATA on stream 0") }
            guard let content = Frame.unpadded(header, payload) else { throw ConnectionError(.protocolError, "DATA with bad padding") }
            self = .data(stream: id, content: content, flowLength: header.length, endStream: header.has(FrameFlag.endStream))
        case .headers:
            guard id != 0, id & 1 == 1 else { throw ConnectionError(.protocolError, "HEADERS on stream 0 or a server stream") }
            guard var fragment = Frame.unpadded(header, payload) else { throw ConnectionError(.protocolError, "HEADERS with bad padding") }
            if header.has(FrameFlag.priority) {
                guard fragment.count >= 5 else {
                    // Padding that leaves no room for the priority fields is padding that
                    // exceeds what remains (§6.2): PROTOCOL_ERROR; a frame simply too short,
                    // FRAME_SIZE_ERROR.
                    if header.has(FrameFlag.padded) { throw ConnectionError(.protocolError, "HEADERS padding over its priority fields") }
                    throw ConnectionError(.frameSizeError, "HEADERS too short for its priority")
                }
                try Frame.checkDependency(fragment, of: id)
                fragment = UnsafeRawBufferPointer(rebasing: fragment[5...])
            }
            self = .headers(stream: id, fragment: fragment, endStream: header.has(FrameFlag.endStream),
                            endHeaders: header.has(FrameFlag.endHeaders))
        case .continuation:
            self = .continuation(stream: id, fragment: payload, endHeaders: header.has(FrameFlag.endHeaders))
        case .priority:
            guard id != 0 else { throw ConnectionError(.protocolError, "PRIORITY on stream 0") }
            guard header.length == 5 else { throw ConnectionError(.frameSizeError, "PRIORITY not 5 bytes long") }
            try Frame.checkDependency(payload, of: id)
            self = .priority(stream: id)
        case .rstStream:
            guard header.length == 4 else { throw ConnectionError(.frameSizeError, "RST_STREAM not 4 bytes long") }
            guard id != 0 else { throw ConnectionError(.protocolError, "RST_STREAM on stream 0") }
            self = .rstStream(stream: id)
        case .settings:
            guard id == 0 else { throw ConnectionError(.protocolError, "SETTINGS on a stream") }
            if header.has(FrameFlag.ack) {
                guard header.length == 0 else { throw ConnectionError(.frameSizeError, "a SETTINGS ACK with a payload") }
                self = .settingsAck
            } else {
                self = .settings(try Frame.settings(payload))
            }
        case .pushPromise:
            throw ConnectionError(.protocolError, "PUSH_PROMISE from a client")
        case .ping:
            guard id == 0 else { throw ConnectionError(.protocolError, "PING on a stream") }
            guard header.length == 8 else { throw ConnectionError(.frameSizeError, "PING not 8 bytes long") }
            self = .ping(opaque: payload, isAck: header.has(FrameFlag.ack))
        case .goAway:
            guard id == 0 else { throw ConnectionError(.protocolError, "GOAWAY on a stream") }
            guard header.length >= 8 else { throw ConnectionError(.frameSizeError, "a short GOAWAY") }
            self = .goAway
        case .windowUpdate:
            guard header.length == 4 else { throw ConnectionError(.frameSizeError, "WINDOW_UPDATE not 4 bytes long") }
            self = .windowUpdate(stream: id, increment: Int(FrameHeader.uint32(payload, at: 0) & 0x7FFF_FFFF))
        case nil:
            self = .unknown
        }
    }

    /// The payload without its padding (§6.1, §6.2): nil when the pad length is not inside it.
    private static func unpadded(_ header: FrameHeader, _ payload: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer? {
        guard header.has(FrameFlag.padded) else { return payload }
        guard let padding = payload.first, Int(padding) < payload.count else { return nil }
        return UnsafeRawBufferPointer(rebasing: payload[1..<(payload.count - Int(padding))])
    }

    /// RFC 7540 §5.3.1: a stream cannot depend on itself.
    private static func checkDependency(_ fields: UnsafeRawBufferPointer, of id: Int32) throws(ConnectionError) {
        if Int32(bitPattern: FrameHeader.uint32(fields, at: 0) & 0x7FFF_FFFF) == id {
            throw ConnectionError(.protocolError, "a stream depends on itself")
        }
    }

    private static func settings(_ payload: UnsafeRawBufferPointer) throws(ConnectionError) -> Settings {
        guard payload.count % 6 == 0 else { throw ConnectionError(.frameSizeError, "SETTINGS not a multiple of 6 bytes") }
        guard payload.count <= 6 * maxSettingsEntries else { throw ConnectionError(.enhanceYourCalm, "too many SETTINGS entries") }
        var settings = Settings()
        for at in stride(from: 0, to: payload.count, by: 6) {
            let id = UInt16(payload[at]) << 8 | UInt16(payload[at + 1])
            let value = FrameHeader.uint32(payload, at: at + 2)
            switch id {
            case SettingID.headerTableSize:
                // The most the server's encoder may use (``EncoderTable``; RFC 7541 §4.2).
                settings.headerTableSize = Int(value)
            case SettingID.enablePush:
                if value > 1 { throw ConnectionError(.protocolError, "SETTINGS_ENABLE_PUSH not 0 or 1") }
            case SettingID.initialWindowSize:
                guard value <= maxWindow else { throw ConnectionError(.flowControlError, "SETTINGS_INITIAL_WINDOW_SIZE over 2^31-1") }
                settings.initialWindowSize = Int(value)
            case SettingID.enableConnectProtocol, SettingID.noRFC7540Priorities:
                // RFC 8441 §3, RFC 9218 §2.1.
                if value > 1 { throw ConnectionError(.protocolError, "a SETTINGS flag not 0 or 1") }
            case SettingID.maxFrameSize:
                guard value >= FrameHeader.maxLength, value <= 0xFF_FFFF else {
                    throw ConnectionError(.protocolError, "SETTINGS_MAX_FRAME_SIZE out of range")
                }
                settings.maxFrameSize = Int(value)
            default:
                // What the server does not do (push, its own streams).
                break
            }
        }
        return settings
    }
}

// MARK: - Frames out

extension Output {
    /// Appends a frame header, its nine bytes in one copy.
    mutating package func appendFrameHeader(length: Int, type: FrameType, flags: UInt8, stream: Int32) {
        withUnsafeBytes(of: Output.frameHeader(length: length, type: type, flags: flags, stream: stream)) { buffer.append(contentsOf: $0) }
    }

    /// Writes a frame header over the nine bytes at `offset`, left for it by a prepared frame
    /// (``ResponseHead/http2Frame``).
    mutating package func fillFrameHeader(at offset: Int, length: Int, type: FrameType, flags: UInt8, stream: Int32) {
        let header = Output.frameHeader(length: length, type: type, flags: flags, stream: stream)
        buffer.withUnsafeMutableBytes { $0.storeBytes(of: header, toByteOffset: offset, as: Swift.type(of: header)) }
    }

    /// The nine bytes of a frame header (§4.1).
    private static func frameHeader(length: Int, type: FrameType, flags: UInt8, stream: Int32)
        -> (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) {
        let id = UInt32(bitPattern: stream)
        return (UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                type.rawValue, flags, UInt8(truncatingIfNeeded: id >> 24), UInt8(truncatingIfNeeded: id >> 16),
                UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id))
    }

    /// The server's SETTINGS (§6.5), each parameter with its value.
    mutating package func appendSettings(_ parameters: [(UInt16, Int)]) {
        appendFrameHeader(length: 6 * parameters.count, type: .settings, flags: 0, stream: 0)
        for (id, value) in parameters {
            withUnsafeBytes(of: id.bigEndian) { buffer.append(contentsOf: $0) }
            appendUInt32(UInt32(value))
        }
    }

    mutating package func appendSettingsAck() {
        appendFrameHeader(length: 0, type: .settings, flags: FrameFlag.ack, stream: 0)
    }

    /// PING with the ACK flag, echoing the client's eight bytes (§6.7).
    mutating package func appendPingAck(_ opaque: UnsafeRawBufferPointer) {
        appendFrameHeader(length: 8, type: .ping, flags: FrameFlag.ack, stream: 0)
        buffer.append(contentsOf: opaque)
    }

    mutating package func appendRstStream(_ stream: Int32, _ code: HTTP2ErrorCode) {
        appendFrameHeader(length: 4, type: .rstStream, flags: 0, stream: stream)
        appendUInt32(code.rawValue)
    }

    mutating package func appendWindowUpdate(_ stream: Int32, increment: Int) {
        appendFrameHeader(length: 4, type: .windowUpdate, flags: 0, stream: stream)
        appendUInt32(UInt32(increment))
    }

    mutating package func appendGoAway(lastStream: Int32, _ code: HTTP2ErrorCode) {
        appendFrameHeader(length: 8, type: .goAway, flags: 0, stream: 0)
        appendUInt32(UInt32(bitPattern: lastStream))
        appendUInt32(code.rawValue)
    }

    /// Appends a 32-bit value in network byte order (RFC 9113 §4.1).
    mutating package func appendUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
    }
}
