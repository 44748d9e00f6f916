import Testing
@testable import AASAServer

/// Which requests the fetch record keeps (docs/apple-view.md, "The fetch record").
@Suite struct FetchRecordsTests {
    @Test func appleAndDeviceAgentsAreToldApart() {
        #expect(FetchRecords.fetcher(userAgent: "AASA-Bot/1.0.0") == .appleCDN)
        #expect(FetchRecords.fetcher(userAgent: "swcd (unknown version) CFNetwork/1494.0.7 Darwin/23.4.0") == .device)
        #expect(FetchRecords.fetcher(userAgent: "Mozilla/5.0 CFNetwork/1.0") == .device)
        #expect(FetchRecords.fetcher(userAgent: "curl/8.5.0") == nil)
        #expect(FetchRecords.fetcher(userAgent: "my AASA-Bot imitation") == nil, "AASA-Bot only as a prefix")
    }

    @Test func onlyTheAASAFilesPathsAreRecorded() {
        #expect(FetchRecords.isAASAPath("/.well-known/apple-app-site-association"))
        #expect(FetchRecords.isAASAPath("/apple-app-site-association"))
        #expect(!FetchRecords.isAASAPath("/.well-known/assetlinks.json"))
        #expect(!FetchRecords.isAASAPath("/.well-known/apple-app-site-associatioN"))
    }
}
