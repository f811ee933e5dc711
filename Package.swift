// swift-tools-version: 6.2
import PackageDescription

// The arrows point one way (docs/architecture.md):
//   pinwheel -> PinwheelServer | PinwheelLoad -> PinwheelTransport -> CLibWebSockets, CPermessageDeflate,
//   CMessageDeflate
//   PinwheelServer -> CNATS (the replicated change log and presence across nodes)
//   and every module -> PinwheelCore, which does no I/O.
let package = Package(
    name: "pinwheel",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pinwheel", targets: ["pinwheel"]),
        .library(name: "PinwheelCore", targets: ["PinwheelCore"]),
        .library(name: "PinwheelTransport", targets: ["PinwheelTransport"]),
        .library(name: "PinwheelServer", targets: ["PinwheelServer"]),
        .library(name: "PinwheelLoad", targets: ["PinwheelLoad"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.1"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        .systemLibrary(
            name: "CNATS",
            pkgConfig: "libnats",
            providers: [.apt(["libnats-dev"])]
        ),
        // permessage-deflate negotiated through lws's extension hooks by a callback that compresses
        // nothing (lws's own deflate code never runs; docs/libwebsockets.md).
        .target(name: "CPermessageDeflate", dependencies: ["CLibWebSockets"]),
        // Whole messages compressed with ISA-L's igzip and inflated with igzip or zlib, off the
        // service thread where a server's are concerned.
        .target(name: "CMessageDeflate", linkerSettings: [.linkedLibrary("z"), .linkedLibrary("isal")]),
        // Persistent maps let a live index publish its changes without copying them.
        .target(
            name: "PinwheelCore",
            dependencies: [.product(name: "HashTreeCollections", package: "swift-collections")]),
        // The libwebsockets wrapper: the only module that imports CLibWebSockets, CPermessageDeflate
        // and CMessageDeflate.
        .target(
            name: "PinwheelTransport",
            dependencies: ["PinwheelCore", "CLibWebSockets", "CPermessageDeflate", "CMessageDeflate"]),
        // The only module that imports CNATS.
        .target(
            name: "PinwheelServer",
            dependencies: [
                "PinwheelCore",
                "PinwheelTransport",
                "CNATS",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HeapModule", package: "swift-collections"),
                // Viewer and producer tokens are verified by a kept library, never by crypto of our own.
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        .target(
            name: "PinwheelLoad",
            dependencies: [
                "PinwheelCore",
                "PinwheelTransport",
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "HeapModule", package: "swift-collections"),
            ]
        ),
        .executableTarget(
            name: "pinwheel",
            dependencies: [
                "PinwheelCore",
                "PinwheelServer",
                "PinwheelLoad",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "PinwheelCoreTests",
            dependencies: ["PinwheelCore", .product(name: "HashTreeCollections", package: "swift-collections")]),
        .testTarget(
            name: "PinwheelTransportTests", dependencies: ["PinwheelTransport", "PinwheelCore", "PinwheelTestSupport"]),
        // A real server on a free port, for the server's and the load tool's tests.
        .target(
            name: "PinwheelTestSupport", dependencies: ["PinwheelServer", "PinwheelTransport", "PinwheelCore"],
            path: "Tests/PinwheelTestSupport"),
        .testTarget(
            name: "PinwheelServerTests",
            dependencies: ["PinwheelServer", "PinwheelTransport", "PinwheelCore", "PinwheelTestSupport"]),
        .testTarget(
            name: "PinwheelLoadTests",
            dependencies: [
                "PinwheelLoad", "PinwheelServer", "PinwheelTransport", "PinwheelCore", "PinwheelTestSupport",
            ]),
    ]
)
