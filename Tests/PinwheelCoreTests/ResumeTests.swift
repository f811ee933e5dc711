import Testing

@testable import PinwheelCore

/// A reconnecting page reports what it still holds (`held`) and gets only the difference; a page with
/// smaller tiles (`tileSize`) gets clusters spaced in its own screen pixels.
@Suite("Resume and tile size")
struct ResumeTests {
    typealias Harness = SessionMachineTests.Harness
    static let europe = SessionMachineTests.europe

    func digest(_ f: WireFeature) -> UInt32 {
        Feature(id: f.id, lat: f.lat, lon: f.lon, count: f.count, parent: f.parent, row: 0).digest()
    }

    /// A first session that served `box` at `zoom`: what its page holds.
    func servedPage(_ box: BBox, zoom: Double) throws -> [FeatureID: WireFeature] {
        var h = Harness()
        _ = try h.opened()
        try h.turn([h.viewport(box, zoom: zoom)])
        try h.settle()
        return h.page
    }

    func held(_ page: [FeatureID: WireFeature], version: UInt64 = 0) -> ClientMessage {
        .held(HeldMessage(version: version, features: page.values.map { HeldFeature(id: $0.id, digest: digest($0)) }))
    }

    @Test("the digest is the one the page computes in JavaScript (featureDigest in web/pinwheel/client.js)")
    func digestMatchesThePage() {
        // Values printed by the page's featureDigest for the same count, lat and lon.
        let cases: [(UInt32, Double, Double, UInt32)] = [
            (12, 48.85, 2.35, 3_684_133_219), (1, -33.8688, 151.2093, 740_349_252),
            (144_600, -89.99999, -179.99999, 552_372_775), (2, 0, 0, 3_363_724_877),
        ]
        for (count, lat, lon, expected) in cases {
            #expect(Feature(id: 1, lat: lat, lon: lon, count: count, parent: nil, row: -1).digest() == expected)
        }
    }

    @Test("a page that holds exactly its view gets only an empty done batch after a reconnect")
    func unchangedViewSendsNothing() throws {
        let page = try servedPage(Self.europe, zoom: 6)
        #expect(page.count > 30)
        var h = Harness()
        h.page = page
        _ = try h.opened()
        try h.turn([held(page), h.viewport(Self.europe, zoom: 6)])
        try h.settle()
        #expect(h.page == page)
        #expect(h.batches.allSatisfy { $0.add.isEmpty && $0.update.isEmpty && $0.remove.isEmpty })
        #expect(h.batches.last?.done == true)
    }

    @Test("held features in several messages add up, and a moved view gets exactly the difference")
    func movedViewGetsTheDifference() throws {
        let page = try servedPage(Self.europe, zoom: 6)
        var h = Harness()
        h.page = page
        _ = try h.opened()
        let entries = Array(page.values)
        let half = entries.count / 2
        let moved = BBox(west: 0, south: 42, east: 20, north: 52)
        try h.turn([
            .held(
                HeldMessage(version: 0, features: entries[..<half].map { HeldFeature(id: $0.id, digest: digest($0)) })),
            .held(
                HeldMessage(version: 0, features: entries[half...].map { HeldFeature(id: $0.id, digest: digest($0)) })),
            h.viewport(moved, zoom: 6),
        ])
        try h.settle()
        let expected = h.expected(moved, zoom: 6)
        #expect(Set(h.page.keys) == expected)
        let added = h.batches.reduce(0) { $0 + $1.add.count }
        #expect(added == expected.subtracting(page.keys).count)
    }

