import Testing
@testable import AASACore

private let entitlements = """
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
\t<!-- written by Xcode -->
\t<key>com.apple.developer.associated-domains</key>
\t<array>
\t\t<string>applinks:example.com</string>
\t\t<string>webcredentials:example.com?mode=developer&amp;x</string>
\t</array>
\t<key>aps-environment</key>
\t<string>development</string>
\t<key>get-task-allow</key><true/>
\t<key>count</key><integer> 3 </integer>
\t<key>empty</key><array/>
</dict>
</plist>
"""

@Suite struct PropertyListTests {
    @Test func readsAnEntitlementsFile() throws {
        let plist = try PropertyList.parse(Array(entitlements.utf8))
        #expect(plist["aps-environment"] == .string("development"))
        #expect(plist["get-task-allow"] == .bool(true))
        #expect(plist["count"] == .integer("3"))
        #expect(plist["empty"] == .array([]))
        #expect(try PropertyList.associatedDomains(in: plist) == ["applinks:example.com", "webcredentials:example.com?mode=developer&x"])
    }

    @Test func findsTheEntitlementsInsideAProfile() throws {
        let profile = "<plist><dict><key>Name</key><string>Dev</string><key>Entitlements</key><dict><key>com.apple.developer.associated-domains</key><array><string>applinks:a.example</string></array></dict></dict></plist>"
        #expect(try PropertyList.associatedDomains(in: try PropertyList.parse(Array(profile.utf8))) == ["applinks:a.example"])
        let none = "<plist><dict><key>Entitlements</key><dict/></dict></plist>"
        #expect(try PropertyList.associatedDomains(in: try PropertyList.parse(Array(none.utf8))) == nil)
    }

    @Test func aProfileThatGrantsAnyDomainSaysWhereTheDomainsAre() throws {
        let profile = "<plist><dict><key>Entitlements</key><dict><key>com.apple.developer.associated-domains</key><string>*</string></dict></dict></plist>"
        #expect(throws: PropertyList.ParseError.self) {
            _ = try PropertyList.associatedDomains(in: try PropertyList.parse(Array(profile.utf8)))
        }
    }

    @Test func decodesEntities() throws {
        let plist = try PropertyList.parse(Array("<plist><string>&lt;a&gt; &#65;&#x42; &quot;&apos;</string></plist>".utf8))
        #expect(plist == .string("<a> AB \"'"))
    }

    @Test func malformedInputIsAnErrorWithItsLine() {
        #expect(throws: PropertyList.ParseError.self) { try PropertyList.parse(Array("<plist>\n<dict>\n<string>x</string></dict></plist>".utf8)) }
        #expect(throws: PropertyList.ParseError.self) { try PropertyList.parse(Array("<plist><array><string>x</array></plist>".utf8)) }
        #expect(throws: PropertyList.ParseError.self) { try PropertyList.parse(Array("bplist00....".utf8)) }
        do {
            _ = try PropertyList.parse(Array("<plist>\n<dict>\n<key>a</key>\n<wrong/></dict></plist>".utf8))
            Issue.record("parsed")
        } catch {
            #expect(error.line == 4)
            #expect(error.message.contains("<wrong>"))
        }
    }
}
