import PinwheelCore
import PinwheelTestSupport
import Testing

@testable import PinwheelTransport

@Suite("Joining compressed messages and inflating each whole")
struct MessageAssemblerInflateTests {
    /// `text` compressed as one permessage-deflate message, as the server's workers do.
    static func compressed(_ text: String) throws -> [UInt8] {
        let framed = try #require(Array(text.utf8).withUnsafeBytes { MessageDeflate.compress($0, windowBits: 12) })
        return Array(framed.dropFirst(WebSocketServer.headroom))
    }

    /// Feeds `bytes` in chunks of `chunk` bytes, the first marked compressed when `compressed`.
    static func feed(
        _ bytes: [UInt8], chunk: Int, compressed: Bool, binary: Bool = false, into assembler: inout MessageAssembler
    ) -> MessageAssembler.Outcome {
        var outcome = MessageAssembler.Outcome.incomplete
        var start = 0
        repeat {
            let end = min(bytes.count, start + chunk)
            let first = start == 0
            outcome = bytes[start..<end].withUnsafeBytes {
                assembler.append($0, isLast: end == bytes.count, binary: binary, startsCompressed: compressed && first)
            }
            start = end
        } while start < bytes.count
        return outcome
    }

    @Test("a compressed message that arrives in pieces comes out whole, and the next plain one as it is")
    func joinsThenInflates() throws {
        var generator = SplitMix64(seed: 3)
        let text = generator.letters(50_000) + "é"
        var assembler = MessageAssembler(limit: 1 << 20)
        let outcome = Self.feed(try Self.compressed(text), chunk: 4096, compressed: true, into: &assembler)
        guard case .complete(let message) = outcome else {
            Issue.record("got \(outcome)")
            return
        }
        #expect(message == Array(text.utf8))
        guard case .complete(let plain) = Self.feed(Array("plain".utf8), chunk: 2, compressed: false, into: &assembler)
        else {
            Issue.record("the plain message did not come out")
            return
        }
        #expect(plain == Array("plain".utf8))
    }

    @Test("a compressed message inflating past the limit is refused, though it arrived small")
    func limitCountsInflatedBytes() throws {
        let bytes = try Self.compressed(String(repeating: "a", count: 100_000))
        #expect(bytes.count < 1_000)
        var assembler = MessageAssembler(limit: 99_999)
        guard case .tooLarge = Self.feed(bytes, chunk: 1024, compressed: true, into: &assembler) else {
            Issue.record("a 100,000-byte message passed a 99,999-byte limit")
            return
        }
        var exact = MessageAssembler(limit: 100_000)
        guard case .complete(let message) = Self.feed(bytes, chunk: 1024, compressed: true, into: &exact) else {
            Issue.record("a message of exactly the limit was refused")
            return
        }
        #expect(message.count == 100_000)
    }

    @Test("bytes that are no deflate stream, or one cut off, are refused as invalid compression")
    func corrupt() throws {
        var assembler = MessageAssembler(limit: 1 << 20)
        let garbage: [UInt8] = (0..<64).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
        guard case .invalidCompression = Self.feed(garbage, chunk: 64, compressed: true, into: &assembler) else {
            Issue.record("garbage inflated")
            return
        }
        var generator = SplitMix64(seed: 5)
        let whole = try Self.compressed(generator.letters(20_000))
        guard
            case .invalidCompression = Self.feed(
                Array(whole.prefix(whole.count / 2)), chunk: 512, compressed: true, into: &assembler)
        else {
            Issue.record("half a message inflated")
            return
        }
        // The assembler starts afresh after a refused message.
        guard case .complete(let message) = Self.feed(whole, chunk: 512, compressed: true, into: &assembler) else {
            Issue.record("a whole message after a refused one did not inflate")
            return
        }
        #expect(message.count == 20_000)
    }

    @Test(
        "messages either side of the inflaters' size split (zlib under 1 KiB, igzip above) come out whole, cut ones refused"
    )
    func bothInflaters() throws {
        var generator = SplitMix64(seed: 9)
        var sizes: [Int] = []
        for letters in [40, 400, 1_500, 1_650, 1_800, 2_500, 30_000] {
            let text = generator.letters(letters)
            let bytes = try Self.compressed(text)
            sizes.append(bytes.count)
            var assembler = MessageAssembler(limit: 1 << 20)
            guard case .complete(let message) = Self.feed(bytes, chunk: 1024, compressed: true, into: &assembler) else {
                Issue.record("\(letters) letters, \(bytes.count) bytes compressed, did not inflate")
                continue
            }
            #expect(message == Array(text.utf8))
            let cut = Array(bytes.prefix(bytes.count * 2 / 3))
            guard case .invalidCompression = Self.feed(cut, chunk: 1024, compressed: true, into: &assembler) else {
                Issue.record("two thirds of \(bytes.count) compressed bytes inflated")
                continue
            }
        }
        #expect(sizes.contains { $0 < 1024 } && sizes.contains { $0 >= 1024 }, "compressed sizes \(sizes)")
    }

    @Test("an empty compressed message is empty, and compressed text must still be UTF-8")
    func emptyAndUTF8() throws {
        var assembler = MessageAssembler(limit: 1024)
        guard case .complete(let empty) = Self.feed([0x00], chunk: 1, compressed: true, into: &assembler) else {
            Issue.record("the one-byte empty message did not inflate")
            return
        }
        #expect(empty.isEmpty)
        let invalid = try #require(
            [UInt8]([0xC3, 0x28] + Array(repeating: 0x41, count: 300)).withUnsafeBytes {
                MessageDeflate.compress($0, windowBits: 12)
            })
        let bytes = Array(invalid.dropFirst(WebSocketServer.headroom))
        guard case .invalidUTF8 = Self.feed(bytes, chunk: 100, compressed: true, into: &assembler) else {
            Issue.record("invalid UTF-8 passed once inflated")
            return
        }
        guard case .complete = Self.feed(bytes, chunk: 100, compressed: true, binary: true, into: &assembler) else {
            Issue.record("the same bytes as a binary message were refused")
            return
        }
    }
}
