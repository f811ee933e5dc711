// swift-tools-version: 6.2
import PackageDescription

// libFuzzer targets for the parsers an attacker or a user's file reaches, built only by scripts/fuzz
// (with -sanitize=fuzzer,address). A package of its own, so the main package's plain builds never
// try to link the fuzzer's entry point; PinwheelCore is the same source, through a symbolic link.
let package = Package(
    name: "pinwheel-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(url: "https://github.com/apple/swift-collections", from: "1.6.0")],
    targets: [
        .target(
            name: "PinwheelCore",
            dependencies: [.product(name: "HashTreeCollections", package: "swift-collections")]),
        .executableTarget(name: "pinwheel-fuzz", dependencies: ["PinwheelCore"]),
    ]
)
