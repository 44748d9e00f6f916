import AASACore

/// The copy Apple's CDN holds against the origin's file, compared as parsed values: the one
/// comparison behind `aasa check`'s `cdn` step and the server's CDN watch (docs/apple-view.md), so
/// both name the same apps and keys.
package enum CDNCopy {
    package enum Comparison: Equatable, Sendable {
        /// The CDN answered with a body that is not JSON.
        case cdnNotJSON
        /// The origin's file could not be read as JSON.
        case originUnreadable
        case same
        /// The apps and keys that differ, as `aasa check` names them (never empty).
        case differs([String])
    }

    static package func compare(cdnBody: [UInt8], origin: AASAFile?) -> Comparison {
        guard let cdnValue = JSONParser.parse(cdnBody).value else { return .cdnNotJSON }
        guard let origin, let originValue = JSONParser.parse(origin.bytes).value else { return .originUnreadable }
        if originValue.isSameValue(as: cdnValue) { return .same }
        let cdnDocument = AASAFile(bytes: cdnBody).document ?? AASADocument()
        var differences = origin.document?.differences(from: cdnDocument) ?? []
        if differences.isEmpty { differences = ["they differ only in keys no device reads"] }
        return .differs(differences)
    }
}
