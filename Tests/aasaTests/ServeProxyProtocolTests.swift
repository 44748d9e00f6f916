import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

private let request = "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n"

@Suite struct ServeProxyProtocolTests {
    @Test func theClientAddressComesFromAVersion1Header() throws {
        let server = try ServerProcess(extraArguments: ["--proxy-protocol"])
        let r = try RawHTTP.exchange(port: server.http, "PROXY TCP4 203.0.113.7 10.0.0.1 50000 80\r\n" + request)
        #expect(RawHTTP.status(r) == 200)
        #expect(ServerProcess.waitFor { server.accessLog.contains(" 203.0.113.7 example.com \"GET ") })
    }

    @Test func aVersion2HeaderSplitAcrossWritesWorks() throws {
        let server = try ServerProcess(extraArguments: ["--proxy-protocol"])
        let signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
        let header = signature + [0x21, 0x11, 0x00, 0x12, 198, 51, 100, 9, 10, 0, 0, 1, 0xC3, 0x50, 0x00, 0x50, 0x04, 0x00, 0x03, 1, 2, 3]
        let fd = try RawHTTP.connect(port: server.http)
        defer { close(fd) }
        for piece in [Array(header[0..<5]), Array(header[5..<14]), Array(header[14...]) + Array(request.utf8)] {
            RawHTTP.send(fd, piece)
            usleep(100_000)
        }
        let response = String(decoding: RawHTTP.readToEnd(fd).bytes, as: UTF8.self)
        #expect(RawHTTP.status(response) == 200)
        #expect(ServerProcess.waitFor { server.accessLog.contains(" 198.51.100.9 example.com ") })
    }

    @Test func tlsFollowsTheHeader() throws {
        let server = try ServerProcess(extraArguments: ["--proxy-protocol"])
        let r = try server.curlHTTPS(host: "example.com", ["--haproxy-protocol"])
        #expect(RawHTTP.status(r.stdout) == 200, "\(r.stderr)")
    }

    @Test func aConnectionWithoutAValidHeaderIsClosed() throws {
        let server = try ServerProcess(extraArguments: ["--proxy-protocol"])
        for bad in [request, "PROXY TCP4 1.2.3.999 10.0.0.1 1 2\r\n" + request] {
            let (text, closed) = try RawHTTP.exchange(port: server.http, Array(bad.utf8), timeout: 5)
            #expect(text.isEmpty)
            #expect(closed)
        }
        // The admin listener never expects one.
        #expect(try server.admin("/healthz").status == 200)
    }

    @Test func healthCommandReflectsTheAdminListener() throws {
        let server = try ServerProcess()
        #expect(try AASABinary.run(["health", "--admin", "127.0.0.1:\(server.admin)"]).status == 0)
        _ = server.stop()
        #expect(try AASABinary.run(["health", "--admin", "127.0.0.1:\(server.admin)"]).status == 1)
    }
}
