import Testing

@testable import PinwheelCore

@Suite("Server messages")
struct MessageEncoderTests {
    let context = FeatureContext(
        properties: PropertyTable(columns: ["name", "cc"], values: ["Paris", "FR", "Quote \"q\"\n", "X"]),
        aggregates: [
            Aggregate(name: "population", operation: .sum, column: "pop"),
            Aggregate(name: "meanPop", operation: .mean, column: "pop"),
            Aggregate(name: "tallest", operation: .max, column: "height"),
        ],
        values: { f in [Double(f.count) * 1000, Double(f.count) * 1000, 42] })

    @Test("a batch encodes as the protocol's example and decodes back to the same features")
    func batchRoundTrip() throws {
        var encoder = MessageEncoder()
        let point = Feature(id: 18, lat: 1.5, lon: 2.5, count: 1, parent: 18, row: 0)
        let odd = Feature(id: 19, lat: -0.000123, lon: 179.99999999999997, count: 1, parent: nil, row: 1)
        let spread = Feature(
            id: 20, lat: 10.25, lon: 20.5, count: 1, parent: 4_294_967_396,
            anchor: Coordinate(lat: 10, lon: 20), row: 1)
        let cluster = Feature(id: 4_294_967_396, lat: 48.85, lon: 2.35, count: 12, parent: 8_589_934_692, row: -1)
        encoder.batch(
            seq: 7, number: 3, remove: [17, 4_294_967_396], add: [point], update: [], done: false,
            context: FeatureContext())
        #expect(
            encoder.text
                == #"{"type":"batch","seq":7,"batch":3,"remove":[17,4294967396],"add":[{"id":18,"lat":1.5,"lon":2.5,"count":1,"parent":18}],"update":[],"done":false,"version":0}"#
        )

