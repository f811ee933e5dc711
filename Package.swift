// swift-tools-version: 6.2
import PackageDescription

let package = Package(
    name: "pinwheel",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "pinwheel", targets: ["pinwheel"]),
        .library(name: "PinwheelCore", targets: ["PinwheelCore"]),
        .library(name: "PinwheelServer", targets: ["PinwheelServer"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.1.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.1.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibWebSockets",
            pkgConfig: "libwebsockets",
            providers: [.apt(["libwebsockets-dev"])]
        ),
        // lws's permessage-deflate assertions that a peer can reach, contained (see deflate_guard.c).
        .target(name: "CDeflateGuard"),
        .target(name: "PinwheelCore"),
        .target(
            name: "PinwheelServer",
            dependencies: [
                "PinwheelCore",
                "CLibWebSockets",
                "CDeflateGuard",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ]
        ),
        .executableTarget(
            name: "pinwheel",
            dependencies: [
                "PinwheelCore",
                "PinwheelServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "PinwheelCoreTests", dependencies: ["PinwheelCore"]),
        .testTarget(name: "PinwheelServerTests", dependencies: ["PinwheelServer", "PinwheelCore"]),
    ]
)
