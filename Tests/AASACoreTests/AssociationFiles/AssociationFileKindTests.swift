import Testing
import AASACore

@Suite struct AssociationFileKindTests {
    @Test func eachKindKnowsItsFileNamePathAndContentType() {
        let table: [(AssociationFileKind, String, String)] = [
            (.aasa, "apple-app-site-association", "application/json"),
            (.assetLinks, "assetlinks.json", "application/json"),
            (.merchantID, "apple-developer-merchantid-domain-association", "text/plain"),
            (.webAuthn, "webauthn", "application/json"),
        ]
        #expect(table.map(\.0) == AssociationFileKind.allCases)
        for (kind, name, type) in table {
            #expect(kind.fileName == name)
            #expect(kind.urlPath == "/.well-known/" + name)
            #expect(kind.contentType == type)
        }
    }

    @Test func theKindIsFoundByFileNameOrPath() {
        #expect(AssociationFileKind.kind(forFileName: "assetlinks.json") == .assetLinks)
        #expect(AssociationFileKind.kind(forFileName: "config/example.com/webauthn") == .webAuthn)
        #expect(AssociationFileKind.kind(forFileName: "/srv/apple-developer-merchantid-domain-association") == .merchantID)
        #expect(AssociationFileKind.kind(forFileName: "apple-app-site-association") == .aasa)
        #expect(AssociationFileKind.kind(forFileName: "aasa.json") == nil)
        #expect(AssociationFileKind.kind(forFileName: "webauthn/") == nil)
        #expect(AssociationFileKind.kind(forFileName: "Assetlinks.json") == nil)
    }

    @Test func theKindNamesAreTheCommandLineNames() {
        #expect(AssociationFileKind.allCases.map(\.description) == ["aasa", "assetlinks", "merchantid", "webauthn"])
        #expect(AssociationFileKind(rawValue: "webauthn") == .webAuthn)
    }

    @Test func sizeLimitsAre128KBForJSONAnd64KiBForTheMerchantFile() {
        #expect(AssociationFileKind.aasa.maximumSize == AASAFile.maximumSize)
        #expect(AssociationFileKind.assetLinks.maximumSize == 131_072)
        #expect(AssociationFileKind.webAuthn.maximumSize == 131_072)
        #expect(AssociationFileKind.merchantID.maximumSize == 65_536)
    }
}
