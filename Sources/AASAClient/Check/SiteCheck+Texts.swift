import AASACore
import AASAHTTP

/// What `aasa check` says of what an origin answered, written once for every command that
/// fetches association files as Apple's bot does (`check`, `monitor`, `import`): a reason named
/// here reads the same in each (docs/check.md).
extension SiteCheck {
    /// A certificate that does not verify for `host`: what OpenSSL found, and what to do.
    static package func certificateProblem(_ tls: TLSSummary, _ failure: String, host: String) -> String {
        "\(tls.protocolVersion), but the certificate does not verify for \(host): \(failure)\(SiteCheck.advice(failure, host: host))"
    }

    static package func advice(_ failure: String, host: String) -> String {
        if failure.contains("expired") { return ": renew it" }
        if failure.contains("hostname mismatch") || failure.contains("IP address mismatch") {
            return ": the certificate's subjectAltName must name \(host)"
        }
        if failure.contains("issuer") || failure.contains("self-signed") || failure.contains("self signed") {
            return ": serve the whole chain (leaf and intermediates) from a CA in the system trust store; Apple's CDN trusts no other"
        }
        return ""
    }

    static package func tlsFailure(_ error: HTTPClientError, viaConnect: Bool) -> String {
        switch error.phase {
        case .connect where viaConnect:
            return error.message
        case .connect where error.isTimeout:
            return "\(error.message): is a firewall dropping connections to port 443?"
        case .connect:
            return "\(error.message): the server must accept HTTPS on port 443"
        default:
            return error.message
        }
    }

    /// No complete answer to `GET path` once connected (a time-out, a broken response).
    static package func noCompleteResponse(_ path: String, _ error: HTTPClientError) -> String {
        "no complete HTTP response to GET \(path): \(error.message)"
    }

    /// The body is an HTML page (by its type, or by how it opens), nil when it is not.
    static package func htmlProblem(_ response: HTTPResponse) -> String? {
        let type = response["Content-Type"]
        let media = type.map { String($0.prefix { $0 != ";" }).trimmingCharacters().lowercased() }
        var start = response.body[...]
        while let b = start.first, [0x20, 0x09, 0x0A, 0x0D].contains(b) { start = start.dropFirst() }
        let opening = String(decoding: start.prefix(15), as: UTF8.self).lowercased()
        guard media == "text/html" || opening.hasPrefix("<!doctype") || opening.hasPrefix("<html") else { return nil }
        return "the body is an HTML page (Content-Type: \(type ?? "none")), not the file: often a single-page app's fallback; serve the JSON file at this path"
    }

    /// A body over the 128 KB after which iOS stops reading.
    static package func sizeProblem(_ bytes: Int) -> String {
        "\(bytes) bytes: over the \(AASAFile.maximumSize)-byte limit (128 KB) after which iOS stops reading: shrink the file (fewer paths, broader components)"
    }

    /// A body over what the client reads at all.
    static package func readLimitProblem(_ limit: Int) -> String {
        "over \(limit) bytes (reading stopped there); iOS stops after \(AASAFile.maximumSize) bytes (128 KB): shrink the file"
    }

    static package func statusProblem(_ response: HTTPResponse, host: String, path: String = SiteCheck.wellKnownPath) -> String {
        let status = response.head.statusText
        if (300...399).contains(response.status) {
            let location = response["Location"].map { " to \($0)" } ?? " (no Location)"
            return "the file is behind a \(status)\(location): serve it on \(host) itself; Apple's CDN follows no redirect"
        }
        let said = bodyLine(response)
        let answer = "\(status) for GET \(path)" + (said.map { " (the server says \"\($0)\")" } ?? "")
        if let said, refusesTheFile(said) {
            // The file is there and the server refused it (`aasa serve` does so with a file that
            // has errors): serving it again changes nothing, fixing it does.
            return "\(answer): the server has the file but refuses to serve it: fix what it reports (aasa validate lists every finding)"
        }
        if response.status == 401 || response.status == 403 {
            return "\(answer): the file must be public, with no authentication, bot protection or geo-blocking for \(SiteCheck.userAgent)"
        }
        if response.status >= 500 {
            return "\(answer): the server failed; Apple's CDN takes only a 200 with the file"
        }
        return "\(answer): serve the file at \(path) on \(host)"
    }

    /// Quoted bodies are cut here, in characters.
    static let quotedBodyLimit = 200

    /// The first non-blank line of a JSON or text body, control characters escaped and at most
    /// ``quotedBodyLimit`` characters (then `…`); nil for an HTML page, another type, or a body
    /// with nothing to read. A peer wrote it: it is bounded before it reaches a message.
    static func bodyLine(_ response: HTTPResponse) -> String? {
        let media = response["Content-Type"].map { String($0.prefix { $0 != ";" }).trimmingCharacters().lowercased() }
        if let media {
            let readable = media == "application/json" || media.hasSuffix("+json") || (media.hasPrefix("text/") && media != "text/html")
            guard readable else { return nil }
        }
        // At most what the limit needs: four bytes a character, and the line breaks before it.
        let text = String(decoding: response.body.prefix(64 * 1024), as: UTF8.self)
        guard let line = text.split(whereSeparator: \.isNewline).lazy.map({ String($0).trimmingWhitespace() })
            .first(where: { !$0.isEmpty }) else { return nil }
        // No type given: a page is not quoted.
        if media == nil, line.hasPrefix("<") { return nil }
        let cut = line.count > quotedBodyLimit ? String(line.prefix(quotedBodyLimit)) + "…" : line
        return cut.escapingControlCharacters
    }

    /// Whether the body's line says the file was refused rather than missing: `aasa serve`'s
    /// "has errors and is not served", and the words other servers use for the same.
    static func refusesTheFile(_ line: String) -> Bool {
        let l = line.lowercased()
        return ["has errors", "not served", "invalid", "rejected", "refused"].contains { l.contains($0) }
    }
}

extension String {
    func trimmingWhitespace() -> String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s = s.dropFirst() }
        while s.last?.isWhitespace == true { s = s.dropLast() }
        return String(s)
    }

    func trimmingCharacters() -> String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
