import Testing
@testable import AASAMonitor

private let fingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"

@Suite struct GoogleViewTests {
    @Test func theOriginsAppsAreThoseOfAndroidTargetsForHandleAllURLs() {
        let file = """
        [{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.app", "sha256_cert_fingerprints": ["\(fingerprint.lowercased())", "AA:BB"]}},
         {"relation": ["delegate_permission/common.get_login_creds"], "target": {"namespace": "android_app", "package_name": "com.example.login", "sha256_cert_fingerprints": ["CC:DD"]}},
         {"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "web", "site": "https://example.com"}}]
        """
        #expect(GoogleView.originApps(Array(file.utf8)) == [.init(packageName: "com.example.app", fingerprint: fingerprint),
                                                           .init(packageName: "com.example.app", fingerprint: "AA:BB")])
        #expect(GoogleView.originApps(Array("{}".utf8)) == nil)
    }

    @Test func googlesAnswerListsItsStatementsTargets() {
        let answer = #"{"statements": [{"relation": "delegate_permission/common.handle_all_urls", "target": {"androidApp": {"packageName": "com.example.app", "certificate": {"sha256Fingerprint": "AA:BB"}}}}], "maxAge": "3600s"}"#
        #expect(GoogleView.googleApps(Array(answer.utf8)) == [.init(packageName: "com.example.app", fingerprint: "AA:BB")])
        #expect(GoogleView.googleApps(Array("{}".utf8)) == [])
        #expect(GoogleView.googleApps(Array("[]".utf8)) == nil)
        #expect(GoogleView.googleApps(Array("<html>".utf8)) == nil)
    }

    @Test func theSetsAreCurrentStaleOrAbsent() {
        let a = GoogleView.App(packageName: "com.example.app", fingerprint: "AA:BB")
        let b = GoogleView.App(packageName: "com.example.app", fingerprint: "CC:DD")
        #expect(GoogleView.compare(google: [a], origin: [a]).state == .current)
        #expect(GoogleView.compare(google: [], origin: nil).state == .absent)
        #expect(GoogleView.compare(google: [], origin: []).state == .current)
        let (state, differs) = GoogleView.compare(google: [a], origin: [b])
        #expect(state == .stale)
        #expect(differs == ["Google does not list com.example.app (CC:DD) yet",
                            "Google still lists com.example.app (AA:BB), which the origin's assetlinks.json no longer does"])
        #expect(GoogleView.compare(google: [a], origin: nil) == (.stale, ["Google lists com.example.app (AA:BB), but the origin has no assetlinks.json"]))
    }

    @Test func differsNamesWholeFingerprintsAsTheFileWritesThem() throws {
        let file = """
        [{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.app", "sha256_cert_fingerprints": ["\(fingerprint.lowercased())"]}}]
        """
        let origin = try #require(GoogleView.originApps(Array(file.utf8)))
        // The same app whatever the case; a different one named whole, as the file wrote it.
        #expect(GoogleView.compare(google: [.init(packageName: "com.example.app", fingerprint: fingerprint)], origin: origin).state == .current)
        let (state, differs) = GoogleView.compare(google: [], origin: origin)
        #expect(state == .stale)
        #expect(differs == ["Google does not list com.example.app (\(fingerprint.lowercased())) yet"])
    }
}
