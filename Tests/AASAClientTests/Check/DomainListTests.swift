import Testing
import AASAClient

@Suite struct DomainListTests {
    @Test func aLineIsAHostThenAppsAndWhereToConnect() {
        let (domains, problems) = DomainList.parse("""
        # ours
        Example.COM.  app=A.one app=A.two   # the main one
        www.example.com connect=10.0.0.7:8443

        """)
        #expect(problems.isEmpty)
        #expect(domains == [MonitoredDomain(host: "example.com", apps: ["A.one", "A.two"], line: 2),
                            MonitoredDomain(host: "www.example.com", connect: "10.0.0.7:8443", line: 3)])
    }

    @Test func aBadLineIsReportedWithItsNumberAndTheOthersKept() {
        let (domains, problems) = DomainList.parse("""
        *.example.com
        https://example.com/
        example.com:443
        example.com
        example.com
        example.org connect=nowhere
        example.net colour=blue
        exa mple
        bad_host!
        ok.example
        """)
        #expect(domains.map(\.host) == ["example.com", "ok.example"])
        #expect(problems.map(\.line) == [1, 2, 3, 5, 6, 7, 8, 9])
        #expect(problems[3].message == "example.com is already listed on line 4")
        #expect(problems[4].message == "connect=nowhere: expected ADDR:PORT")
    }

    @Test func controlCharactersOfABadLineAreEscapedInItsReport() {
        let (_, problems) = DomainList.parse("\u{1b}[31mred/\n")
        #expect(problems.first?.message.contains("\u{1b}") == false)
    }
}
