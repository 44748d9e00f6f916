import Testing
@testable import AASACore

/// An app ID is checked byte by byte when it is ASCII and well formed, and by the walk over
/// Unicode scalars otherwise: the two must never disagree.
@Suite struct AppIDTests {
    @Test func theByteCheckAndTheScalarWalkAgreeOnEveryShape() {
        let prefixes = ["ABCDE12345", "abcde12345", "ABCDe12345", "ABCDE1234", "ABCDE123456", "", "ABCDE_2345", "ÄBCDE12345", "ABCDE 2345"]
        let bundles = ["com.example.app", "com.example", "a", "", ".com.example", "com.example.", "com..example", "com-x.y-z",
                       "com.exämple", "com.ex ample", "com.ex_ample", "...", "-", "com.example.app5"]
        var checked = 0
        for prefix in prefixes {
            for bundle in bundles {
                for id in [prefix + "." + bundle, prefix + bundle, prefix + ".." + bundle] {
                    #expect(AppID.check(id) == AppID.checkScalars(id), "\(id)")
                    checked += 1
                }
            }
        }
        #expect(checked == prefixes.count * bundles.count * 3)
        #expect(AppID.check("ABCDE12345.com.example.app") == .valid)
        #expect(AppID.check("abcde12345.com.example.app") == .lowercasePrefix)
        #expect(AppID.check("ABCDE12345.com..example") != .valid)
    }
}
