// libFuzzer entry point for the HTTP/1.1 request parser (AASAHTTP). Built by `make fuzz`.
//
// Each input is fed whole, then again split at every 7th byte as if it arrived in pieces: both
// must give the same result, and a parsed head can never be longer than the input.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    var whole = RequestParser()
    let once = whole.parse(bytes)
    if case .request(_, let length) = once { precondition(length <= size) }

    var pieces = RequestParser()
    var result = RequestParser.Result.needMore
    var end = 0
    while end < size {
        end = min(size, end + 7)
        result = pieces.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<end]))
        if result != .needMore { break }
    }
    if case .request = once, case .request = result {
        precondition(once == result, "split input parsed differently")
    }
    return 0
}
