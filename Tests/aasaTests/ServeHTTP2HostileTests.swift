import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Hostile HTTP/2 clients against the real server (docs/serving.md, "HTTP/2"), from
/// `Tests/h2/hostile.py` (the Python `h2` package, installed by `make test-deps`): each case over
/// TLS with ALPN h2 and over h2c on the plain listener, with curl served on another connection
/// while the attack connection is open. One worker, so the attacker and the other client share the
/// event loop.
@Suite(.serialized) struct ServeHTTP2HostileTests {
    @Test func rapidResetGetsGoAwayEnhanceYourCalm() throws {
        try attack("rapid-reset", answers: ["GOAWAY ENHANCE_YOUR_CALM", "(last stream 201)"])
    }

    @Test func aHeaderBlockThatNeverEndsGetsGoAwayEnhanceYourCalm() throws {
        try attack("continuation-flood", answers: ["GOAWAY ENHANCE_YOUR_CALM"])
    }

    @Test func aHeaderBlockOver16KiBAsReceivedOrDecodedGetsGoAwayEnhanceYourCalm() throws {
        try attack("oversized-header-block", answers: ["GOAWAY ENHANCE_YOUR_CALM (last stream 1) for a 20110-byte block as received",
                                                       "GOAWAY ENHANCE_YOUR_CALM (last stream 3) for a 104-byte block that decodes"])
    }

    @Test func headersOnAHalfClosedOrClosedStreamGetGoAwayStreamClosed() throws {
        try attack("headers-on-closed-stream", answers: ["GOAWAY STREAM_CLOSED (last stream 1) for HEADERS on a half-closed (remote) stream;",
                                                         "GOAWAY STREAM_CLOSED (last stream 1) for HEADERS on a closed stream;"])
    }

    /// RFC 9113 §5.1, §5.1.1 and §6.1: the late frames a strict conformance suite sends.
    @Test func lateFramesOnClosedStreamsAndLowerStreamIDsAreConnectionErrors() throws {
        try attack("stream-states", answers: ["GOAWAY STREAM_CLOSED (last stream 1) for DATA right after END_STREAM;",
                                              "GOAWAY STREAM_CLOSED (last stream 1) for DATA on an answered stream;",
                                              "GOAWAY STREAM_CLOSED (last stream 1) for DATA after RST_STREAM;",
                                              "GOAWAY STREAM_CLOSED (last stream 1) for HEADERS after RST_STREAM;",
                                              "GOAWAY PROTOCOL_ERROR (last stream 5) for stream 3 after stream 5;"])
    }

    @Test func priorityOnStreamZeroOrOnItselfGetsGoAwayProtocolError() throws {
        try attack("priority", answers: ["GOAWAY PROTOCOL_ERROR (last stream 0) for PRIORITY on stream 0;",
                                         "for PRIORITY on itself;", "for HEADERS on itself;",
                                         "then stream 1 200 on the same connection"])
    }

    @Test func aBadPrefaceGetsGoAwayProtocolError() throws {
        let output = try attack("bad-preface", answers: ["GOAWAY PROTOCOL_ERROR (last stream 0) for PING before SETTINGS"])
        #expect(line("tls", "bad-preface", in: output)?.contains("GOAWAY PROTOCOL_ERROR (last stream 0) for a broken preface") == true)
        // On the plain listener too, where an opening that is no HTTP/1.x request line is
        // taken for HTTP/2 (h2spec's "INVALID CONNECTION PREFACE" among them).
        #expect(line("h2c", "bad-preface", in: output)?.contains("GOAWAY PROTOCOL_ERROR (last stream 0) for a broken preface") == true)
        #expect(line("h2c", "bad-preface", in: output)?.contains("HTTP/1.1 400 for a bad HTTP/1.1 request line") == true)
    }

    @Test func aWindowPushedPast2To31Minus1GetsAStreamOrConnectionFlowControlError() throws {
        try attack("window-update-overflow", answers: ["RST_STREAM FLOW_CONTROL_ERROR on stream 1 then stream 3 200 on the same connection",
                                                       "GOAWAY FLOW_CONTROL_ERROR (last stream 3)"])
    }

