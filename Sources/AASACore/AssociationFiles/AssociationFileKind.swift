/// The association files a site may host (docs/serving.md, "Config directory"): Apple's
/// `apple-app-site-association`, Android's `assetlinks.json`, Apple Pay's merchant domain file and
/// WebAuthn's related origins. Each kind knows its file name in a site folder, the path it is
/// served at and its content type.
public enum AssociationFileKind: String, Sendable, CaseIterable, Hashable, CustomStringConvertible {
    /// `apple-app-site-association` (universal links, shared web credentials, App Clips, Handoff).
    case aasa
    /// `assetlinks.json`: Google's Digital Asset Links statement list (Android App Links,
    /// credential sharing).
    case assetLinks = "assetlinks"
    /// `apple-developer-merchantid-domain-association`: Apple Pay on the web's domain verification file.
    case merchantID = "merchantid"
    /// `webauthn`: WebAuthn Level 3 related origins (§5.11).
    case webAuthn = "webauthn"

    /// The name the file has in a site folder, and the last component of ``urlPath``.
    public var fileName: String {
        switch self {
        case .aasa: return "apple-app-site-association"
        case .assetLinks: return "assetlinks.json"
        case .merchantID: return "apple-developer-merchantid-domain-association"
        case .webAuthn: return "webauthn"
        }
    }

    /// The request path the file is served at. Every kind lives under `/.well-known/` (RFC 8615);
    /// an AASA file is also fetched at the legacy `/apple-app-site-association` (docs/serving.md,
    /// "Responses"), which is not listed here.
    public var urlPath: String { "/.well-known/" + fileName }

    /// Every path a file is served at (each kind's ``urlPath``, and the legacy AASA path), each
    /// String made once: the request parsers hand out these same Strings for a request to one of
    /// them, and the handler compares with them, which is immediate for the same String.
    public static let servedPaths: [(path: String, kind: AssociationFileKind)] =
        allCases.map { ($0.urlPath, $0) } + [(legacyAASAPath, .aasa)]

    /// Where an AASA file was fetched before `/.well-known/` (iOS 9.2 and earlier; `aasa check`
    /// tries it when the well-known path fails, and `serve` answers it as the well-known one).
    public static let legacyAASAPath = "/apple-app-site-association"

    /// The `Content-Type` to serve the file with (docs/serving.md, "Responses"). Apple Pay's file
    /// is opaque text that Apple compares byte for byte; the others are JSON, and both Android's
    /// verifier and WebAuthn clients (§5.11.1) refuse another type.
    public var contentType: String {
        switch self {
        case .aasa, .assetLinks, .webAuthn: return "application/json"
        case .merchantID: return "text/plain"
        }
    }

    /// The largest file the validator accepts; bigger is an error reported at 1:1.
    /// - AASA: swcd stops reading after 128 KB (docs/aasa-reference.md §1.9).
    /// - assetlinks.json and webauthn: no published limit; 128 KB, like AASA, is far above
    ///   any real file (1 000 origins of 100 bytes is 100 KB) and bounds what is held in memory.
    /// - merchant ID: 64 KiB (docs/validation.md); Apple's file is a few kilobytes of hex.
    public var maximumSize: Int {
        switch self {
        case .aasa: return AASAFile.maximumSize
        case .assetLinks, .webAuthn: return 131_072
        case .merchantID: return 65_536
        }
    }

    /// The `--kind` name: `aasa`, `assetlinks`, `merchantid` or `webauthn`.
    public var description: String { rawValue }

    /// The kind whose file has this name, or nil for any other name (a command then reads the
    /// file as AASA). `name` may be a path: only its last component counts.
    public static func kind(forFileName name: String) -> AssociationFileKind? {
        let base = name.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? name
        return allCases.first { $0.fileName == base }
    }
}
