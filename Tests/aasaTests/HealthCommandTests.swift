import Testing

@Suite struct HealthCommandTests {
    @Test func anAdminListenerThatIsOffIsSaidToBeOffNotUnparsable() throws {
        let r = try AASABinary.run(["health"], environment: ["AASA_ADMIN": "off"])
        #expect(r.status == 1)
        #expect(r.stderr.contains("the admin listener is off (AASA_ADMIN=off)"), "\(r.stderr)")
        #expect(!r.stderr.contains("Usage"), "off is a value serve accepts, not bad usage")
        let flag = try AASABinary.run(["health", "--admin", "none"])
        #expect(flag.status == 1)
        #expect(flag.stderr.contains("the admin listener is off (--admin=none)"))
    }

    @Test func aBadAddressIsBadUsageWithTheHealthUsage() throws {
        let r = try AASABinary.run(["health", "--admin", "nowhere"])
        #expect(r.status == 2)
        #expect(r.stderr.contains("Usage: aasa health"), "\(r.stderr)")
    }
}
