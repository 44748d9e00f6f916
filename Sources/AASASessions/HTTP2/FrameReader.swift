#if canImport(Glibc)
import Glibc
#endif

/// The client's side of the connection cut into frames (RFC 9113 §3.4, §4.1): its preface
/// checked, then each whole frame handed on as its header and payload. A frame split across
/// reads is carried to the next one; a frame is handed on in place when a read holds it whole.
struct FrameReader {
    /// Bytes of the client's connection preface still to check.
    private var prefaceLeft = ClientPreface.text.utf8CodeUnitCount
    /// A frame not yet whole at the end of a read: its header and what has come of its payload.
    private var partial: [UInt8] = []

    /// Calls `handle` with each whole frame `input` completes, in order, while it returns true;
    /// keeps what is left of a last, partial frame. Throws when the bytes break the framing: an
    /// invalid preface, or a frame over our SETTINGS_MAX_FRAME_SIZE (found as soon as its header
    /// is read). Returns false when `handle` stopped it.
    mutating func read(_ bytes: UnsafeRawBufferPointer,
                       _ handle: (FrameHeader, UnsafeRawBufferPointer) -> Bool) throws(ConnectionError) -> Bool {
        var input = bytes
        if prefaceLeft > 0 {
            let n = min(prefaceLeft, input.count)
            let at = ClientPreface.text.utf8CodeUnitCount - prefaceLeft
            if n > 0, memcmp(input.baseAddress!, ClientPreface.text.utf8Start + at, n) != 0 {
                throw ConnectionError(.protocolError, "an invalid connection preface")
            }
            prefaceLeft -= n
            input = UnsafeRawBufferPointer(rebasing: input[n...])
        }
        if !partial.isEmpty {
            guard try completePartialFrame(&input, handle) else { return false }
        }
        while input.count >= FrameHeader.size {
            let header = FrameHeader(input)
            try FrameReader.check(header)
            guard input.count >= FrameHeader.size + header.length else { break }
            let payload = UnsafeRawBufferPointer(rebasing: input[FrameHeader.size..<(FrameHeader.size + header.length)])
            guard handle(header, payload) else { return false }
            input = UnsafeRawBufferPointer(rebasing: input[(FrameHeader.size + header.length)...])
        }
        if !input.isEmpty {
            partial.append(contentsOf: input)
            if partial.count >= FrameHeader.size {
                try FrameReader.check(partial.withUnsafeBytes { FrameHeader($0) })
            }
        }
        return true
    }

    /// Adds the front of `input` to the frame carried from the last read and hands it on once
    /// whole. False while it is not, or when `handle` stopped.
    private mutating func completePartialFrame(_ input: inout UnsafeRawBufferPointer,
                                               _ handle: (FrameHeader, UnsafeRawBufferPointer) -> Bool) throws(ConnectionError) -> Bool {
        if partial.count < FrameHeader.size {
            let n = min(FrameHeader.size - partial.count, input.count)
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<n]))
            input = UnsafeRawBufferPointer(rebasing: input[n...])
            if partial.count < FrameHeader.size { return false }
        }
        let header = partial.withUnsafeBytes { FrameHeader($0) }
        try FrameReader.check(header)
        let n = min(FrameHeader.size + header.length - partial.count, input.count)
        partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[..<n]))
        input = UnsafeRawBufferPointer(rebasing: input[n...])
        if partial.count < FrameHeader.size + header.length { return false }
        var frame: [UInt8] = []
        swap(&frame, &partial)
        let goesOn = frame.withUnsafeBytes { bytes in
            handle(header, UnsafeRawBufferPointer(rebasing: bytes[FrameHeader.size..<bytes.count]))
        }
        // A small buffer is kept for the next split frame; a large one is given back.
        frame.removeAll(keepingCapacity: frame.capacity <= 1024)
        partial = frame
        return goesOn
    }

    /// A frame longer than we accept is a FRAME_SIZE_ERROR (RFC 9113 §4.2).
    private static func check(_ header: FrameHeader) throws(ConnectionError) {
        guard header.length <= FrameHeader.maxLength else { throw ConnectionError(.frameSizeError, "a frame over SETTINGS_MAX_FRAME_SIZE") }
    }
}
