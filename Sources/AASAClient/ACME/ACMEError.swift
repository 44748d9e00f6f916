import AASACore

/// Why an ACME step failed, with what the scheduler needs to decide when to try again.
public struct ACMEError: Error, CustomStringConvertible, Sendable {
    public enum Kind: Sendable {
        /// The CA could not be reached or answered with something that is not ACME.
        case transport
        /// The CA answered with a problem document (RFC 8555 §6.7).
        case problem(ACMEProblem)
        /// The CA's answer broke the protocol (a missing field, an unexpected status).
        case protocolViolation
        /// Making a key, a signature or a certificate request failed.
        case crypto
        /// Reading or writing the `--certs` directory failed.
        case storage
    }

    public var kind: Kind
    /// The step and what went wrong, for the log.
    public var message: String
    /// Seconds the CA asked us to wait (`Retry-After`, RFC 8555 §6.6).
    public var retryAfter: Int?

    package init(_ kind: Kind, _ message: String, retryAfter: Int? = nil) {
        self.kind = kind
        self.message = message
        self.retryAfter = retryAfter
    }

    public var description: String {
        if case .problem(let problem) = kind { return "\(message): \(problem)" }
        return message
    }

    package var problem: ACMEProblem? {
        if case .problem(let p) = kind { return p }
        return nil
    }
}

/// An RFC 7807 problem document as ACME uses it (RFC 8555 §6.7): a type URN, a detail for
/// people, and for compound failures the subproblems per identifier.
public struct ACMEProblem: Sendable, CustomStringConvertible {
    public var type: String
    public var detail: String
    public var status: Int?
    /// (identifier value, type, detail) of each subproblem (§6.7.1).
    public var subproblems: [(identifier: String, type: String, detail: String)]

    static let badNonce = "urn:ietf:params:acme:error:badNonce"

    package init(type: String, detail: String, status: Int? = nil, subproblems: [(identifier: String, type: String, detail: String)] = []) {
        self.type = type
        self.detail = detail
        self.status = status
        self.subproblems = subproblems
    }

    package init?(json: JSONValue?) {
        guard let json, let type = json["type"]?.stringValue else { return nil }
        self.type = type
        self.detail = json["detail"]?.stringValue ?? ""
        self.status = json["status"].flatMap { if case .number(let n) = $0.kind { return Int(n) } else { return nil } }
        self.subproblems = (json["subproblems"]?.arrayValue ?? []).map { sub in
            (sub["identifier"]?["value"]?.stringValue ?? "?", sub["type"]?.stringValue ?? "", sub["detail"]?.stringValue ?? "")
        }
    }

    /// One log line: `type: detail (subproblems: name: type: detail; …)`.
    public var description: String {
        var text = type + (detail.isEmpty ? "" : ": " + detail)
        if !subproblems.isEmpty {
            text += " (subproblems: " + subproblems.map { "\($0.identifier): \($0.type): \($0.detail)" }.joined(separator: "; ") + ")"
        }
        return text
    }
}
