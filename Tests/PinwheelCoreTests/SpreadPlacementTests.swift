import Foundation
import Testing

@testable import PinwheelCore

@Suite("Spread placement")
struct SpreadPlacementTests {
    /// Great-circle distance and initial bearing from a to b, computed without the destination formula.
    static func distanceAndBearing(from a: Coordinate, to b: Coordinate) -> (metres: Double, bearing: Double) {
        let r = Double.pi / 180
        let (p1, p2, dl) = (a.lat * r, b.lat * r, (b.lon - a.lon) * r)
        let h = pow(sin((p2 - p1) / 2), 2) + cos(p1) * cos(p2) * pow(sin(dl / 2), 2)
        let metres = 2 * Sphere.radius * asin(h.squareRoot())
        let y = sin(dl) * cos(p2)
        let x = cos(p1) * sin(p2) - sin(p1) * cos(p2) * cos(dl)
        let bearing = atan2(y, x)
        return (metres, bearing < 0 ? bearing + 2 * .pi : bearing)
    }

    /// Pixel position at a zoom, x wrapped by the caller.
    static func pixels(_ c: Coordinate, zoom: Double, tileSize: Double = 256) -> (x: Double, y: Double) {
        let world = tileSize * pow(2, zoom)
        return (Mercator.x(lon: c.lon) * world, Mercator.y(lat: c.lat) * world)
    }

    /// Smallest pairwise pixel distance, the x axis wrapping around the world.
    static func minimumPixelDistance(_ points: [Coordinate], zoom: Double) -> Double {
        let world = 256 * pow(2, zoom)
        let px = points.map { pixels($0, zoom: zoom) }
        var best = Double.infinity
        px.withUnsafeBufferPointer { p in
            for i in 0..<p.count {
                for j in (i + 1)..<p.count {
                    var dx = abs(p[i].x - p[j].x)
                    dx = min(dx, world - dx)
                    let dy = p[i].y - p[j].y
                    best = min(best, dx * dx + dy * dy)
                }
            }
        }
        return best.squareRoot()
    }

    @Test("seed mode puts member i at bearing 2πi/n and 3n/2 metres, checked by independent formulas")
    func seedSpread() {
        let centers = [
            Coordinate(lat: 48.8566, lon: 2.3522), Coordinate(lat: -33.9, lon: 151.2),
            Coordinate(lat: 0, lon: 179.9999), Coordinate(lat: 70.5, lon: -20),
        ]
        let placement = SpreadPlacement(mode: .seed)
        var out: [Coordinate] = []
        for center in centers {
            for n in [2, 3, 7, 8, 9, 50, 5000] {
                placement.place(around: center, count: n, zoom: 3.7, into: &out)
                #expect(out.count == n)
                for i in 0..<n {
                    let (metres, bearing) = Self.distanceAndBearing(from: center, to: out[i])
                    #expect(abs(metres - 1.5 * Double(n)) < 1e-6 * Double(n))
                    var diff = abs(bearing - 2 * .pi * Double(i) / Double(n))
                    diff = min(diff, 2 * .pi - diff)
                    #expect(diff < 1e-6, "member \(i) of \(n)")
                }
            }
        }
    }

    @Test("seed mode does not depend on the zoom")
    func seedIgnoresZoom() {
        let placement = SpreadPlacement(mode: .seed)
        var a: [Coordinate] = []
        var b: [Coordinate] = []
        placement.place(around: Coordinate(lat: 10, lon: 20), count: 12, zoom: 2, into: &a)
        placement.place(around: Coordinate(lat: 10, lon: 20), count: 12, zoom: 17, into: &b)
        #expect(a == b)
    }

    @Test("adaptive circles of 2 to 8 pins never overlap at their zoom")
    func adaptiveCircles() {
        let placement = SpreadPlacement()
        var out: [Coordinate] = []
        for zoom in [3.0, 9.5, 16, 21] {
            for n in 2...8 {
                let center = Coordinate(lat: 51.5, lon: -0.12)
                placement.place(around: center, count: n, zoom: zoom, into: &out)
                let closest = Self.minimumPixelDistance(out + [center], zoom: zoom)
                #expect(closest >= placement.spacing * (1 - 1e-6), "n \(n) zoom \(zoom): \(closest)")
            }
        }
    }

    @Test("adaptive spirals of 9 to 5,000 pins never overlap at their zoom")
    func adaptiveSpirals() {
        let placement = SpreadPlacement()
        var out: [Coordinate] = []
        let center = Coordinate(lat: 35.68, lon: 139.76)
        // The spiral does not depend on n, so the 5,000-pin layout holds every smaller one.
        for n in [9, 10, 17, 64, 257] {
            placement.place(around: center, count: n, zoom: 15, into: &out)
            #expect(Self.minimumPixelDistance(out, zoom: 15) >= placement.spacing * (1 - 1e-6))
        }
        placement.place(around: center, count: 5000, zoom: 12, into: &out)
        #expect(Self.minimumPixelDistance(out, zoom: 12) >= placement.spacing * (1 - 1e-6))
        var small: [Coordinate] = []
        placement.place(around: center, count: 300, zoom: 12, into: &small)
        #expect(Array(out.prefix(300)) == small)
    }

    @Test("adaptive spreads stay close: 8 pins within 1.5 spacings, 5,000 within 45 spacings")
    func adaptiveCompact() {
        let placement = SpreadPlacement()
        #expect(placement.pixelRadius(count: 2) == placement.spacing)
        #expect(placement.pixelRadius(count: 8) <= 1.5 * placement.spacing)
        #expect(placement.pixelRadius(count: 50) <= 5 * placement.spacing)
        #expect(placement.pixelRadius(count: 5000) <= 45 * placement.spacing)
        var out: [Coordinate] = []
        let center = Coordinate(lat: -12, lon: 45)
        placement.place(around: center, count: 50, zoom: 14, into: &out)
        let c = Self.pixels(center, zoom: 14)
        for p in out.map({ Self.pixels($0, zoom: 14) }) {
            let d = ((p.x - c.x) * (p.x - c.x) + (p.y - c.y) * (p.y - c.y)).squareRoot()
            #expect(d <= placement.pixelRadius(count: 50) + 1e-6)
        }
    }

    @Test("adaptive spreads near a pole and across the antimeridian still never overlap")
    func adaptiveEdges() {
        let placement = SpreadPlacement()
        var out: [Coordinate] = []
        for center in [Coordinate(lat: 89.9, lon: 10), Coordinate(lat: -85.05, lon: 0), Coordinate(lat: 1, lon: 180)] {
            for n in [2, 5, 300] {
                placement.place(around: center, count: n, zoom: 6, into: &out)
                #expect(out.allSatisfy { abs($0.lon) <= 180 && abs($0.lat) <= Mercator.maxLatitude + 1e-9 })
                #expect(Self.minimumPixelDistance(out, zoom: 6) >= placement.spacing * (1 - 1e-6))
            }
        }
    }

    @Test("a placement without prepared positions walks the same spiral")
    func preparedMatchesWalk() {
        let prepared = SpreadPlacement(preparedCount: 400)
        let walked = SpreadPlacement(preparedCount: 0)
        var a: [Coordinate] = []
        var b: [Coordinate] = []
        prepared.place(around: Coordinate(lat: 3, lon: 4), count: 350, zoom: 13, into: &a)
        walked.place(around: Coordinate(lat: 3, lon: 4), count: 350, zoom: 13, into: &b)
        #expect(a == b)
        #expect(prepared.pixelOffset(member: 349, count: 350) == walked.pixelOffset(member: 349, count: 350))
    }
}
