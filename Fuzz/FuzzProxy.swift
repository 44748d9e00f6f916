// libFuzzer entry point for the PROXY protocol header parser (AASAHTTP). Built by `make fuzz`.
//
// A header is never longer than its input, and `.needMore` is only answered while every byte
// seen could still be header: feeding any prefix of a parsed header must ask for more.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    if case .header(_, let length) = ProxyHeader.parse(bytes) {
        precondition(length <= size)
        for prefix in [0, length / 2, length - 1] where prefix < length {
            precondition(ProxyHeader.parse(UnsafeRawBufferPointer(rebasing: bytes[0..<prefix])) == .needMore)
        }
    }
    return 0
}
