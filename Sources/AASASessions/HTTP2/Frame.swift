/// HTTP/2 frame types, flags, error codes and settings (RFC 9113 §6, §7, §6.5.2), and the
/// frame header (§4.1).
package enum FrameType {
    static package let data: UInt8 = 0x0
    static package let headers: UInt8 = 0x1
    static package let priority: UInt8 = 0x2
    static package let rstStream: UInt8 = 0x3
    static package let settings: UInt8 = 0x4
    static package let pushPromise: UInt8 = 0x5
    static package let ping: UInt8 = 0x6
    static package let goAway: UInt8 = 0x7
    static package let windowUpdate: UInt8 = 0x8
    static package let continuation: UInt8 = 0x9
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
    static package let enablePush: UInt16 = 0x2
    static package let maxConcurrentStreams: UInt16 = 0x3
    static package let initialWindowSize: UInt16 = 0x4
    static package let maxFrameSize: UInt16 = 0x5
    static package let maxHeaderListSize: UInt16 = 0x6
    static package let enableConnectProtocol: UInt16 = 0x8
    static package let noRFC7540Priorities: UInt16 = 0x9
}

/// The nine bytes before every frame's payload (RFC 9113 §4.1).
package struct FrameHeader {
    package static let size = 9
    package var length: Int
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

extension Output {
    /// Appends a frame header, its nine bytes in one copy.
    @inlinable
    mutating package func appendFrameHeader(length: Int, type: UInt8, flags: UInt8, stream: Int32) {
        let id = UInt32(bitPattern: stream)
        let header = (UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8), UInt8(truncatingIfNeeded: length),
                      type, flags, UInt8(truncatingIfNeeded: id >> 24), UInt8(truncatingIfNeeded: id >> 16),
                      UInt8(truncatingIfNeeded: id >> 8), UInt8(truncatingIfNeeded: id))
        withUnsafeBytes(of: header) { buffer.append(contentsOf: $0) }
    }

    /// Appends a frame whose payload is one 32-bit value (RST_STREAM, WINDOW_UPDATE).
    @inlinable
    mutating package func appendFrame(type: UInt8, stream: Int32, value: UInt32) {
        appendFrameHeader(length: 4, type: type, flags: 0, stream: stream)
        appendUInt32(value)
    }

    /// Appends a 32-bit value in network byte order (RFC 9113 §4.1).
    @inlinable
    mutating package func appendUInt32(_ value: UInt32) {
        withUnsafeBytes(of: value.bigEndian) { buffer.append(contentsOf: $0) }
    }
}