    @Test func aSettingsFloodGetsGoAwayEnhanceYourCalm() throws {
        try attack("settings-flood", answers: ["GOAWAY ENHANCE_YOUR_CALM"])
    }

    @Test func aPingFloodGetsGoAwayEnhanceYourCalm() throws {
        try attack("ping-flood", answers: ["GOAWAY ENHANCE_YOUR_CALM"])
    }

    @Test func aFloodOfEmptyDataFramesGetsGoAwayEnhanceYourCalm() throws {
        try attack("empty-data-flood", answers: ["GOAWAY ENHANCE_YOUR_CALM"])
    }

    @Test func aRequestBodyOver64KiBResetsItsStreamAndTheConnectionGoesOn() throws {
        try attack("request-body-over-64k", answers: ["RST_STREAM CANCEL on stream 1 for content-length 100000; then stream 3 200",
                                                      "RST_STREAM CANCEL after", "then stream 3 200"])
    }

    @Test func clientsThatNeverReadCostBoundedMemoryAndOthersAreServed() throws {
        let server = try ServerProcess(sites: hostileSites, workers: 1)
        try run("never-reads", on: server, answers: ["16 connections x 100 streams of \(bigFile.utf8.count) bytes"])
        // Every request was taken and answered (the log line is written when the response joins
        // the session's send queue): the memory stayed bounded while 1 600 responses per transport waited.
        let served = server.accessLog.components(separatedBy: "\n").filter { $0.contains(" big.example.org ") && $0.contains(" 200 ") }
        #expect(served.count >= 2 * 1600 + 2, "\(served.count) big responses logged")
    }

    // MARK: - Running the script

    /// Starts a server of its own and runs one case of the script over both transports.
    @discardableResult
    private func attack(_ name: String, answers: [String]) throws -> String {
        let server = try ServerProcess(sites: hostileSites, workers: 1)
        return try run(name, on: server, answers: answers)
    }

    /// The case must pass over TLS and over h2c, each line holding every expected answer; the
    /// script must exit 0 and the server must still be running.
    @discardableResult
    private func run(_ name: String, on server: ServerProcess, answers: [String]) throws -> String {
        let r = try Shell.run("/usr/bin/env", ["python3", hostileScript, "--pid", "\(server.process.processIdentifier)",
                                               "--https", "\(server.https)", "--http", "\(server.http)",
                                               "--ca", TestCertificates.caFile, "--case", name, "--transport", "both"])
        #expect(r.status == 0, "hostile.py \(name) exited \(r.status):\n\(r.stdout)\n\(r.stderr)")
        for transport in ["tls", "h2c"] {
            let verdict = line(transport, name, in: r.stdout)
            #expect(verdict?.hasPrefix("PASS ") == true, "\(transport) \(name): \(verdict ?? "no line")\n\(r.stderr)")
            for answer in answers {
                #expect(verdict?.contains(answer) == true, "\(transport) \(name) lacks \"\(answer)\": \(verdict ?? "no line")")
            }
            #expect(verdict?.contains("bystander") == true && verdict?.contains("served") == true)
        }
        #expect(!server.process.hasExited)
        return r.stdout
    }

    private func line(_ transport: String, _ name: String, in output: String) -> String? {
        output.split(separator: "\n").map(String.init).first { $0.contains(" \(transport) \(name): ") }
    }
}

private let hostileScript = AASABinary.packageRoot.appendingPathComponent("Tests/h2/hostile.py").path

/// A file of about 120 KB (under iOS's 128 KB): what a client that never reads asks for.
private let bigFile: String = {
    let components = (0..<40).map { #"{"/": "/p\#($0)/*", "comment": "\#(String(repeating: "x", count: 3000))"}"# }
    return #"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": ["# + components.joined(separator: ", ") + "]}]}}"
}()

/// The usual sites, plus big.example.org (covered by the *.example.org certificate).
private let hostileSites = ["example.com": exampleCom, "www.example.com": wwwExampleCom, "*.example.org": wildcardOrg,
                            "big.example.org": bigFile]
