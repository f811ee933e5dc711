import Foundation
import Testing

@testable import PinwheelCore

@Suite("Geo")
struct GeoTests {
    @Test("mercator round-trips longitude and latitude")
    func mercatorRoundTrip() {
        for lat in stride(from: -85.0, through: 85.0, by: 5) {
            #expect(abs(Mercator.lat(y: Mercator.y(lat: lat)) - lat) < 1e-9)
        }
        for lon in stride(from: -180.0, through: 180.0, by: 15) {
            #expect(abs(Mercator.lon(x: Mercator.x(lon: lon)) - lon) < 1e-9)
        }
    }

    @Test("latitudes beyond the mercator limit clamp to the square's edges")
    func poleClamp() {
        #expect(Mercator.y(lat: 90) == 0)
        #expect(Mercator.y(lat: -90) == 1)
        #expect(Mercator.y(lat: 0) == 0.5)
    }

    @Test("metres per pixel at the equator, zoom 0, 256-pixel tiles is the published 156543 m")
    func metresPerPixel() {
        #expect(abs(Mercator.metresPerPixel(lat: 0, zoom: 0) - 156_543.03) < 0.01)
        #expect(abs(Mercator.metresPerPixel(lat: 60, zoom: 1) - 156_543.03 / 4) < 0.01)
    }

    @Test("a box crossing the antimeridian splits into two mercator rectangles")
    func antimeridianRects() {
        let box = BBox(west: 170, south: -10, east: -170, north: 10)
        #expect(box.crossesAntimeridian)
        #expect(box.contains(lat: 0, lon: 179))
        #expect(box.contains(lat: 0, lon: -179))
        #expect(!box.contains(lat: 0, lon: 0))
        var rects: [MercatorRect] = []
        #expect(box.mercatorRects(into: &rects) == 2)
        #expect(rects[0].maxX == 1 && rects[1].minX == 0)
    }

    @Test("a bbox wider than the world normalises to the whole world")
    func normalise() {
        let box = BBox.normalized(west: -400, south: 95, east: 400, north: -95)
        #expect(box == BBox(west: -180, south: -90, east: 180, north: 90))
        let wrapped = BBox.normalized(west: 190, south: 0, east: 200, north: 1)
        #expect(wrapped.west == -170 && wrapped.east == -160)
        let crossing = BBox.normalized(west: 170, south: 0, east: 190, north: 1)
        #expect(crossing.crossesAntimeridian && crossing.east == -170)
    }

    @Test("destination point matches bearings and distances computed independently")
    func destination() {
        let start = Coordinate(lat: 0, lon: 0)
        // 1 degree of arc along the equator is radius * pi / 180 metres.
        let oneDegree = Sphere.radius * .pi / 180
        let east = Sphere.destination(from: start, bearing: .pi / 2, distance: oneDegree)
        #expect(abs(east.lat) < 1e-9 && abs(east.lon - 1) < 1e-9)
        let north = Sphere.destination(from: start, bearing: 0, distance: oneDegree)
        #expect(abs(north.lat - 1) < 1e-9 && abs(north.lon) < 1e-9)
        let across = Sphere.destination(from: Coordinate(lat: 0, lon: 179.5), bearing: .pi / 2, distance: oneDegree)
        #expect(abs(across.lon - -179.5) < 1e-9)
    }
}
