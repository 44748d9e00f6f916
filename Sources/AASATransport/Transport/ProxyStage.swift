import AASAHTTP
#if canImport(Glibc)
import Glibc
#endif

/// Reads a PROXY protocol header (docs/deployment.md, "Behind a load balancer") in front of TLS or
/// HTTP without reading past it: the bytes after it belong to the next layer. It peeks, then
/// consumes only what the parser says is header; a header split across reads is kept until it is
/// whole.
package struct ProxyStage {
    package enum Outcome {
        /// Not complete yet: wait for readability.
        case needMore
        /// The header is consumed; the client's address, if it gave one.
        case done(client: String?)
        case failed(String)
    }

    private var partial: [UInt8] = []

    package init() {}

    mutating package func read(_ io: inout some ConnectionIO, scratch: UnsafeMutableRawBufferPointer) -> Outcome {
        let n: Int
        switch io.peek(into: scratch) {
        case .wouldBlock: return .needMore
        case .bytes(let count): n = count
        case .closed: return .failed("closed before the PROXY header")
        }
        let peeked = UnsafeRawBufferPointer(rebasing: scratch[0..<n])
        let result = partial.isEmpty ? ProxyHeader.parse(peeked) : (partial + peeked).withUnsafeBytes { ProxyHeader.parse($0) }
        switch result {
        case .needMore:
            // Everything seen so far is header (the parser never asks for more than that).
            partial.append(contentsOf: peeked)
            io.discard(n)
            return .needMore
        case .invalid(let reason):
            return .failed(reason)
        case .header(let source, let length):
            let rest = length - partial.count
            io.discard(rest)
            partial = []
            switch source {
            case .inet(let host, _): return .done(client: host)
            case .unix(let path): return .done(client: "unix:" + path)
            case .local: return .done(client: nil)
            }
        }
    }
}
