import Glibc
import PinwheelCore

/// libFuzzer's driver: SwiftPM renames an executable's own entry point, so this program calls it.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The targets: each takes arbitrary bytes and must neither crash nor break its own contract.
let targets: [String: (UnsafeBufferPointer<UInt8>) -> Void] = [
    "client-message": FuzzTargets.clientMessage,
    "json-reader": FuzzTargets.jsonReader,
    "csv": FuzzTargets.csv,
    "geojson": FuzzTargets.geoJSON,
    "ndjson": FuzzTargets.ndjson,
    "change-lines": FuzzTargets.changeLines,
    "change-record": FuzzTargets.changeRecord,
    "binary-message": FuzzTargets.binaryMessage,
]

let arguments = CommandLine.arguments
guard arguments.count >= 2, let target = targets[arguments[1]] else {
    print("usage: pinwheel-fuzz \(targets.keys.sorted().joined(separator: "|")) [libFuzzer options] [corpus…]")
    exit(2)
}
nonisolated(unsafe) let selected = target
// libFuzzer sees the program name and the options after the target's name.
var argv: [UnsafeMutablePointer<CChar>?] = ([arguments[0]] + arguments.dropFirst(2)).map { strdup($0) } + [nil]
var argc = Int32(argv.count - 1)
let status = argv.withUnsafeMutableBufferPointer { buffer in
    var base = buffer.baseAddress
    return runDriver(&argc, &base) { data, size in
        selected(UnsafeBufferPointer(start: data, count: size))
        return 0
    }
}
exit(status)
