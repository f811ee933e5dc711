import Foundation
import Testing

@testable import PinwheelCore

@Suite("Client messages")
struct ClientMessageTests {
    func failure(_ text: String) -> WireError? {
        do {
            _ = try ClientMessage.decode(text)
            return nil
        } catch {
            return error
        }
    }

    let viewport = #"{"type":"viewport","seq":7,"bbox":[-0.5,51.3,0.3,51.7],"zoom":11.4,"width":1280,"height":800}"#

    @Test("the protocol document's examples decode to what they say")
    func documentExamples() throws {
        #expect(
            try ClientMessage.decode(viewport)
                == .viewport(
                    ViewportMessage(
                        seq: 7, bbox: BBox(west: -0.5, south: 51.3, east: 0.3, north: 51.7), zoom: 11.4, width: 1280,
                        height: 800)))
        #expect(
            try ClientMessage.decode(#"{"type":"ack","batch":3,"applied":64,"ms":4.2}"#)
                == .ack(AckMessage(batch: 3, applied: 64, ms: 4.2)))
        #expect(try ClientMessage.decode(#"{"type":"expand","id":4294967396}"#) == .expand(id: 4_294_967_396))
        #expect(
            try ClientMessage.decode(#"{"type":"settings","algorithm":"pca-tree"}"#)
                == .settings(SettingsMessage(algorithm: .pcaTree)))
    }

    @Test("every client message survives encode then decode")
    func roundTrip() throws {
        var rng = SeededRandom(seed: 3)
        for _ in 0..<500 {
            // A bbox the map's size can show at its zoom (a quarter of what the span rule allows).
            let zoom = Double.random(in: 0...24, using: &rng)
            let width = Int(rng.next() % 16384) + 1
            let height = Int(rng.next() % 16384) + 1
            let worldPixels = 256 * pow(2, zoom)
            let lonSpan = min(359, 360 * Double(width) / 2 / worldPixels)
            let west = Double.random(in: -180...180, using: &rng)
            let south = Double.random(in: -80...79, using: &rng)
            let northY = Mercator.y(lat: south) - min(1, Double(height) / 2 / worldPixels)
            let box = BBox.normalized(
                west: west, south: south, east: west + Double.random(in: 0...lonSpan, using: &rng),
                north: max(south, Mercator.lat(y: max(0, northY))))
            let messages: [ClientMessage] = [
                .viewport(ViewportMessage(seq: rng.next() >> 11, bbox: box, zoom: zoom, width: width, height: height)),
                .ack(
                    AckMessage(
                        batch: rng.next() >> 11, applied: Int(rng.next() % 10_000),
                        ms: Double.random(in: 0...1000, using: &rng))),
                .expand(id: rng.next() >> 11),
                .settings(SettingsMessage(algorithm: rng.next() % 2 == 0 ? .hierarchical : .pcaTree)),
                .ping(id: rng.next() >> 11),
            ]
            for m in messages { #expect(try ClientMessage.decode(m.json) == m, "\(m.json)") }
        }
    }

    @Test("a ping names its id, a whole number")
    func ping() throws {
        #expect(try ClientMessage.decode(#"{"type":"ping","id":12}"#) == .ping(id: 12))
        #expect(failure(#"{"type":"ping"}"#)?.field == "id")
        #expect(failure(#"{"type":"ping","id":-1}"#)?.field == "id")
        #expect(failure(#"{"type":"ping","id":"x"}"#)?.field == "id")
    }

    @Test("a valid ack is told apart from every other message without waking a worker")
    func recognisesAcknowledgements() {
        // As a session tells it: the quick scan, then the decoding only of what passes it.
        func isAcknowledgement(_ text: String) -> Bool {
            let bytes = Array(text.utf8)
            guard ClientMessage.mayBeAcknowledgement(bytes), case .ack? = try? ClientMessage.decode(bytes) else {
                return false
            }
            return true
        }
        let ack = #"{"type":"ack","batch":3,"applied":64,"ms":4.2}"#
        #expect(isAcknowledgement(ack))
        #expect(isAcknowledgement(#"{"batch":3,"applied":1,"ms":0,"type":"ack"}"#))
        // Not an ack, an invalid one (answered with an error), or too long to be one.
        for text in [
            #"{"type":"viewport","seq":7,"bbox":[-0.5,51.3,0.3,51.7],"zoom":11.4,"width":1280,"height":800}"#,
            #"{"type":"ack","batch":3}"#, #"{"type":"ack","batch":-1,"applied":1,"ms":1}"#, #""ack""#, "",
            #"{"type":"ack","batch":3,"applied":64,"ms":4.2,"note":""# + String(repeating: "x", count: 300) + #""}"#,
        ] {
            #expect(!isAcknowledgement(text), "\(text.prefix(40))")
        }
        // The quick look lets every ack through and stops a viewport.
        #expect(ClientMessage.mayBeAcknowledgement(Array(ack.utf8)))
        #expect(
            !ClientMessage.mayBeAcknowledgement(
                Array(#"{"type":"viewport","seq":7,"bbox":[-0.5,51.3,0.3,51.7],"zoom":11.4}"#.utf8)))
    }

    @Test("the one-pass reading of viewport and ack answers as the general path does, or leaves it to it")
    func commonFormsAgree() throws {
        var rng = SeededRandom(seed: 23)
        var writer = JSONWriter(capacity: 256)
        var read = 0
        for k in 0..<3000 {
            // A view of 1280 × 800 pixels at its zoom, as a page sends.
            let zoom = Double.random(in: 1...20, using: &rng)
            let tileSize = [256, 512][k % 4 / 2]
            let span = min(300, 360 * 1280 / (Double(tileSize) * pow(2, zoom)))
            let (west, south) = (Double.random(in: -170...0, using: &rng), Double.random(in: -60...0, using: &rng))
            let message: ClientMessage =
                k % 2 == 0
                ? .ack(
                    AckMessage(
                        batch: UInt64.random(in: 0...999, using: &rng), applied: Int.random(in: 0...5000, using: &rng),
                        ms: Double.random(in: 0...40, using: &rng)))
                : .viewport(
                    ViewportMessage(
                        seq: UInt64.random(in: 0...99_999, using: &rng),
                        bbox: BBox(west: west, south: south, east: west + span, north: south + span * 0.4),
                        zoom: zoom, width: 1280, height: 800, tileSize: tileSize))
            message.encode(into: &writer)
            var text = writer.bytes
            // Some texts as written, the others with one byte changed: every form, valid or not, the
            // one-pass reader meets.
            if k % 3 != 0 {
                text[Int.random(in: 0..<text.count, using: &rng)] = Array(#" {}[]":,.-+0159eEnaultrspkvcw"#.utf8)
                    .randomElement(using: &rng)!
            }
            let general = text.withUnsafeBufferPointer { try? ClientMessage.decodeGeneral($0) }
            let common = text.withUnsafeBufferPointer { ClientMessage.decodeCommon($0) }
            if let common {
                read += 1
                #expect(common == general, "\(String(decoding: text, as: UTF8.self))")
            }
        }
        // The one-pass reader took every unchanged text and some changed ones.
        #expect(read >= 1000)
        // Forms it leaves to the general path, which reads them the same.
        for text in [
            #"{"type":"ack","batch":3,"applied":1,"ms":1,"batch":4}"#,
            #"{"type":"ack","batch":3,"applied":1,"ms":1,"x":0}"#,
            #"{"type":"a\u0063k","batch":3,"applied":1,"ms":1}"#, #"{"type":"ack","batch":3,"applied":1,"ms":null}"#,
        ] {
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBufferPointer { ClientMessage.decodeCommon($0) } == nil, "\(text)")
        }
        #expect(
            try ClientMessage.decode(#"{"type":"ack","batch":3,"applied":1,"ms":1,"batch":4}"#)
                == .ack(AckMessage(batch: 4, applied: 1, ms: 1)))
    }

    @Test("unknown fields are ignored so clients can add them")
    func unknownFields() throws {
        #expect(try ClientMessage.decode(#"{"type":"expand","id":5,"hint":"x"}"#) == .expand(id: 5))
    }

    @Test("text that is not JSON is bad-json; JSON that is not an object too")
    func badJSON() {
        #expect(
            failure("{\"type\":")
                == WireError(
                    .badJSON, message: "not JSON: unexpected end of input, expected a value at line 1, column 9"))
        #expect(failure("[1,2]")?.code == .badJSON)
        #expect(failure("")?.code == .badJSON)
    }

    @Test("a missing or unknown type is reported")
    func types() {
        #expect(
            failure(#"{"seq":1}"#) == WireError(.missingField, field: "type", message: "a message needs a \"type\""))
        #expect(
            failure(#"{"type":5}"#)
                == WireError(.invalidField, field: "type", message: "type must be a string, got a number"))
        #expect(
            failure(#"{"type":"hover"}"#)
                == WireError(
                    .unknownType, field: "type",
                    message:
                        "unknown message type \"hover\"; expected viewport, ack, expand, settings, held, ping, children or leaves"
                ))
    }

    @Test("each missing viewport field is named")
    func missingFields() {
        for field in ["seq", "bbox", "zoom", "width", "height"] {
            let text = viewport.replacingOccurrences(of: "\"\(field)\":", with: "\"x\(field)\":")
            #expect(failure(text) == WireError(.missingField, field: field, message: "viewport needs \"\(field)\""))
        }
        #expect(
            failure(#"{"type":"viewport","seq":null,"bbox":[0,0,1,1],"zoom":1,"width":1,"height":1}"#)?.field == "seq")
    }

    @Test("wrong-typed fields are invalid-field naming the field")
    func wrongTypes() {
        #expect(
            failure(viewport.replacingOccurrences(of: "11.4", with: "\"11\""))
                == WireError(
                    .invalidField, field: "zoom", message: "zoom must be a number, got a string"))
        #expect(
            failure(viewport.replacingOccurrences(of: "[-0.5,51.3,0.3,51.7]", with: "{}"))
                == WireError(
                    .invalidField, field: "bbox", message: "bbox must be an array, got an object"))
        #expect(
            failure(viewport.replacingOccurrences(of: "[-0.5,51.3,0.3,51.7]", with: "[1,2,3]"))
                == WireError(
                    .invalidField, field: "bbox", message: "bbox must be [west, south, east, north], got 3 numbers"))
        #expect(
            failure(viewport.replacingOccurrences(of: "\"seq\":7", with: "\"seq\":7.5"))
                == WireError(
                    .invalidField, field: "seq", message: "seq must be a whole number, got 7.5"))
        #expect(
            failure(viewport.replacingOccurrences(of: "\"seq\":7", with: "\"seq\":-1"))
                == WireError(
                    .invalidField, field: "seq", message: "seq must be between 0 and 9007199254740991, got -1"))
        #expect(
            failure(#"{"type":"settings","algorithm":"kmeans"}"#)
                == WireError(
                    .invalidField, field: "algorithm",
                    message: "algorithm must be one of hierarchical, pca-tree, got \"kmeans\""))
        #expect(failure(#"{"type":"ack","batch":1,"applied":true,"ms":1}"#)?.field == "applied")
        #expect(failure(#"{"type":"ack","batch":1,"applied":1,"ms":-1}"#)?.field == "ms")
        #expect(failure(#"{"type":"expand","id":"5"}"#)?.field == "id")
    }

    @Test("NaN and Infinity are rejected naming the field")
    func nonFinite() {
        #expect(
            failure(viewport.replacingOccurrences(of: "11.4", with: "NaN"))
                == WireError(
                    .invalidField, field: "zoom", message: "zoom must be a finite number, got nan"))
        #expect(failure(viewport.replacingOccurrences(of: "11.4", with: "Infinity"))?.field == "zoom")
        #expect(failure(viewport.replacingOccurrences(of: "11.4", with: "1e999"))?.field == "zoom")
        #expect(
            failure(viewport.replacingOccurrences(of: "-0.5,", with: "-Infinity,"))
                == WireError(
                    .invalidField, field: "bbox", message: "bbox west (bbox[0]) must be a finite number, got -inf"))
    }

    @Test("latitudes beyond ±90, zoom beyond 0–24 and sizes beyond 1–16384 are rejected")
    func ranges() {
        #expect(
            failure(viewport.replacingOccurrences(of: "51.3,", with: "-95,"))
                == WireError(
                    .invalidField, field: "bbox", message: "bbox south (bbox[1]) must be between -90 and 90, got -95"))
        #expect(failure(viewport.replacingOccurrences(of: "51.7]", with: "90.5]"))?.field == "bbox")
        #expect(
            failure(viewport.replacingOccurrences(of: "11.4", with: "31"))
                == WireError(
                    .invalidField, field: "zoom", message: "zoom must be between 0 and 24, got 31"))
        #expect(failure(viewport.replacingOccurrences(of: "11.4", with: "-0.1"))?.field == "zoom")
        #expect(
            failure(viewport.replacingOccurrences(of: "1280", with: "0"))
                == WireError(
                    .invalidField, field: "width", message: "width must be between 1 and 16384, got 0"))
        #expect(failure(viewport.replacingOccurrences(of: "800", with: "16385"))?.field == "height")
        #expect(failure(viewport.replacingOccurrences(of: "800", with: "-3"))?.field == "height")
    }

    @Test("a bbox far larger than width × height pixels can show at its zoom is invalid-field bbox")
    func impossibleSpan() {
        let world = #"{"type":"viewport","seq":1,"bbox":[-180,-85,180,85],"zoom":16,"width":16384,"height":16384}"#
        #expect(
            failure(world)
                == WireError(
                    .invalidField, field: "bbox",
                    message: "bbox spans 360° of longitude; a 16384-px-wide map at zoom 16 shows at most 0.709° "
                        + "(its width twice over plus 256 px)"))
        let tall = #"{"type":"viewport","seq":1,"bbox":[0,-60,0.01,60],"zoom":10,"width":1280,"height":800}"#
        #expect(failure(tall)?.field == "bbox")
        #expect(failure(tall)?.message.hasPrefix("bbox spans latitudes -60° to 60°") == true)
    }

    @Test("what a browser map reports passes the span rule, up to twice its size plus a tile")
    func realisticSpans() throws {
        // Leaflet over London at a fractional zoom, and the whole world on a wide screen at zoom 0.
        #expect(throws: Never.self) { try ClientMessage.decode(viewport) }
        let world = #"{"type":"viewport","seq":1,"bbox":[-180,-90,180,90],"zoom":0,"width":1920,"height":1080}"#
        #expect(throws: Never.self) { try ClientMessage.decode(world) }
        // At zoom 10 the world is 262,144 px wide: a 1000-px map may ask for (2 × 1000 + 256) px.
        let most = 360 * (2 * 1000 + 256) / 262_144.0
        let edge = #"{"type":"viewport","seq":1,"bbox":[0,0,\#(most - 1e-9),0.1],"zoom":10,"width":1000,"height":500}"#
        #expect(throws: Never.self) { try ClientMessage.decode(edge) }
        let over = #"{"type":"viewport","seq":1,"bbox":[0,0,\#(most * 1.01),0.1],"zoom":10,"width":1000,"height":500}"#
        #expect(failure(over)?.field == "bbox")
    }

    @Test("a bbox wider than the world becomes the whole world; longitudes wrap")
    func normalises() throws {
        let wide = viewport.replacingOccurrences(of: "[-0.5,51.3,0.3,51.7]", with: "[-400,-10,400,10]")
            .replacingOccurrences(of: "11.4", with: "1")
        guard case .viewport(let v) = try ClientMessage.decode(wide) else {
            Issue.record("not a viewport")
            return
        }
        #expect(v.bbox == BBox(west: -180, south: -10, east: 180, north: 10))
        let wrapped = viewport.replacingOccurrences(of: "[-0.5,51.3,0.3,51.7]", with: "[170,0,190,1]")
            .replacingOccurrences(of: "11.4", with: "5")
        guard case .viewport(let w) = try ClientMessage.decode(wrapped) else { return }
        #expect(w.bbox.crossesAntimeridian && w.bbox.west == 170 && w.bbox.east == -170)
    }
}
