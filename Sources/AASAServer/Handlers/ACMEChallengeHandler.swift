import AASAHTTP
import AASASessions

/// HTTP-01 (RFC 8555 §8.3) on the `--http` listeners, with `--acme`: the key authorization of
/// a pending challenge at `/.well-known/acme-challenge/TOKEN`, for any host (the CA asks with
/// the host being validated). The only path besides the association files that answers 200.
enum ACMEChallengeHandler {
    static let prefix = "/.well-known/acme-challenge/"

    static func handles(_ request: HTTPRequest) -> Bool {
        request.path.hasPrefix(prefix)
    }

    static func respond(to request: HTTPRequest, challenges: PendingChallenges) -> Answer {
        guard request.method == .get || request.method == .head else {
            return .message(.methodNotAllowed, "only GET and HEAD\n", request: request, site: "acme-challenge", extraFields: [("allow", "GET, HEAD")])
        }
        let token = String(request.path.dropFirst(prefix.count))
        // RFC 8555 §8.3: the body is the key authorization itself, no trailing newline.
        guard !token.isEmpty, let keyAuthorization = challenges.keyAuthorization(token: token) else {
            return .message(.notFound, "no such ACME challenge\n", request: request, site: "acme-challenge")
        }
        return .message(.ok, keyAuthorization, request: request, site: "acme-challenge", contentType: "text/plain")
    }
}
