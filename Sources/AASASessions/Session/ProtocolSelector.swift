/// Which protocol a plain connection speaks, from its opening bytes, where HTTP/2 with prior
/// knowledge (h2c) is on: the client preface (RFC 9113 §3.4) is HTTP/2, anything else HTTP/1.1.
/// Nearly always decided on the first read: an HTTP/1.1 request does not start with `P`
/// unless it is a POST, told apart by its second byte. Pure: bytes in, a decision out.
package enum ProtocolSelector {

    package enum Decision: Equatable {
        /// Every byte so far is the preface's, and it is not whole yet.
        case needMore
        case http2
        case http1
    }

    static package func decide(_ opening: some Collection<UInt8>) -> Decision {
        let preface = ClientPreface.bytes
        var i = 0
        for b in opening {
            guard b == preface[i] else { return .http1 }
            i += 1
            if i == preface.count { return .http2 }
        }
        return .needMore
    }
}
