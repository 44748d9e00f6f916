// libFuzzer entry point for the HTTP/1.1 response parser (AASAHTTP), what `aasa check` and the
// ACME client read from servers they do not control. Built by `make fuzz`.
//
// Each input is fed whole, then again in pieces of 1 to 16 bytes (the size from the first
// byte), then the connection "closes". Both must end the same way, the body never passes its
// limit, and the head, interim responses included, never passes its own.


@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let limits = ResponseParser.Limits(maxHeadBytes: 2048, maxBodyBytes: 4096, maxTrailerBytes: 1024)
    let head = size > 0 && bytes[0] & 0x80 != 0
    let whole = outcome(bytes, pieces: max(size, 1), limits: limits, head: head)
    let piece = size > 0 ? Int(bytes[0] & 0x0F) + 1 : 1
    let split = outcome(bytes, pieces: piece, limits: limits, head: head)
    precondition(whole == split, "split input parsed differently: \(whole) vs \(split)")
    return 0
}

private struct Outcome: Equatable {
    var error: ResponseParseError?
    var status: Int?
    var body: [UInt8]
}

private func outcome(_ bytes: [UInt8], pieces: Int, limits: ResponseParser.Limits, head: Bool) -> Outcome {
    var parser = ResponseParser(limits: limits, isResponseToHEAD: head)
    do {
        var i = 0
        while i < bytes.count, !parser.isComplete {
            try parser.parse(bytes[i..<min(bytes.count, i + pieces)])
            i += pieces
        }
        try parser.endOfInput()
    } catch {
        precondition(parser.body.count <= limits.maxBodyBytes)
        return Outcome(error: error, status: parser.head?.status, body: [])
    }
    precondition(parser.body.count <= limits.maxBodyBytes)
    return Outcome(error: nil, status: parser.head?.status, body: parser.body)
}
