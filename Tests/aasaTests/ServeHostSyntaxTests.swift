import Foundation
import Testing

@Suite struct ServeHostSyntaxTests {
    @Test func hostsRFC9110ForbidsAreRefusedWith400AndASingleTrailingDotIsServed() throws {
        let server = try ServerProcess(workers: 1)
        for request in [
            "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: evil@example.com\r\n\r\n",
            "GET http://evil@example.com/.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com\r\n\r\n",
            "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com..\r\n\r\n",
        ] {
            let (text, closed) = try RawHTTP.exchange(port: server.http, Array(request.utf8), timeout: 5)
            #expect(RawHTTP.status(text) == 400, "\(request.prefix(70)): \(text.prefix(80))")
            #expect(!text.contains("applinks"))
            #expect(closed)
        }
        let text = try RawHTTP.exchange(port: server.http, "GET /.well-known/apple-app-site-association HTTP/1.1\r\nHost: example.com.\r\nConnection: close\r\n\r\n")
        #expect(RawHTTP.status(text) == 200)
        #expect(RawHTTP.body(text) == exampleCom)
    }
}
