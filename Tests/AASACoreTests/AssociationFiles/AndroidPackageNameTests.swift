import Testing
@testable import AASACore

@Suite struct AndroidPackageNameTests {
    @Test func packageNamesAreJavaStyleIdentifiers() {
        for good in ["com.example.app", "com.example_1.App2", "a.b"] {
            #expect(AndroidPackageName.problem(good) == nil, "\(good)")
        }
        for bad in ["example", "com..example", "com.1example", "com.example-app", "com.example.", ".com.example", "com.exämple"] {
            #expect(AndroidPackageName.problem(bad) != nil, "\(bad)")
        }
    }
}
