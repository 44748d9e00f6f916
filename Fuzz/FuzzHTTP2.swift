// libFuzzer entry point for the HTTP/2 session (AASASessions' HTTP2Session: frames, streams, flow
// control and HPACK, all instrumented). Built by `make fuzz`, compiled with the sessions target's
// sources.
//
// The first byte shapes the run: bit 0 sends the client preface first (so the fuzzer spends its
// time past it), bits 1-6 cut the rest into pieces of that many bytes plus one, bit 7 lets the
// client "read" the output between pieces. The clock moves 7 ms a piece, and the run ends with
// a drain, the final GOAWAY and a timeout. Whatever the input, the session never crashes, never holds more than
// the high-water mark (plus one frame) of output while it runs, and always ends closing.
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

    if shape & 1 != 0 { preface.withUnsafeBytes { session.receive($0, output: &output) } }
    var start = 0
    while start < input.count {
        let end = min(input.count, start + piece)
        session.receive(UnsafeRawBufferPointer(rebasing: input[start..<end]), output: &output)
        if !session.isTerminated { precondition(output.pending <= bound, "output past the high-water mark") }
        if reads {
            output.reset()
            session.resume(output: &output)
        }
        clock.now += 7
        start = end
    }
    session.drain(output: &output)
    writeOut(session, &output)
    // The final GOAWAY follows the shutdown notice, then the idle deadline ends what is left.
    clock.now += HTTP2Session.shutdownNoticeGrace
    session.deadlineReached(output: &output)
    writeOut(session, &output)
    clock.now += configuration.idleTimeout + 1
    session.deadlineReached(output: &output)
    precondition(session.isClosing, "a drained, timed-out session must close")
    // The session holds its dispatch unowned (unsafe): keep it alive to the end.
    withExtendedLifetime(dispatch) {}
    return 0
}

/// Lets the session write everything out; a closed session produces nothing more.
private func writeOut(_ session: HTTP2Session, _ output: inout Output) {
    var rounds = 0
    while !output.isEmpty, rounds < 10_000 {
        output.reset()
        session.resume(output: &output)
        rounds += 1
    }
}
