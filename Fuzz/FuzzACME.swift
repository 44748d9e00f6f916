// libFuzzer entry point for the ACME client's reading of what a CA sends (RFC 8555): directory,
// order, authorization and problem documents, Retry-After and the URLs it hands out. Built by
// `make fuzz`, compiled into one module with the server's sources (the readers are internal).
//
// Whatever the bytes, reading never traps (no peer number reaches arithmetic unclamped), a
// Retry-After is at most a day, and every URL accepted is HTTPS.
import AASACore

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)
    if let seconds = ACMEClient.retryAfterSeconds(text) {
        precondition((0...ACMEClient.maximumRetryAfterSeconds).contains(seconds))
        _ = ACMEConfiguration().retryDelay(failures: size, retryAfterSeconds: seconds)
    }
    if let url = try? ACMEClient.url(text) { precondition(url.isSecure) }

    let json = JSONParser.parse(bytes, expecting: "a JSON object").value
    _ = ACMEProblem(json: json)?.description
    if let directory = ACMEClient.Directory(json: json) {
        for url in [directory.newNonce, directory.newAccount, directory.newOrder] {
            if let parsed = try? ACMEClient.url(url) { precondition(parsed.isSecure) }
        }
    }
    if let order = try? ACMEClient.Order(url: "https://ca.test/order/1", json: json) {
        for url in order.authorizations + [order.finalize] + (order.certificate.map { [$0] } ?? []) {
            _ = try? ACMEClient.url(url)
        }
    }
    if let authorization = try? ACMEClient.Authorization(url: "https://ca.test/authz/1", json: json) {
        for challenge in authorization.challenges { _ = try? ACMEClient.url(challenge.url) }
    }
    return 0
}
