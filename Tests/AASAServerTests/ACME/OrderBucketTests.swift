import AASACore
import Foundation
import Testing
@testable import AASAServer

@Suite struct OrderBucketTests {
    @Test func theBucketStartsFullThenRefillsAtItsRatePerThreeHours() {
        let hour: Int64 = 3_600_000
        var bucket = OrderBucket(capacity: 300, now: 0)
        var taken = 0
        while bucket.take(now: 0) { taken += 1 }
        #expect(taken == 300, "a few hundred sites are ordered at once")
        let next = bucket.nextOrder(now: 0)
        #expect(next == 36_000, "one order every 36 s once it is empty")
        let early = bucket.take(now: 35_999)
        #expect(!early)
        let onTime = bucket.take(now: 36_000)
        #expect(onTime)
        let later = bucket.available(now: 36_000 + 3 * hour)
        #expect(later == 300, "never more than its capacity")
    }

    @Test func aHundredThousandSitesArePacedOverDaysNotOrderedAtOnce() {
        var bucket = OrderBucket(capacity: 300, now: 0)
        var now: Int64 = 0
        var ordered = 0
        // Take whenever a token is there, for one day (its last token comes at the end).
        while now <= 24 * 3_600_000 {
            if bucket.take(now: now) { ordered += 1 } else { now = bucket.nextOrder(now: now) }
        }
        #expect(ordered == 300 + 8 * 300, "the full bucket, then 300 per 3 hours: \(ordered)")
    }

    @Test func theStatusShowsTheQueueAndTheOrdersUnderWay() throws {
        let status = ACMEStatus(directory: "https://ca.test/dir", challenge: .tlsALPN01)
        status.set("a.example", .ordering)
        status.set("b.example", .pending)
        status.setQueue(ACMEStatus.Queue(queued: 5, nextOrderAt: 1_800_000_000))
        var w = JSONWriter()
        status.write(to: &w)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(w.output.utf8)) as? [String: Any])
        #expect(json["queued"] as? Int == 5)
        #expect(json["nextOrderAt"] as? String == "2027-01-15T08:00:00.000Z")
        #expect(json["ordering"] as? [String] == ["a.example"])
        status.setQueue(ACMEStatus.Queue(queued: 0, nextOrderAt: nil))
        var empty = JSONWriter()
        status.write(to: &empty)
        #expect(empty.output.contains(#""nextOrderAt":null"#))
    }

    @Test func renewalsSpreadOverATwentiethOfTheLifetimeAfterTwoThirds() {
        let day = 86_400
        let starts = (0..<1000).map { 1_800_000_000 + $0 }
        let offsets = starts.map { start -> Int in
            let validity = CertificateValidity(notBefore: start, notAfter: start + 90 * day)
            #expect(validity.renewAfter == validity.renewAfter, "the same time every time")
            return validity.renewAfter - (start + 60 * day)
        }
        #expect(offsets.allSatisfy { $0 >= 0 && $0 < 90 * day / 20 })
        #expect(Set(offsets.map { $0 / 3600 }).count > 50, "certificates issued a second apart fall due hours apart")
    }
}
