import Foundation
import Testing
@testable import AASAHTTP

/// The corpus of malformed and hostile request heads in Tests/Fixtures, each with the status
/// it must get. The server's integration tests send the same corpus over real sockets.
struct Hostile: Sendable, Decodable, CustomTestStringConvertible {
    var name: String
    /// The request's bytes, one character per byte (ISO 8859-1).
    var request: String
    var status: Int
    var testDescription: String { name }
    var bytes: [UInt8] { request.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) } }
}

let hostileRequests: [Hostile] = {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/hostile-requests.json")
    return try! JSONDecoder().decode([Hostile].self, from: Data(contentsOf: url))
}()

private let big = String(repeating: "a", count: 9000)

private func status(_ bytes: [UInt8]) -> Int? {
    var parser = RequestParser()
    if case .error(let e) = bytes.withUnsafeBytes({ parser.parse($0) }) { return e.status.rawValue }
    return nil
}

@Suite struct HostileRequestTests {
    @Test(arguments: hostileRequests)
    func eachHostileRequestGetsItsStatus(hostile: Hostile) {
        #expect(status(hostile.bytes) == hostile.status)
    }

    @Test func theCorpusIsLargeEnough() {
        #expect(hostileRequests.count >= 40)
    }

    @Test func limitsAreCheckedBeforeTheHeadIsComplete() {
        // Without the final blank line: still refused as soon as the limit is crossed.
        #expect(status(Array("GET /\(big)".utf8)) == 414)
        #expect(status(Array("GET / HTTP/1.1\r\nX: \(big)\(big)".utf8)) == 431)
    }
}
