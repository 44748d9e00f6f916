import Foundation
import Testing

private let file = #"""
{"applinks": {"details": [
  {"appIDs": ["ABCDE12345.com.example.app"], "components": [{"#": "nope", "exclude": true}, {"/": "/buy/*"}]},
  {"appIDs": ["ABCDE12345.com.example.other"], "components": [{"/": "/help"}]}
]}}
"""#

@Suite struct MatchCommandTests {
    @Test func decidesForEveryAppAndSaysWhichComponentDecided() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", file)
        let r = try AASABinary.run(["match", path, "https://example.com/buy/42"])
        #expect(r.status == 0)
        #expect(r.stdout == "ABCDE12345.com.example.app: match (details[0], component 1)\nABCDE12345.com.example.other: no_match (closest: details[1], component 0: the path \"/buy/42\" does not match \"/help\")\n")
    }

    @Test func writesJSON() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", file)
        let r = try AASABinary.run(["match", path, "https://example.com/buy/1#nope", "--format", "json"])
        #expect(r.status == 1, "an exclude is not a match")
        let json = try r.json()
        #expect(json["url"] as? String == "https://example.com/buy/1#nope")
        #expect(json["host"] as? String == "example.com")
        let results = try #require(json["results"] as? [[String: Any]])
        #expect(results.count == 2)
        #expect(results[0]["app"] as? String == "ABCDE12345.com.example.app")
        #expect(results[0]["decision"] as? String == "exclude")
        #expect(results[0]["detail"] as? Int == 0)
        #expect(results[0]["component"] as? Int == 0)
        #expect(results[1]["decision"] as? String == "no_match")
        #expect(results[1]["detail"] is NSNull)
        #expect(results[1]["component"] is NSNull)
    }

    @Test func theAppOptionDecidesTheExitStatus() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", file)
        #expect(try AASABinary.run(["match", path, "https://example.com/help", "--app", "ABCDE12345.com.example.other"]).status == 0)
        let r = try AASABinary.run(["match", path, "https://example.com/help", "--app", "ABCDE12345.com.example.app"])
        #expect(r.status == 1)
        #expect(r.stdout == "ABCDE12345.com.example.app: no_match (closest: details[0], component 1: the path \"/help\" does not match \"/buy/*\")\n")
    }

    @Test func aURLOnAnotherDomainMatchesNothing() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", file)
        let r = try AASABinary.run(["match", path, "https://other.com/buy/1", "--domain", "example.com"])
        #expect(r.status == 1)
        #expect(!r.stdout.contains(": match"))
    }

    @Test func choosesTheSiteByHostFromAConfigDirectory() throws {
        let r = try AASABinary.run(["match", "--config", "config", "https://deep.news.example.org/articles/7", "--format", "json"])
        #expect(r.status == 0, "\(r.stderr)")
        let results = try #require(try r.json()["results"] as? [[String: Any]])
        #expect(results.first?["app"] as? String == "FGHIJ67890.org.example.reader")
        // iOS fetches the file for applinks:*.example.org from example.org itself (TN3155).
        let base = try AASABinary.run(["match", "--config", "config", "https://example.org/articles/7"])
        #expect(base.status == 0, "\(base.stderr)")
        #expect(base.stdout.hasPrefix("FGHIJ67890.org.example.reader: match"))
    }

    @Test func aHostNoSiteServesGetsOnlyTheMessageThatSaysSo() throws {
        let r = try AASABinary.run(["match", "--config", "config", "https://nosuch.test/"])
        #expect(r.status == 1)
        #expect(r.stdout.isEmpty, "not also 'the file lists no applinks app': there is no file")
        #expect(r.stderr.contains("no site in config serves nosuch.test"))
        #expect(r.stderr.contains("example.com"), "the sites that exist are named")
    }

    @Test func aSiteFolderIsReadAsItsAssociationFile() throws {
        let r = try AASABinary.run(["match", "config/example.com", "https://example.com/buy/42"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains(": match (details[0], component"))
        #expect(r.stderr.isEmpty)
    }

    @Test func aLegacyPathIsNamedAsAPathAndQuoted() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "paths": ["NOT /private/*", "/articles/*"]}]}}"#)
        let blocked = try AASABinary.run(["match", path, "https://example.com/private/1"])
        #expect(blocked.stdout == "ABCDE12345.com.example.app: exclude (details[0], path 0 \"NOT /private/*\")\n")
        let opened = try AASABinary.run(["match", path, "https://example.com/articles/1"])
        #expect(opened.stdout == "ABCDE12345.com.example.app: match (details[0], path 1 \"/articles/*\")\n")
        let json = try #require(try AASABinary.run(["match", path, "https://example.com/articles/1", "--format", "json"]).json()["results"] as? [[String: Any]])
        #expect(json.first?["component"] as? Int == 1)
        #expect(json.first?["rule"] as? String == "path")
        #expect(json.first?["pattern"] as? String == "/articles/*")
    }

    @Test func anAppTheFileDoesNotListIsSaidToBeNotListed() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", file)
        let r = try AASABinary.run(["match", path, "https://example.com/buy/1", "--app", "ZZZZZ99999.com.typo"])
        #expect(r.status == 1)
        #expect(r.stdout.hasPrefix("ZZZZZ99999.com.typo: no_match (not listed: the file's applinks apps are ABCDE12345.com.example.app, ABCDE12345.com.example.other)"))
        let json = try #require(try AASABinary.run(["match", path, "https://example.com/buy/1", "--app", "ZZZZZ99999.com.typo", "--format", "json"]).json()["results"] as? [[String: Any]])
        #expect(json.first?["decision"] as? String == "no_match", "the JSON decision values stay those of docs/validation.md")
    }

    @Test func aJSONSyntaxErrorIsExitTwoEvenWhenTheParserRecovers() throws {
        let dir = try TemporaryDirectory()
        // A missing comma: the parser reads on to report more, but a device reads nothing.
        let path = try dir.write("aasa.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"] "components": [{"/": "/a"}]}]}}"#)
        let r = try AASABinary.run(["match", path, "https://example.com/a"])
        #expect(r.status == 2)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains("[missing-comma]"))
        #expect(r.stderr.contains("is not valid JSON"))
    }

    @Test func anInternationalHostFindsItsPunycodeSite() throws {
        let dir = try TemporaryDirectory()
        try dir.write("config/xn--bcher-kva.example/apple-app-site-association", file)
        let r = try AASABinary.run(["match", "--config", dir.url.appendingPathComponent("config").path, "https://bücher.example/buy/1"])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("ABCDE12345.com.example.app: match"))
    }

    @Test func findingsGoToStandardErrorAndDoNotStopMatching() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a", "?": {"x": "1", "y": 2}}]}]}}"#)
        let r = try AASABinary.run(["match", path, "https://example.com/a?x=9"])
        #expect(r.status == 0)
        #expect(r.stderr.contains("[query-value-not-string]"))
        #expect(r.stderr.contains("1 error, 0 warnings; the server would not serve this file"), "\(r.stderr)")
        #expect(r.stdout == "ABCDE12345.com.example.app: match (details[0], component 0)\n")
    }

    @Test func aNoMatchSaysWhyTheClosestComponentMissed() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", #"""
        {"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [
          {"/": "/never/*", "exclude": true},
          {"/": "/shop/*", "?": {"ref": "?*"}},
          {"/": "/help", "#": "faq"}
        ]}]}}
        """#)
        func why(_ url: String) throws -> String {
            let r = try AASABinary.run(["match", path, url])
            #expect(r.status == 1, "\(url): \(r.stdout)")
            return r.stdout
        }
        // Case: the path matches only ignoring case, and caseSensitive is true (the default).
        #expect(try why("https://example.com/Shop/1?ref=mail") == "ABCDE12345.com.example.app: no_match (closest: details[0], component 1: the path \"/Shop/1\" matches \"/shop/*\" only ignoring case, and caseSensitive is true)\n")
        // A query item the component requires and the URL lacks.
        #expect(try why("https://example.com/shop/1?utm=x") == "ABCDE12345.com.example.app: no_match (closest: details[0], component 1: the URL has no query item \"ref\", which the component requires (\"?*\"))\n")
        // The fragment.
        #expect(try why("https://example.com/help#top") == "ABCDE12345.com.example.app: no_match (closest: details[0], component 2: the fragment \"top\" does not match \"faq\")\n")
        // Percent-encoding: matched only once decoded, while percentEncoded is true.
        let encoded = try dir.write("encoded.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/a b/*"}]}]}}"#)
        let r = try AASABinary.run(["match", encoded, "https://example.com/a%20b/1"])
        #expect(r.stdout == "ABCDE12345.com.example.app: no_match (closest: details[0], component 0: the path \"/a%20b/1\" matches \"/a b/*\" only once percent-decoded, and percentEncoded is true (the URL is compared as written))\n", "\(r.stdout)")
    }

    @Test func aMisspeltExcludeIsNotedWhenItsComponentDecides() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": [{"/": "/private/*", "exlude": true}, {"/": "*"}]}]}}"#)
        let r = try AASABinary.run(["match", path, "https://example.com/private/1"])
        #expect(r.status == 0)
        #expect(r.stdout == "ABCDE12345.com.example.app: match (details[0], component 0)\n")
        let note = #"unknown key "exlude" is ignored; did you mean "exclude"? this component MATCHES: without "exclude" it opens the app"#
        #expect(r.stderr.contains("aasa: note: ABCDE12345.com.example.app: details[0], component 0 decided: \(note)\n"), "\(r.stderr)")
        // The finding itself says the same, at its warning severity.
        #expect(r.stderr.contains(#"warning: unknown key "exlude" in a component is ignored; did you mean "exclude"? this component MATCHES: without "exclude" it opens the app [unknown-key]"#), "\(r.stderr)")
        // Another component deciding: no note.
        let other = try AASABinary.run(["match", path, "https://example.com/public"])
        #expect(!other.stderr.contains("aasa: note:"), "\(other.stderr)")
    }

    @Test func aLowerCaseTeamIDIsAWarningThatSaysWhatItCostsAndMatchingIsExact() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", #"{"applinks": {"details": [{"appIDs": ["abcde12345.com.acme.shop"], "components": [{"/": "/buy/*"}]}]}}"#)
        let v = try AASABinary.run(["validate", path])
        #expect(v.status == 0, "a warning")
        #expect(v.stdout.contains(#"warning: app ID prefix in "abcde12345.com.acme.shop" has lower-case letters; Team IDs are upper case, and an app's own ID carries its Team ID that way. Whether iOS ignores case when it compares app IDs is not documented; aasa match and check compare them exactly, so this entry applies only to an app ID written the same way. Write "ABCDE12345.com.acme.shop" [app-id-lowercase-prefix]"#), "\(v.stdout)")
        // Decided as before: app IDs compare exactly.
        let upper = try AASABinary.run(["match", path, "https://example.com/buy/1", "--app", "ABCDE12345.com.acme.shop"])
        #expect(upper.status == 1)
        #expect(upper.stdout == "ABCDE12345.com.acme.shop: no_match (not listed: the file's applinks apps are abcde12345.com.acme.shop)\n")
        let lower = try AASABinary.run(["match", path, "https://example.com/buy/1", "--app", "abcde12345.com.acme.shop"])
        #expect(lower.status == 0)
        #expect(lower.stdout == "abcde12345.com.acme.shop: match (details[0], component 0)\n")
    }

    @Test func notJSONOrUnreadableOrBadUsageIsExitTwo() throws {
        let dir = try TemporaryDirectory()
        let path = try dir.write("aasa.json", "<html>")
        #expect(try AASABinary.run(["match", path, "https://example.com/"]).status == 2)
        #expect(try AASABinary.run(["match", "/nonexistent", "https://example.com/"]).status == 2)
        #expect(try AASABinary.run(["match", path]).status == 2)
        let badURL = try AASABinary.run(["match", path, "not a url"])
        #expect(badURL.status == 2)
        #expect(badURL.stderr.contains("Usage: aasa match"), "the subcommand's usage, not the list of subcommands: \(badURL.stderr)")
    }
}
