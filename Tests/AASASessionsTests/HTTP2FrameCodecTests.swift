import Testing
@testable import AASASessions

/// The HTTP/2 frame codec on its own (RFC 9113 §4, §6): each payload decoded into its typed
/// frame or refused with its connection error, the reader's cutting of bytes into frames, and
/// the encoders. The session's use of frames is HTTP2FrameLayerTests' and HTTP2SessionTests'.
@Suite struct HTTP2FrameCodecTests {
    /// Decodes the frame `bytes` hold (one whole frame, header first).
    private func decode(_ bytes: [UInt8]) -> Result<AASASessions.Frame, ConnectionError> {
        bytes.withUnsafeBytes { raw in
            let header = FrameHeader(raw)
            let payload = UnsafeRawBufferPointer(rebasing: raw[FrameHeader.size...])
            do throws(ConnectionError) {
                return .success(try AASASessions.Frame(header, payload))
            } catch {
                return .failure(error)
            }
        }
    }

    private func code(_ bytes: [UInt8]) -> HTTP2ErrorCode? {
        if case .failure(let error) = decode(bytes) { return error.code }
        return nil
    }

    @Test func dataLosesItsPaddingButFlowControlCountsIt() throws {
        // PADDED, pad length 3: one byte of length, "abc", three of padding.
        let bytes = Frame(type: Frame.data, flags: 0x8 | Frame.endStream, stream: 5, payload: [3] + Array("abc".utf8) + [0, 0, 0]).bytes
        guard case .success(.data(let stream, let content, let flowLength, let endStream)) = decode(bytes) else {
            Issue.record("not DATA")
            return
        }
        #expect(stream == 5 && Array(content) == Array("abc".utf8) && flowLength == 7 && endStream)
    }

    @Test func paddingAsLongAsThePayloadIsAProtocolError() {
        #expect(code(Frame(type: Frame.data, flags: 0x8, stream: 1, payload: [3, 0, 0]).bytes) == .protocolError)
        #expect(code(Frame(type: Frame.data, flags: 0x8, stream: 1, payload: []).bytes) == .protocolError)
        #expect(code(Frame(type: Frame.data, stream: 0, payload: [1]).bytes) == .protocolError)
    }

    @Test func headersDropPaddingAndPriorityFields() {
        // PADDED | PRIORITY: pad length 1, dependency on stream 3 with weight 16, "xy", padding.
        let payload: [UInt8] = [1] + be32(3) + [16] + Array("xy".utf8) + [0]
        let bytes = Frame(type: Frame.headers, flags: 0x8 | 0x20 | Frame.endHeaders, stream: 7, payload: payload).bytes
        guard case .success(.headers(let stream, let fragment, let endStream, let endHeaders)) = decode(bytes) else {
            Issue.record("not HEADERS")
            return
        }
        #expect(stream == 7 && Array(fragment) == Array("xy".utf8) && !endStream && endHeaders)
    }

    @Test func headersThatBreakTheirOwnRulesAreConnectionErrors() {
        // On a server (even) stream, and on stream 0.
        #expect(code(Frame(type: Frame.headers, flags: Frame.endHeaders, stream: 2, payload: [0x82]).bytes) == .protocolError)
        #expect(code(Frame(type: Frame.headers, flags: Frame.endHeaders, stream: 0, payload: [0x82]).bytes) == .protocolError)
        // PRIORITY with fewer than five bytes: too short; with padding eating them: padding.
        #expect(code(Frame(type: Frame.headers, flags: 0x20, stream: 1, payload: [0, 0, 0]).bytes) == .frameSizeError)
        #expect(code(Frame(type: Frame.headers, flags: 0x20 | 0x8, stream: 1, payload: [3, 0, 0, 0, 1, 16]).bytes) == .protocolError)
        // A stream that depends on itself (RFC 7540 §5.3.1), in HEADERS and in PRIORITY.
        #expect(code(Frame(type: Frame.headers, flags: 0x20, stream: 3, payload: be32(3) + [16, 0x82]).bytes) == .protocolError)
        #expect(code(Frame(type: 2, stream: 3, payload: be32(3) + [16]).bytes) == .protocolError)
    }

    @Test func fixedLengthFramesOfTheWrongLengthAreFrameSizeErrors() {
        #expect(code(Frame(type: Frame.rstStream, stream: 1, payload: [0, 0, 8]).bytes) == .frameSizeError)
        #expect(code(Frame(type: Frame.ping, payload: [0, 0, 0, 0, 0, 0, 0]).bytes) == .frameSizeError)
        #expect(code(Frame(type: Frame.windowUpdate, stream: 1, payload: [0, 0, 1]).bytes) == .frameSizeError)
        #expect(code(Frame(type: 2, stream: 1, payload: [0, 0, 0, 0]).bytes) == .frameSizeError)
        #expect(code(Frame(type: Frame.goAway, payload: [0, 0, 0, 0]).bytes) == .frameSizeError)
        #expect(code(Frame(type: Frame.settings, flags: Frame.ack, payload: [0]).bytes) == .frameSizeError)
        #expect(code(Frame(type: Frame.settings, payload: [0, 4, 0, 0, 1]).bytes) == .frameSizeError)
    }

    @Test func connectionFramesOnAStreamAndStreamFramesOnZeroAreProtocolErrors() {
        #expect(code(Frame(type: Frame.settings, stream: 1).bytes) == .protocolError)
        #expect(code(Frame(type: Frame.ping, stream: 1, payload: [UInt8](repeating: 0, count: 8)).bytes) == .protocolError)
        #expect(code(Frame(type: Frame.goAway, stream: 1, payload: [UInt8](repeating: 0, count: 8)).bytes) == .protocolError)
        #expect(code(Frame(type: Frame.rstStream, stream: 0, payload: be32(8)).bytes) == .protocolError)
        #expect(code(Frame(type: 5, stream: 1, payload: be32(2)).bytes) == .protocolError)  // PUSH_PROMISE from a client
    }

