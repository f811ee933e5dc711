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

    @Test("long ASCII runs, read eight bytes at a time, with a multi-byte or bad sequence anywhere")
    func asciiRuns() {
        var rng = SeededRandom(seed: 11)
        let pieces: [[UInt8]] = [
            [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xC3], [0x80], [0xED, 0xA0, 0x80],
            [0xF8, 0x88, 0x80, 0x80, 0x80], [0xC0, 0xAF], [0xFF],
        ]
        for _ in 0..<5_000 {
            var bytes = (0..<Int(rng.next() % 40)).map { _ in UInt8(32 + rng.next() % 95) }
            if rng.next() % 4 != 0 {
                let piece = pieces[Int(rng.next() % UInt64(pieces.count))]
                bytes.insert(contentsOf: piece, at: Int(rng.next() % UInt64(bytes.count + 1)))
            }
            #expect(UTF8Text.string(bytes) == String(validating: bytes, as: UTF8.self), "\(bytes)")
        }
    }
}
