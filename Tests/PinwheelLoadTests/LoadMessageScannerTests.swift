import PinwheelCore
import Testing

@testable import PinwheelLoad
@testable import PinwheelServer

@Suite("MessageScanner: what the load client reads from server messages")
struct LoadMessageScannerTests {
    static func scan(_ text: String) -> MessageScanner? {
        var scanner = MessageScanner()
        let ok = Array(text.utf8).withUnsafeBufferPointer { scanner.scan($0) }
        return ok ? scanner : nil
    }

    @Test("a batch gives seq, batch, done, removed ids and each feature's id and encoded length")
    func batch() throws {
        let feature1 = #"{"id":18,"lat":1.5,"lon":2.5,"count":1,"parent":18,"properties":{"name":"a \"}\" [b]"}}"#
        let feature2 = #"{"lat":3,"id":4294967396,"count":12,"anchor":{"lat":1,"lon":2},"sums":{"p":[1,{"x":"}"}]}}"#
        let text =
            #"{"type":"batch","seq":7,"batch":3,"remove":[17, 4294967396],"add":[\#(feature1),\#(feature2)],"update":[],"done":true}"#
        let s = try #require(Self.scan(text))
        #expect(s.kind == .batch)
        #expect(s.seq == 7 && s.batch == 3 && s.done)
        #expect(s.removed == [17, 4_294_967_396])
        #expect(s.features.map(\.id) == [18, 4_294_967_396])
        #expect(s.features.map(\.bytes) == [feature1.utf8.count, feature2.utf8.count])
        #expect(s.addCount == 2 && s.updateCount == 0)
    }

    @Test("members in any order, whitespace, and unknown members are read the same")
    func order() throws {
        let text = """
            { "done" : false , "update" : [ {"id" : 5} ], "extra": {"a":[1,2,{"b":null}]}, "seq": 2,
              "remove": [], "type": "batch", "batch": 9, "add": [] }
            """
        let s = try #require(Self.scan(text))
        #expect(s.kind == .batch && s.seq == 2 && s.batch == 9 && !s.done)
        #expect(s.features.map(\.id) == [5] && s.updateCount == 1 && s.addCount == 0)
    }

    @Test("other message types are told apart and an error's code is kept")
    func otherTypes() throws {
        #expect(try #require(Self.scan(#"{"type":"hello","dataset":{"bounds":[1,2,3,4]}}"#)).kind == .hello)
        #expect(try #require(Self.scan(#"{"type":"presence","viewports":[]}"#)).kind == .presence)
        let error = try #require(Self.scan(#"{"type":"error","code":"invalid-field","message":"zoom"}"#))
        #expect(error.kind == .error && error.errorCode == "invalid-field")
        #expect(try #require(Self.scan(#"{"type":"expansion","id":4,"zoom":9}"#)).kind == .other)
    }

    @Test(
        "broken messages are refused",
        arguments: [
            "", "[]", #"{"type":"batch""#, #"{"type":"batch","seq":-1}"#, #"{"add":[{"lat":1}]}"#,
            #"{"remove":[1,"x"]}"#, #"{"type":"batch","add":[{"id":1}"#, #"{"done":maybe}"#,
        ])
    func refused(text: String) {
        #expect(Self.scan(text) == nil)
    }

    @Test("random batches written by JSONWriter scan to what JSONReader reads")
    func randomBatches() throws {
        let awkward = ["plain", "br{ce", "q\"uote", "back\\slash", "]", "new\nline", "ünï"]
        for seed in UInt64(0)..<200 {
            var random = PinwheelCore.SplitMix64(seed: seed)
            var writer = JSONWriter()
            var lengths: [Int] = []
            var ids: [UInt64] = []
            writer.raw(#"{"type":"batch","seq":"#)
            writer.integer(Int(random.next() % 1000))
            writer.raw(#","add":["#)
            for k in 0..<Int(random.next() % 8) {
                if k > 0 { writer.byte(UInt8(ascii: ",")) }
                let start = writer.bytes.count
                let id = random.next() >> 12
                ids.append(id)
                writer.raw(#"{"lat":"#)
                writer.number(random.nextUnit() * 180 - 90)
                writer.raw(#","properties":{"name":"#)
                writer.string(awkward[Int(random.next() % UInt64(awkward.count))])
                writer.raw(#","tags":["#)
                writer.string(awkward[Int(random.next() % UInt64(awkward.count))])
                writer.raw(#"]},"id":"#)
                writer.integer(id)
                writer.byte(UInt8(ascii: "}"))
                lengths.append(writer.bytes.count - start)
            }
            writer.raw(#"],"batch":1,"done":true}"#)
            var scanner = MessageScanner()
            let ok = writer.bytes.withUnsafeBufferPointer { scanner.scan($0) }
            #expect(ok)
            #expect(scanner.features.map(\.id) == ids)
            #expect(scanner.features.map(\.bytes) == lengths)
            guard case .object(let parsed) = try JSONReader.parse(writer.bytes) else {
                Issue.record("not an object")
                continue
            }
            #expect(parsed["seq"] == .number(Double(scanner.seq)))
        }
    }
}