    @Test func settingsKeepTheLastValueAndCheckEachOne() throws {
        let bytes = Wire.settings([(0x4, 100), (0x5, 20_000), (0x4, 200), (0x1, 0)])
        guard case .success(.settings(let settings)) = decode(bytes) else {
            Issue.record("not SETTINGS")
            return
        }
        #expect(settings.initialWindowSize == 200 && settings.maxFrameSize == 20_000)
        #expect(code(Wire.settings([(0x2, 2)])) == .protocolError)
        #expect(code(Wire.settings([(0x4, 0x8000_0000)])) == .flowControlError)
        #expect(code(Wire.settings([(0x5, 16_383)])) == .protocolError)
        #expect(code(Wire.settings([(0x5, 0x100_0000)])) == .protocolError)
        #expect(code(Wire.settings([(0x9, 2)])) == .protocolError)
        #expect(code(Wire.settings(Array(repeating: (0x1, 0), count: 33))) == .enhanceYourCalm)
    }

    @Test func windowUpdateKeepsAZeroIncrementForTheSession() {
        guard case .success(.windowUpdate(let stream, let increment)) = decode(Frame(type: Frame.windowUpdate, stream: 3, payload: be32(0x8000_0000)).bytes) else {
            Issue.record("not WINDOW_UPDATE")
            return
        }
        // The reserved bit is dropped; zero is the session's to judge (stream or connection error).
        #expect(stream == 3 && increment == 0)
    }

    @Test func unknownTypesAreExtensionFrames() {
        guard case .success(.unknown) = decode(Frame(type: 0xFA, stream: 9, payload: [1, 2, 3]).bytes) else {
            Issue.record("not an extension frame")
            return
        }
    }

    // MARK: - Reader

    /// Every frame `bytes` holds, read in pieces of `size` bytes, or the reader's error.
    private func read(_ bytes: [UInt8], inPiecesOf size: Int) -> Result<[Frame], ConnectionError> {
        var reader = FrameReader()
        var frames: [Frame] = []
        var at = 0
        while at < bytes.count {
            let piece = Array(bytes[at..<min(at + size, bytes.count)])
            at += size
            let error = piece.withUnsafeBytes { raw -> ConnectionError? in
                do throws(ConnectionError) {
                    _ = try reader.read(raw) { header, payload in
                        frames.append(Frame(type: header.type, flags: header.flags, stream: UInt32(header.stream), payload: Array(payload)))
                        return true
                    }
                    return nil
                } catch {
                    return error
                }
            }
            if let error { return .failure(error) }
        }
        return .success(frames)
    }

    @Test func frameSplitAnywhereReadsAsTheSameFrames() throws {
        let bytes = Wire.clientStart + Wire.get(stream: 1) + Wire.ping(3) + Wire.data(stream: 1, count: 20_000 / 2, endStream: true)
        let whole = try read(bytes, inPiecesOf: bytes.count).get()
        #expect(whole.map(\.type) == [Frame.settings, Frame.headers, Frame.ping, Frame.data])
        for size in [1, 2, 9, 10, 100, 4096] {
            #expect(try read(bytes, inPiecesOf: size).get() == whole, "pieces of \(size)")
        }
    }

    @Test func readerRefusesABadPrefaceAndAnOversizedFrameFromItsHeader() {
        var bad = Wire.clientStart
        bad[5] = UInt8(ascii: "X")
        guard case .failure(let preface) = read(bad, inPiecesOf: 64) else {
            Issue.record("a bad preface was accepted")
            return
        }
        #expect(preface.code == .protocolError)
        // Only the header of a frame over 16,384 bytes has come: refused already.
        let header = Array(Frame(type: Frame.data, stream: 1, payload: []).bytes[3...])
        let oversized = Wire.clientStart + [0x00, 0x40, 0x01] + header
        guard case .failure(let size) = read(oversized, inPiecesOf: oversized.count) else {
            Issue.record("an oversized frame was accepted")
            return
        }
        #expect(size.code == .frameSizeError)
    }

    @Test func handlerStopsTheReaderAtOnce() {
        let bytes = Wire.clientStart + Wire.ping(1) + Wire.ping(2)
        var reader = FrameReader()
        var seen = 0
        let goesOn = bytes.withUnsafeBytes { raw -> Bool in
            do throws(ConnectionError) {
                return try reader.read(raw) { _, _ in
                    seen += 1
                    return seen < 2
                }
            } catch {
                return true
            }
        }
        #expect(!goesOn && seen == 2)
    }

    // MARK: - Encoders

    @Test func encodersWriteTheFramesTheyName() {
        var output = Output()
        output.appendRstStream(3, .cancel)
        output.appendWindowUpdate(0, increment: 40_000)
        output.appendGoAway(lastStream: 7, .enhanceYourCalm)
        output.appendSettingsAck()
        let frames = Frame.parse(output.buffer)
        #expect(frames.map(\.type) == [Frame.rstStream, Frame.windowUpdate, Frame.goAway, Frame.settings])
        #expect(frames[0].stream == 3 && frames[0].errorCode == 8)
        #expect(readBE32(frames[1].payload, at: 0) == 40_000)
        #expect(frames[2].lastStreamID == 7 && frames[2].errorCode == 0xB)
        #expect(frames[3].flags == Frame.ack && frames[3].payload.isEmpty)
    }
}
