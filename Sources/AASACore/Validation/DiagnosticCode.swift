/// Every rule the validator knows, with a stable code. The raw value is what users see in
/// `[code]` and in JSON output, so it never changes once released.
public enum DiagnosticCode: String, Sendable, CaseIterable {
    // The file and its JSON syntax (RFC 8259).
    case fileTooLarge = "file-too-large"
    case emptyFile = "empty-file"
    case byteOrderMark = "bom"
    case signedFile = "signed-file"
    case invalidUTF8 = "invalid-utf8"
    case syntax = "syntax"
    case missingComma = "missing-comma"
    case trailingComma = "trailing-comma"
    case comment = "comment"
    case unterminatedString = "unterminated-string"
    case controlCharacter = "control-character"
    case invalidEscape = "invalid-escape"
    case invalidNumber = "invalid-number"
    case invalidLiteral = "invalid-literal"
    case nestingTooDeep = "nesting-too-deep"
    case trailingContent = "trailing-content"
    case duplicateKey = "duplicate-key"

    // Structure of the document.
    case rootNotObject = "root-not-object"
    case noService = "no-service"
    case unknownKey = "unknown-key"
    case wrongType = "wrong-type"
    case missingKey = "missing-key"
    case emptyList = "empty-list"
    case legacyAppsNotEmpty = "legacy-apps-not-empty"
    case legacyDetailsDictionary = "legacy-details-dictionary"
    case invalidAppID = "invalid-app-id"
    case lowercaseAppIDPrefix = "app-id-lowercase-prefix"
    case appIDIgnored = "app-id-ignored"
    case pathsIgnored = "paths-ignored"
    case noPatterns = "no-patterns"
    case duplicateApp = "duplicate-app"
    case queryValueNotString = "query-value-not-string"
    case excludeInDefaults = "exclude-in-defaults"

    // Patterns and substitution variables.
    case unterminatedVariable = "unterminated-variable"
    case undefinedVariable = "undefined-variable"
    case invalidVariableName = "invalid-variable-name"
    case variableInVariable = "variable-in-variable"
    case variableShadowsBuiltin = "variable-shadows-builtin"
    case unreachableComponent = "unreachable-component"
    case unreachablePath = "unreachable-path"
    case unmatchablePattern = "unmatchable-pattern"
    case queryInPath = "query-in-path"
    case encodedPatternNotDecoded = "encoded-pattern-with-percent-encoded-false"
    case lowercasePercentEscape = "lowercase-percent-escape"

    // The other association files a site may host (docs/validation.md). Generic codes above (`bom`,
    // `file-too-large`, `empty-file`, `unknown-key`, `wrong-type`, `missing-key`, `empty-list`
    // and the JSON syntax codes) keep their meaning and severity in every kind of file.
    case rootNotArray = "root-not-array"
    case emptyRequiredList = "empty-required-list"
    case originTrailingSlash = "origin-trailing-slash"

    // assetlinks.json (Google's Digital Asset Links statement list).
    case assetLinksInvalidRelation = "assetlinks-invalid-relation"
    case assetLinksUnknownRelation = "assetlinks-unknown-relation"
    case assetLinksUnknownNamespace = "assetlinks-unknown-namespace"
    case assetLinksInvalidPackageName = "assetlinks-invalid-package-name"
    case assetLinksInvalidFingerprint = "assetlinks-invalid-fingerprint"
    case assetLinksLowercaseFingerprint = "assetlinks-lowercase-fingerprint"
    case assetLinksInvalidSite = "assetlinks-invalid-site"
    case assetLinksInvalidInclude = "assetlinks-invalid-include"
    case assetLinksDuplicateStatement = "assetlinks-duplicate-statement"

    // webauthn (WebAuthn Level 3 related origins).
    case webAuthnInvalidOrigin = "webauthn-invalid-origin"
    case webAuthnTooManyOrigins = "webauthn-too-many-origins"
    case webAuthnDuplicateOrigin = "webauthn-duplicate-origin"

    // apple-developer-merchantid-domain-association (Apple Pay).
    case merchantIDInvalidByte = "merchantid-invalid-byte"

    public var severity: Severity {
        switch self {
        case .byteOrderMark, .duplicateKey, .noService, .unknownKey, .emptyList,
             .legacyDetailsDictionary, .lowercaseAppIDPrefix, .appIDIgnored, .pathsIgnored,
             .noPatterns, .duplicateApp, .excludeInDefaults, .variableShadowsBuiltin,
             .unreachableComponent, .unreachablePath, .unmatchablePattern, .queryInPath,
             .encodedPatternNotDecoded, .lowercasePercentEscape,
             .originTrailingSlash, .assetLinksUnknownRelation, .assetLinksLowercaseFingerprint,
             .assetLinksDuplicateStatement, .webAuthnDuplicateOrigin:
            return .warning
        default:
            return .error
        }
    }

    /// Whether the finding means the bytes are not JSON that a device's parser accepts (RFC 8259):
    /// such a file is never read by a device at all, even where this parser recovers to report
    /// more. A byte-order mark and duplicate keys are tolerated by a device's parser.
    public var isJSONSyntaxError: Bool {
        switch self {
        case .emptyFile, .invalidUTF8, .syntax, .missingComma, .trailingComma, .comment,
             .unterminatedString, .controlCharacter, .invalidEscape, .invalidNumber, .invalidLiteral,
             .nestingTooDeep, .trailingContent:
            return true
        default:
            return false
        }
    }
}
