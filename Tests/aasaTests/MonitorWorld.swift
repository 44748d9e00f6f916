import ChildProcess
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// Fixtures shared by the monitor's tests (MonitorCommandTests.swift, MonitorRunningTests.swift).

let monitorWellKnown = "/.well-known/apple-app-site-association"
let monitorAssetLinksPath = "/.well-known/assetlinks.json"
let monitorApp = "ABCDE12345.com.example.app"
let monitorFingerprint = "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5"
let monitoredAssetLinks = """
[{"relation": ["delegate_permission/common.handle_all_urls"], "target": {"namespace": "android_app", "package_name": "com.example.app", "sha256_cert_fingerprints": ["\(monitorFingerprint)"]}}]
"""

/// Google's `statements:list` answer listing `apps` (package name, fingerprint).
func googleAnswer(_ apps: [(String, String)]) -> [UInt8] {
    let statements = apps.map { name, f in
        #"{"source": {"web": {"site": "https://example.com."}}, "relation": "delegate_permission/common.handle_all_urls", "target": {"androidApp": {"packageName": "\#(name)", "certificate": {"sha256Fingerprint": "\#(f)"}}}}"#
    }
    return ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: #"{"statements": [\#(statements.joined(separator: ","))], "maxAge": "3600s"}"#)
}

/// A monitor's world on loopback: an HTTPS origin for example.com (a scripted server behind
/// haproxy's TLS, with a certificate from the test CA), Apple's CDN and Google's Digital Asset
/// Links API as scripted servers.
struct MonitorWorld {
    let origin: ScriptedServer
    let front: TLSFront
    let cdn: ScriptedServer
    let google: ScriptedServer
    let directory: TemporaryDirectory

    init(origin reply: @escaping @Sendable ([UInt8]) -> [UInt8],
         cdn: [UInt8] = ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom),
         google: [UInt8] = googleAnswer([("com.example.app", monitorFingerprint)])) throws {
        origin = try ScriptedServer(reply: reply)
        front = try TLSFront(backend: origin.port, certificatePEM: try TestCertificates.sitesPEM)
        self.cdn = try ScriptedServer(routes: ["/a/v1/example.com": cdn])
        self.google = try ScriptedServer(routes: ["/v1/statements:list": google])
        directory = try TemporaryDirectory()
    }

    /// An origin answering by path.
    init(routes: [String: [UInt8]], cdn: [UInt8] = ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom),
         google: [UInt8] = googleAnswer([("com.example.app", monitorFingerprint)])) throws {
        try self.init(origin: { request in
            let line = String(decoding: request.prefix { $0 != UInt8(ascii: "\r") }, as: UTF8.self)
            let target = line.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            return routes[target] ?? ScriptedServer.response("404 Not Found", body: "no")
        }, cdn: cdn, google: google)
    }

    /// The usual origin: the file and assetlinks.json, both good.
    static func good(cdn: [UInt8] = ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: exampleCom),
                     google: [UInt8] = googleAnswer([("com.example.app", monitorFingerprint)])) throws -> MonitorWorld {
        try MonitorWorld(routes: [monitorWellKnown: ScriptedServer.response("200 OK", ["Content-Type: application/json", "ETag: \"v1\""], body: exampleCom),
                           monitorAssetLinksPath: ScriptedServer.response("200 OK", ["Content-Type: application/json"], body: monitoredAssetLinks)],
                  cdn: cdn, google: google)
    }

    func domains(_ text: String? = nil) throws -> String {
        try directory.write("domains.txt", text ?? "example.com connect=127.0.0.1:\(front.port) app=\(monitorApp)\n")
    }

    var arguments: [String] {
        ["--cacert", TestCertificates.caFile, "--cdn-base", "http://127.0.0.1:\(cdn.port)", "--dal-base", "http://127.0.0.1:\(google.port)"]
    }

    func once(_ extra: [String] = [], domains text: String? = nil) throws -> CommandResult {
        try AASABinary.run(["monitor", "--domains", try domains(text), "--once"] + arguments + extra, timeout: 120)
    }
}

/// The `status: message` of one check of example.com in the text output.
func monitorLine(_ r: CommandResult, _ name: String, host: String = "example.com") -> String {
    r.stdout.split(separator: "\n").first { $0.hasPrefix("\(host): \(name): ") }.map { String($0.dropFirst("\(host): \(name): ".count)) } ?? "(no \(name) line)\n\(r.stdout)"
}
