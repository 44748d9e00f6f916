import Testing
@testable import AASAHTTP

@Suite struct HTTPDateTests {
    @Test func formatsIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(951_782_400) == "Tue, 29 Feb 2000 00:00:00 GMT")
    }

    @Test func parsesWhatItFormats() {
        for t in [0, 784_111_777, 951_782_400, 1_795_000_000, 4_102_444_799] {
            #expect(HTTPDate.parse(HTTPDate.format(t)) == t)
        }
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("garbage") == nil)
    }

    @Test func writesISO8601ForLogs() {
        #expect(HTTPDate.iso8601(milliseconds: 784_111_777_042) == "1994-11-06T08:49:37.042Z")
    }
}
