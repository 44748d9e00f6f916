import Testing
@testable import AASACore

private let listedApp = "ABCDE12345.com.example.app"
private let file = AASAFile(#"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.other"]}, {"appIDs": ["\#(listedApp)"], "components": [{"/": "/*"}]}]}, "webcredentials": {"apps": ["\#(listedApp)"]}}"#)

@Suite struct EntitlementVerdictTests {
    private func judge(_ entitlement: String, app: String = listedApp, file: AASAFile = file) throws -> EntitlementVerdict {
        EntitlementVerdict.judge(try AssociatedDomain(parsing: entitlement), app: app, file: file, source: "example.com/aasa")
    }

    @Test func anAppListedForTheServiceIsOK() throws {
        let links = try judge("applinks:example.com")
        #expect(links.result == .ok)
        #expect(links.message == "example.com/aasa lists \(listedApp) in applinks.details[1]")
        #expect(try judge("webcredentials:example.com").result == .ok)
    }

    @Test func aMissingSectionIsNoService() throws {
        let v = try judge("activitycontinuation:example.com")
        #expect(v.result == .noService)
        #expect(v.message.contains(#"add "activitycontinuation": {"apps": ["ABCDE12345.com.example.app"]}"#))
    }

    @Test func anAppNotListedNamesTheAppsThatAre() throws {
        let v = try judge("applinks:example.com", app: "ABCDE12345.com.example.App")
        #expect(v.result == .appNotListed)
        #expect(v.message.contains("it lists ABCDE12345.com.example.other, ABCDE12345.com.example.app"))
        #expect(v.message.contains("differs only in case"))
    }

    @Test func aFileWithErrorsIsInvalid() throws {
        let v = try judge("applinks:example.com", file: AASAFile(#"{"applinks": {"details": [}}"#))
        #expect(v.result == .invalidFile)
        #expect(v.message.hasPrefix("example.com/aasa:1:"))
    }
}
