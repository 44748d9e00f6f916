// swift-tools-version: 6.0
import PackageDescription

// Each connection is touched by one loop thread only; Swift's dynamic exclusivity checks on its
// class properties cost about 6% of a request (callgrind). The static checks still apply.
let serverSettings: [SwiftSetting] = [.unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))]

let package = Package(
    name: "aasa",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "aasa", targets: ["aasa"]),
        .library(name: "AASACore", targets: ["AASACore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        // The shared core: pure Swift, no Foundation, no sockets, no OpenSSL.
        .target(name: "AASACore"),
        // HTTP/1.1 request parsing and dates: pure, no I/O, fuzzed on its own.
        .target(name: "AASAHTTP"),
        // Linux calls Swift's Glibc module does not export (epoll, eventfd, inotify, signalfd, accept4).
        .target(name: "CLinux"),
        // The system OpenSSL, with one-line wrappers for its function-like macros.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        // The system libnghttp2, for the tests only: a real HTTP/2 client and HPACK encoder to
        // check the server's own HTTP/2 against.
        .systemLibrary(
            name: "CNghttp2",
            pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]
        ),
        // The system libpq, PostgreSQL's own C client, for the PostgreSQL store (docs/replicas.md).
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The layers of the server and the client (docs/architecture.md). Each target sees only
        // the targets below it, so the arrows between layers are the compiler's to enforce.
        // Transport: system calls, sockets, the TLS streams and certificates, the log streams.
        .target(
            name: "AASATransport",
            dependencies: ["AASACore", "AASAHTTP", "CLinux", "COpenSSL"],
            swiftSettings: serverSettings
        ),
        // Sessions: HTTP/1.1 and HTTP/2 over bytes, a request in and a prepared response out; no
        // sockets, and no clock but the one the loop hands them.
        .target(
            name: "AASASessions",
            dependencies: ["AASACore", "AASAHTTP"],
            swiftSettings: serverSettings
        ),
        // Client: the HTTPS client, `check`, the ACME protocol client, provisioning profiles, the
        // admin API client of `site`.
        .target(
            name: "AASAClient",
            dependencies: ["AASACore", "AASAHTTP", "AASATransport", "CLinux", "COpenSSL"]
        ),
        // The server: event loops and connections, sites and reload, handlers, admin, development
        // mode, the CDN watch, ACME scheduling.
        .target(
            name: "AASAServer",
            dependencies: ["AASACore", "AASAHTTP", "AASATransport", "AASASessions", "AASAClient", "AASAPostgres", "CLinux", "COpenSSL"],
            swiftSettings: serverSettings
        ),
        // The PostgreSQL client the store speaks through: a connection, parameters and results,
        // notifications. Knows nothing of sites.
        .target(
            name: "AASAPostgres",
            dependencies: ["CPostgres"]
        ),
        // The commands that do not serve (validate, match, check, entitlements, site): they build
        // without the server.
        .target(
            name: "AASACommands",
            dependencies: [
                "AASACore",
                "AASAClient",
                "AASATransport",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // `aasa monitor`: domains served by something else, watched as Apple's bot, Apple's CDN
        // and Google see them. Not serving: it reaches the check sequence and the CDN schedule
        // through the client, never the server.
        .target(
            name: "AASAMonitor",
            dependencies: [
                "AASACore",
                "AASAHTTP",
                "AASAClient",
                "AASASessions",
                "AASATransport",
                "AASACommands",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "aasa",
            dependencies: [
                "AASACore",
                "AASACommands",
                "AASAMonitor",
                "AASAClient",
                "AASATransport",
                "AASAServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Child processes for the tests, every wait bounded (Foundation's waitUntilExit is not).
        .target(name: "ChildProcess", path: "Tests/ChildProcess"),
        // Certificates for the tests of more than one target: a CA and a leaf made once per run
        // with the openssl tool, self-signed ones made in process, and the openssl command that
        // checks what libcrypto made.
        .target(name: "TestCertificates", dependencies: ["AASATransport", "COpenSSL", "ChildProcess"], path: "Tests/TestCertificates"),
        // Deterministic pseudo-random numbers, for tests that need many varied inputs.
        .target(name: "TestRandom", path: "Tests/TestRandom"),
        // One test target per library, each depending on the library it tests and on what its
        // tests use besides.
        .testTarget(name: "AASACoreTests", dependencies: ["AASACore"]),
        .testTarget(name: "AASAHTTPTests", dependencies: ["AASAHTTP"]),
        // The TLS stream with both ends ours over a socket pair, certificates, ALPN, the access log.
        .testTarget(name: "AASATransportTests", dependencies: ["AASATransport", "AASAHTTP", "AASACore", "COpenSSL", "TestCertificates", "TestRandom"]),
        // Sessions fed byte scripts with a fake clock; HTTP/2 against libnghttp2's client and
        // HPACK encoder, and nghttp2's command-line clients.
        .testTarget(name: "AASASessionsTests", dependencies: ["AASASessions", "AASAHTTP", "CNghttp2", "ChildProcess", "TestRandom"]),
        // The ACME protocol client checked with the openssl command, the CDN schedule on a fake clock.
        .testTarget(name: "AASAClientTests", dependencies: ["AASAClient", "AASAHTTP", "AASACore", "TestCertificates"]),
        // The commands' pure parts: validate's report in each format.
        .testTarget(name: "AASACommandsTests", dependencies: ["AASACommands", "AASACore"]),
        // The server's own parts: connections driven with no socket, event loops in process with
        // millisecond timeouts, snapshots, the control thread's watch, ACME's scheduling.
        .testTarget(name: "AASAServerTests", dependencies: ["AASAServer", "AASATransport", "AASASessions", "AASAClient", "AASAHTTP", "AASACore",
                                                           "COpenSSL", "TestCertificates", "TestRandom"]),
        // The monitor's pure parts: the domains file, Google's statements, the state and story.
        .testTarget(name: "AASAMonitorTests", dependencies: ["AASAMonitor", "AASAClient", "AASACore"]),
        // Runs the built `aasa` binary; depending on the target makes `swift test` build it.
        .testTarget(name: "aasaTests", dependencies: ["aasa", "ChildProcess"]),
    ],
    swiftLanguageModes: [.v6]
)
