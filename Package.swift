// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "aasa",
    platforms: [.macOS(.v13)],
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
        .executableTarget(
            name: "aasa",
            dependencies: [
                "AASACore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .testTarget(name: "AASACoreTests", dependencies: ["AASACore"]),
        // Runs the built `aasa` binary; depending on the target makes `swift test` build it.
        .testTarget(name: "aasaTests", dependencies: ["aasa"]),
    ],
    swiftLanguageModes: [.v6]
)
