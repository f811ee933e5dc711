import Testing

@testable import PinwheelCore

@Suite("UTF-8 text")
struct UTF8TextTests {
    @Test("agrees with the standard library's validation on random and tricky byte strings")
    func agrees() {
        var rng = SeededRandom(seed: 9)
        var cases: [[UInt8]] = [
            Array("Zürich, 東京, 😀".utf8), [0xC0, 0x80], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80],
            [0xF4, 0x90, 0x80, 0x80],
            [0xF0, 0x9F, 0x98], [0xC3], [0x80], [0xEF, 0xBF, 0xBD], [0xF4, 0x8F, 0xBF, 0xBF], [],
        ]
        for _ in 0..<20_000 {
            let n = Int(rng.next() % 6)
            // Bias towards high bytes so multi-byte sequences and their errors are common.
            cases.append(
                (0..<n).map { _ in rng.next() % 4 == 0 ? UInt8(rng.next() % 128) : UInt8(0x80 + rng.next() % 128) })
        }
        for bytes in cases {
            #expect(UTF8Text.string(bytes) == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
    }
}