        encoder.batch(
            seq: 8, number: 4, remove: [], add: [point, odd, spread], update: [cluster], done: true,
            context: context)
        let decoded = try ServerMessage.decode(Array(encoder.message))
        #expect(
            decoded
                == .batch(
                    BatchMessage(
                        seq: 8, batch: 4, remove: [],
                        add: [
                            WireFeature(
                                id: 18, lat: 1.5, lon: 2.5, count: 1, parent: 18,
                                properties: ["name": "Paris", "cc": "FR"]),
                            // Coordinates to 7 decimals: this longitude is written as 180.
                            WireFeature(
                                id: 19, lat: -0.000123, lon: 180, count: 1,
                                properties: ["name": "Quote \"q\"\n", "cc": "X"]),
                            WireFeature(
                                id: 20, lat: 10.25, lon: 20.5, count: 1, parent: 4_294_967_396,
                                anchor: Coordinate(lat: 10, lon: 20),
                                properties: ["name": "Quote \"q\"\n", "cc": "X"]),
                        ],
                        update: [
                            WireFeature(
                                id: 4_294_967_396, lat: 48.85, lon: 2.35, count: 12, parent: 8_589_934_692,
                                aggregates: ["population": 12000, "meanPop": 1000, "tallest": 42])
                        ], done: true)))
    }

    @Test("a cluster's aggregates: a mean divides the reduced sum by the count, no value at all is null")
    func aggregateValues() {
        var encoder = MessageEncoder()
        let cluster = Feature(id: 4_294_967_396, lat: 1, lon: 2, count: 4, parent: nil, row: -1)
        let aggregates = [
            Aggregate(name: "mean", operation: .mean, column: "p"),
            Aggregate(name: "low", operation: .min, column: "q"),
        ]
        encoder.batch(
            seq: 1, number: 1, remove: [], add: [cluster], update: [], done: true,
            context: FeatureContext(aggregates: aggregates, values: { _ in [10, .nan] }))
        #expect(encoder.text.contains(#""count":4,"aggregates":{"mean":2.5,"low":null}}"#))
    }

    @Test("a pong encodes as the protocol's example and decodes back to its id")
    func pong() throws {
        var encoder = MessageEncoder()
        encoder.pong(id: 9_007_199_254_740_991)
        #expect(encoder.text == #"{"type":"pong","id":9007199254740991}"#)
        #expect(try ServerMessage.decode(Array(encoder.message)) == .pong(id: 9_007_199_254_740_991))
    }

    @Test("headroom bytes precede the message and are left alone")
    func headroom() {
        var encoder = MessageEncoder(headroom: 16)
        encoder.error(WireError(.unknownFeature, field: "id", message: "no feature 5"))
        #expect(encoder.writer.bytes.count == 16 + encoder.message.count)
        #expect(encoder.writer.bytes.prefix(16).allSatisfy { $0 == 0 })
        #expect(encoder.text == #"{"type":"error","code":"unknown-feature","field":"id","message":"no feature 5"}"#)
        encoder.error(WireError(.badJSON, message: "not JSON"))
        #expect(encoder.text == #"{"type":"error","code":"bad-json","message":"not JSON"}"#)
    }

    @Test("error, expansion and hello decode back to what was encoded")
    func otherRoundTrips() throws {
        var encoder = MessageEncoder()
        let error = WireError(.invalidField, field: "zoom", message: "zoom must be between 0 and 24, got 31")
        encoder.error(error)
        #expect(
            encoder.text
                == #"{"type":"error","code":"invalid-field","field":"zoom","message":"zoom must be between 0 and 24, got 31"}"#
        )
        #expect(try ServerMessage.decode(encoder.text) == .error(error))

        encoder.expansion(id: 4_294_967_396, .zoom(9), context: context)
        #expect(encoder.text == #"{"type":"expansion","id":4294967396,"zoom":9}"#)
        #expect(
            try ServerMessage.decode(encoder.text) == .expansion(ExpansionMessage(id: 4_294_967_396, result: .zoom(9))))

        let member = Feature(
            id: 5, lat: 1, lon: 2, count: 1, parent: 4_294_967_396, anchor: Coordinate(lat: 1.5, lon: 2.5), row: 0)
        encoder.expansion(id: 4_294_967_396, .spread([member]), context: FeatureContext())
        #expect(
            try ServerMessage.decode(encoder.text)
                == .expansion(
                    ExpansionMessage(
                        id: 4_294_967_396,
                        result: .spread([
                            WireFeature(
                                id: 5, lat: 1, lon: 2, count: 1, parent: 4_294_967_396,
                                anchor: Coordinate(lat: 1.5, lon: 2.5))
                        ]))))

        let hello = HelloMessage(
            session: "7f3a", algorithm: .hierarchical,
            dataset: .init(
                name: "geonames-cities", points: 144_600,
                bounds: BBox(west: -179.9, south: -54.9, east: 179.9, north: 78.2)))
        encoder.hello(hello)
        #expect(
            encoder.text
                == #"{"type":"hello","protocol":"pinwheel.v1","session":"7f3a","algorithm":"hierarchical","algorithms":["hierarchical","pca-tree"],"dataset":{"name":"geonames-cities","points":144600,"bounds":[-179.9,-54.9,179.9,78.2],"unlocated":0,"skipped":0,"aggregates":[]},"options":{"minZoom":0,"maxZoom":16,"minPoints":2,"radius":40,"extent":512,"spread":"adaptive","maxClusters":32},"limits":{"viewportHz":10,"pace":0.5,"window":4,"maxMessageBytes":65536,"maxZoom":24,"maxPixels":16384,"maxFeatures":10000},"groups":null,"flags":[]}"#
        )
        #expect(try ServerMessage.decode(encoder.text) == .hello(hello))
        var empty = hello
        empty.dataset = .init(
            name: "none", points: 0, bounds: nil, unlocated: 2, skipped: 3,
            aggregates: [Aggregate(name: "a\"b", operation: .min, column: "c")])
        encoder.hello(empty)
        #expect(try ServerMessage.decode(encoder.text) == .hello(empty))
    }

    @Test("a client decoding server messages names bad fields too")
    func clientSideValidation() {
        #expect(throws: WireError(.missingField, field: "done", message: "batch needs \"done\"")) {
            try ServerMessage.decode(#"{"type":"batch","seq":1,"batch":1,"remove":[],"add":[],"update":[]}"#)
        }
        #expect(
            throws: WireError(
                .unknownType, field: "type",
                message:
                    "unknown message type \"viewport\"; expected hello, batch, expansion, error, presence, pong, children or leaves"
            )
        ) {
            try ServerMessage.decode(#"{"type":"viewport"}"#)
        }
    }

    @Test("encoding a batch of 1000 features reuses the buffer: capacity stops growing")
    func reuse() {
        var encoder = MessageEncoder(capacity: 16)
        let features = (0..<1000).map {
            Feature(id: UInt64($0), lat: Double($0) / 7, lon: Double($0) / 3, count: 1, parent: nil, row: 0)
        }
        encoder.batch(seq: 1, number: 1, remove: [], add: features, update: [], done: true, context: context)
        let capacity = encoder.writer.bytes.capacity
        for n in 2...20 {
            encoder.batch(
                seq: 1, number: UInt64(n), remove: [], add: features, update: [], done: true, context: context)
        }
        #expect(encoder.writer.bytes.capacity == capacity)
    }
}

@Suite("Presence encoding")
struct PresenceEncodingTests {
    @Test("a presence message joined from entries decodes to those viewports, in order")
    func roundTrip() throws {
        let viewports = [
            PresenceViewport(session: "7f3a", bbox: BBox(west: -0.5, south: 51.3, east: 0.3, north: 51.7), zoom: 11.4),
            PresenceViewport(session: "9c01", bbox: BBox(west: 170, south: -20, east: -170, north: 10), zoom: 3),
        ]
        var writer = JSONWriter(capacity: 64)
        let entries = viewports.map { v -> [UInt8] in
            PresenceEncoding.entry(v, into: &writer)
            return writer.bytes
        }
        #expect(try ServerMessage.decode(PresenceEncoding.message(entries)) == .presence(viewports))
        #expect(try ServerMessage.decode(PresenceEncoding.message([])) == .presence([]))
    }
}
