// libFuzzer entry point for the HTTP/2 session (AASASessions' HTTP2Session: frames, streams, flow
// control and HPACK, all instrumented). Built by `make fuzz`, compiled with the sessions target's
// sources.
//
// The first byte shapes the run: bit 0 sends the client preface first (so the fuzzer spends its
// time past it), bits 1-6 cut the rest into pieces of that many bytes plus one, bit 7 lets the
// client "read" the output between pieces. The clock moves 7 ms a piece, and the run ends with
// a drain, the final GOAWAY and a timeout. Whatever the input, the session never crashes, never holds more than
// the high-water mark (plus one frame) of output while it runs, and always ends closing. Every
// response header block it writes decodes, with one HPACK decoder kept over the connection as a
// client keeps it, to `:status`, the response's fields and `date` (the encoder's dynamic table,
// EncoderTable, after whatever SETTINGS_HEADER_TABLE_SIZE values the input sent).
import AASAHTTP

private final class FuzzDispatch: RequestDispatch {
    static let body = (0..<20_000).map { UInt8(truncatingIfNeeded: $0) }
    static let head = ResponseHead(status: .ok, fields: [("content-type", "application/json")], contentLength: body.count)

    func respond(to request: HTTPRequest, startedMicroseconds: Int64) -> Response {
        if request.path == "/big" {
            return Response(head: FuzzDispatch.head, body: FuzzDispatch.body, sendsBody: request.method != .head)
        }
        return Response.message(.notFound, "no such file\n", request: request)
    }

    func refuse(_ error: HTTPError, startedMicroseconds: Int64) -> Response {
        Response.message(error.status, error.reason, request: nil)
    }
}

private let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + [0, 0, 0, 4, 0, 0, 0, 0, 0]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let shape = data[0]
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    let piece = Int(shape >> 1 & 0x3F) + 1
    let reads = shape & 0x80 != 0

    var configuration = HTTP2Configuration()
    configuration.outputHighWaterMark = 8 * 1024
    let bound = configuration.outputHighWaterMark + 16 * 1024 + 9
    let clock = LoopClock(now: 1_000, wallSecond: 1_700_000_000)
    let dispatch = FuzzDispatch()
    let session = HTTP2Session(configuration: configuration, clock: clock, dispatch: dispatch)
    var output = Output()

    let client = ResponseReader()
    if shape & 1 != 0 { preface.withUnsafeBytes { session.receive($0, output: &output) } }
    var start = 0
    while start < input.count {
        let end = min(input.count, start + piece)
        session.receive(UnsafeRawBufferPointer(rebasing: input[start..<end]), output: &output)
        if !session.isTerminated { precondition(output.pending <= bound, "output past the high-water mark") }
        if reads {
            client.read(output)
            output.reset()
            session.resume(output: &output)
        }
        clock.now += 7
        start = end
    }
    session.drain(output: &output)
    writeOut(session, &output, client)
    // The final GOAWAY follows the shutdown notice, then the idle deadline ends what is left.
    clock.now += HTTP2Session.shutdownNoticeGrace
    session.deadlineReached(output: &output)
    writeOut(session, &output, client)
    clock.now += configuration.idleTimeout + 1
    session.deadlineReached(output: &output)
    precondition(session.isClosing, "a drained, timed-out session must close")
    // The session holds its dispatch unowned (unsafe): keep it alive to the end.
    withExtendedLifetime(dispatch) {}
    return 0
}

/// Lets the session write everything out; a closed session produces nothing more.
private func writeOut(_ session: HTTP2Session, _ output: inout Output, _ client: ResponseReader) {
    var rounds = 0
    while !output.isEmpty, rounds < 10_000 {
        client.read(output)
        output.reset()
        session.resume(output: &output)
        rounds += 1
    }
}

/// The client's side of the server's frames: header blocks (HEADERS, then CONTINUATION until
/// END_HEADERS) decoded in order by one decoder, each checked to be a response of FuzzDispatch.
private final class ResponseReader {
    private let decoder = HeaderDecoder()
    private var bytes: [UInt8] = []
    private var block: [UInt8]?

    func read(_ output: Output) {
        bytes += output.buffer[output.sent...]
        if let body = output.body { bytes += body[output.bodySent...] }
        var at = 0
        while bytes.count - at >= 9 {
            let length = Int(bytes[at]) << 16 | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2])
            guard bytes.count - at >= 9 + length else { break }
            let type = bytes[at + 3], flags = bytes[at + 4]
            var payload = Array(bytes[(at + 9)..<(at + 9 + length)])
            at += 9 + length
            if type == 0x1 {
                precondition(block == nil, "HEADERS inside a header block")
                // The server never pads nor sends priority.
                precondition(flags & 0x28 == 0, "HEADERS with PADDED or PRIORITY")
                block = payload
            } else if type == 0x9 {
                precondition(block != nil, "CONTINUATION without HEADERS")
                block! += payload
            } else {
                precondition(block == nil, "a frame inside a header block")
                continue
            }
            if flags & 0x4 != 0 {
                swap(&payload, &block!)
                block = nil
                check(payload)
            }
        }
        bytes.removeFirst(at)
    }

    private func check(_ block: [UInt8]) {
        var names: [String] = []
        var status = ""
        let outcome = block.withUnsafeBytes { raw in
            decoder.decode(raw) { name, value, _ in
                let name = String(decoding: name, as: UTF8.self)
                if name == ":status" { status = String(decoding: value, as: UTF8.self) }
                names.append(name)
                return true
            }
        }
        precondition(outcome == .done, "a response header block that does not decode: \(block)")
        let expected = status == "200" ? ["content-type", "content-length"] : ["content-type", "x-content-type-options", "content-length"]
        precondition(names == [":status"] + expected + ["date"], "response fields \(names), status \(status)")
    }
}
