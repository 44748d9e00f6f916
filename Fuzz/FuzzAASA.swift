// libFuzzer entry point for AASACore: the JSON parser, the validators of every association
// file kind and the matcher. Built by `make fuzz` with `swiftc -sanitize=fuzzer,address`
// together with AASACore's sources.
//
// One input is used four ways: as a whole AASA file (parse, validate, then match a few URLs
// against whatever document it yields), as each other kind of association file (assetlinks.json,
// webauthn, Apple Pay's merchant ID file), and split at the first newline as pattern + subject.

let probeURLs = [
    "https://example.com/", "https://example.com/buy/42?id=7&id=42#frag",
    "https://example.com/a%2Fb/caf%C3%A9?q=%26&x", "https://example.com//x//?#",
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    let lines = bytes.count { $0 == UInt8(ascii: "\n") } + 1
    func checkPositions(_ diagnostics: [Diagnostic]) {
        for d in diagnostics {
            precondition(d.line >= 1 && d.line <= lines && d.column >= 1, "diagnostic outside the file: \(d)")
        }
        precondition(zip(diagnostics, diagnostics.dropFirst()).allSatisfy { $0.position <= $1.position },
                     "diagnostics out of order")
    }

    let file = AASAFile(bytes: bytes)
    checkPositions(file.diagnostics)
    for kind in [AssociationFileKind.assetLinks, .webAuthn, .merchantID] {
        let other = AssociationFile(kind: kind, bytes: bytes)
        checkPositions(other.diagnostics)
        precondition(other.bytes == bytes, "the bytes served must be the bytes read")
        precondition(other.isValid == (other.errorCount == 0))
        precondition(bytes.count <= kind.maximumSize || !other.isValid, "a file over the limit must not be served")
    }
    if let document = file.document {
        for text in probeURLs {
            let url = try! URLParts(text)
            let results = document.decide(url)
            precondition(results.count == document.appLinksAppIDs.count)
        }
    }

    let text = String(decoding: bytes, as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let patternText = String(parts[0])
    let subject = parts.count > 1 ? String(parts[1]) : ""
    for caseSensitive in [true, false] {
        let pattern = Pattern(patternText, caseSensitive: caseSensitive)
        let input = Array(subject.unicodeScalars)
        _ = pattern.matches(caseSensitive ? input : Pattern.fold(input))
        _ = PathPattern(patternText, caseSensitive: caseSensitive).matches(normalizedPath: input)
    }
    if let url = try? URLParts("https://example.com/" + subject) {
        _ = URLParts.percentDecoded(url.path)
    }
    return 0
}