    @Test("a held feature whose digest differs is sent again as an update, an unknown id removed")
    func staleHeldFeaturesAreReplaced() throws {
        var page = try servedPage(Self.europe, zoom: 6)
        let cluster = try #require(page.values.first { $0.count > 1 })
        var stale = cluster
        stale.count += 1
        page[cluster.id] = stale
        let ghost = WireFeature(id: 999_999_999_999, lat: 47, lon: 5, count: 3)
        page[ghost.id] = ghost
        var h = Harness()
        h.page = page
        _ = try h.opened()
        try h.turn([held(page), h.viewport(Self.europe, zoom: 6)])
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 6))
        #expect(h.page[cluster.id]?.count == cluster.count)
        #expect(h.batches.flatMap(\.update).map(\.id) == [cluster.id])
        #expect(h.batches.flatMap(\.remove) == [ghost.id])
        #expect(h.batches.allSatisfy { $0.add.isEmpty })
    }

    @Test("held after the session's first viewport is refused with an error and changes nothing")
    func heldAfterTheFirstViewportIsAnError() throws {
        var h = Harness()
        _ = try h.opened()
        try h.turn([h.viewport(Self.europe, zoom: 6)])
        try h.settle()
        let before = h.page
        let answer = try h.turn([held(before)])
        guard case .error(let e) = answer.first else {
            Issue.record("no error: \(answer)")
            return
        }
        #expect(e.code == .invalidField && e.field == "type")
        #expect(h.page == before)
    }

    /// A page on 256-px tiles that has been served Europe at its zoom 6.
    static func europeOn256PixelTiles() throws -> Harness {
        var h = Harness()
        _ = try h.opened()
        h.seq += 1
        try h.turn([
            .viewport(ViewportMessage(seq: h.seq, bbox: europe, zoom: 6, width: 3840, height: 2160, tileSize: 256))
        ])
        try h.settle()
        return h
    }

    @Test("a page with 256-px tiles at zoom z is served what a 512-px page gets at z - 1")
    func tileSizeShiftsTheZoom() throws {
        let h = try Self.europeOn256PixelTiles()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 5))
        #expect(Set(h.page.keys) != h.expected(Self.europe, zoom: 6))
    }

    @Test("an expansion zoom is answered in the page's own zoom levels")
    func expansionZoomFollowsTileSize() throws {
        var h = try Self.europeOn256PixelTiles()
        let cluster = try #require(h.page.values.first { $0.count > 1 })
        guard
            case .zoom(let indexZoom) = SessionMachineTests.clusterers[.hierarchical]!.expansion(
                of: cluster.id, zoom: 5)
        else {
            Issue.record("not a zoom expansion")
            return
        }
        let answer = try h.turn([.expand(id: cluster.id)])
        guard case .expansion(let e) = answer.first, case .zoom(let z) = e.result else {
            Issue.record("no zoom expansion: \(answer)")
            return
        }
        #expect(z == indexZoom + 1)
    }

    @Test("tileSize is optional, decodes when a power of two and is refused otherwise, naming the field")
    func tileSizeField() throws {
        let base = #"{"type":"viewport","seq":1,"bbox":[-0.5,51.3,0.3,51.7],"zoom":11.4,"width":1280,"height":800"#
        guard case .viewport(let plain) = try ClientMessage.decode(base + "}") else {
            Issue.record("not a viewport")
            return
        }
        #expect(plain.tileSize == 512 && plain.indexZoom == 11.4)
        guard case .viewport(let leaflet) = try ClientMessage.decode(base + #","tileSize":256}"#) else {
            Issue.record("not a viewport")
            return
        }
        #expect(leaflet.tileSize == 256 && leaflet.indexZoom == 10.4)
        for bad in ["300", "0", "8192", "\"256\""] {
            do {
                _ = try ClientMessage.decode(base + #","tileSize":\#(bad)}"#)
                Issue.record("tileSize \(bad) was accepted")
            } catch {
                #expect(error.code == .invalidField && error.field == "tileSize")
            }
        }
    }

    @Test("held decodes pairs of id and digest, refuses anything else naming features, and round-trips")
    func heldField() throws {
        let text = #"{"type":"held","version":3,"features":[[4294967396,123],[17,4294967295]]}"#
        let message = HeldMessage(
            version: 3,
            features: [HeldFeature(id: 4_294_967_396, digest: 123), HeldFeature(id: 17, digest: 4_294_967_295)])
        #expect(try ClientMessage.decode(text) == .held(message))
        #expect(try ClientMessage.decode(ClientMessage.held(message).json) == .held(message))
        for bad in ["[[1]]", "[[1,2,3]]", "[[1,4294967296]]", "[7]", "[[-1,2]]"] {
            do {
                _ = try ClientMessage.decode(#"{"type":"held","version":0,"features":\#(bad)}"#)
                Issue.record("features \(bad) was accepted")
            } catch {
                #expect(error.code == .invalidField && error.field == "features")
            }
        }
    }
}
