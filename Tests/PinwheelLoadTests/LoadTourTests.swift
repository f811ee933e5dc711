import Foundation
import PinwheelCore
import Testing

@testable import PinwheelLoad
@testable import PinwheelServer

@Suite("Tour: seeded simulated people")
struct LoadTourTests {
    static let world = BBox(west: -180, south: -60, east: 180, north: 80)

    /// Runs a tour for `ticks` ticks: the viewports sent (nil for pauses) and the starting view.
    static func run(_ trace: TourTrace, seed: UInt64, ticks: Int, bounds: BBox = world) -> (
        TourViewport, [TourViewport?]
    ) {
        var tour = Tour(trace: trace, seed: seed, bounds: bounds)
        let start = tour.current
        return (start, (0..<ticks).map { _ in tour.next() })
    }

    /// Centre of a viewport in world pixels at its zoom (x wrap-aware via the caller).
    static func centre(_ v: TourViewport) -> (x: Double, y: Double) {
        let world = 256 * pow(2, v.zoom)
        var width = v.bbox.east - v.bbox.west
        if width < 0 { width += 360 }
        let x = Mercator.x(lon: v.bbox.west) + width / 720
        let y = (Mercator.y(lat: v.bbox.north) + Mercator.y(lat: v.bbox.south)) / 2
        return (x * world, y * world)
    }

    @Test("people pacing: a tenth of the ticks send, in gestures of several views with idle gaps between")
    func peoplePacing() {
        for trace in TourTrace.allCases {
            var tour = Tour(trace: trace, seed: 7, bounds: Self.world, sendShare: 0.1)
            let sent = (0..<20_000).map { _ in tour.next() != nil }
            let share = Double(sent.filter { $0 }.count) / Double(sent.count)
            #expect((0.08...0.12).contains(share), "\(trace): \(share)")
            // Runs of consecutive sends (gestures) and of silent ticks (a person looking).
            var runs: [(sending: Bool, length: Int)] = []
            for s in sent {
                if let last = runs.last, last.sending == s {
                    runs[runs.count - 1].length += 1
                } else {
                    runs.append((s, 1))
                }
            }
            let bursts = runs.filter(\.sending).map(\.length)
            let gaps = runs.filter { !$0.sending }.map(\.length)
            // A jump is one view; drags and zoom steps last several ticks.
            let meanBurst = Double(bursts.reduce(0, +)) / Double(bursts.count)
            #expect(trace == .jump || meanBurst >= 2, "\(trace): bursts \(bursts.prefix(20))")
            #expect(Double(gaps.reduce(0, +)) / Double(gaps.count) >= 5, "\(trace): gaps \(gaps.prefix(20))")
        }
    }

    @Test("equal seeds give equal tours and different seeds different ones")
    func seeded() {
        for trace in TourTrace.allCases {
            for seed in UInt64(1)...5 {
                let a = Self.run(trace, seed: seed, ticks: 300)
                let b = Self.run(trace, seed: seed, ticks: 300)
                let c = Self.run(trace, seed: seed + 100, ticks: 300)
                #expect(a.1 == b.1)
                #expect(a.0 == b.0)
                #expect(a.1 != c.1)
            }
        }
    }

    @Test("every viewport is valid for the protocol: finite, ordered latitudes, zoom in range, the map's size")
    func validViewports() {
        for trace in TourTrace.allCases {
            for seed in UInt64(1)...20 {
                for v in Self.run(trace, seed: seed, ticks: 400).1.compactMap({ $0 }) {
                    #expect(v.bbox.west >= -180 && v.bbox.west <= 180)
                    #expect(v.bbox.east >= -180 && v.bbox.east <= 180)
                    #expect(v.bbox.south >= -90 && v.bbox.south < v.bbox.north && v.bbox.north <= 90)
                    #expect(Tour.zoomRange.contains(v.zoom))
                    #expect(v.width == 1280 && v.height == 800)
                }
            }
        }
    }

    @Test("a pan tour drags 100 to 600 pixels per gesture at a constant zoom, with pauses in between")
    func dragLengths() {
        for seed in UInt64(1)...20 {
            let (start, ticks) = Self.run(.pan, seed: seed, ticks: 400)
            var last = Self.centre(start)
            var step: (Double, Double)?
            var gestureLength = 0.0
            var lengths: [Double] = []
            var pauses = 0
            for viewport in ticks {
                guard let viewport else {
                    pauses += 1
                    if step != nil { lengths.append(gestureLength) }
                    step = nil
                    continue
                }
                #expect(viewport.zoom == start.zoom)
                let world = 256 * pow(2, viewport.zoom)
                let now = Self.centre(viewport)
                var dx = now.x - last.x
                if dx > world / 2 { dx -= world }
                if dx < -world / 2 { dx += world }
                let move = (dx, now.y - last.y)
                if let s = step, abs(s.0 - move.0) < 1e-3, abs(s.1 - move.1) < 1e-3 {
                    gestureLength += hypot(move.0, move.1)
                } else {
                    if step != nil { lengths.append(gestureLength) }
                    step = move
                    gestureLength = hypot(move.0, move.1)
                }
                last = now
            }
            #expect(pauses > 0)
            #expect(lengths.count > 20)
            for length in lengths {
                #expect(length >= 100 - 1e-6 && length <= 600 + 1e-6, "drag of \(length) px, seed \(seed)")
            }
        }
    }

    @Test("a zoom tour steps one level in or out over a few ticks and keeps its centre")
    func zoomSteps() {
        let (start, ticks) = Self.run(.zoom, seed: 7, ticks: 300)
        var zooms = [start.zoom]
        for viewport in ticks.compactMap({ $0 }) {
            zooms.append(viewport.zoom)
            #expect(
                abs(Self.centre(viewport).x / pow(2, viewport.zoom) - Self.centre(start).x / pow(2, start.zoom)) < 1e-6)
        }
        let distinct = Set(zooms.map { ($0 * 1000).rounded() })
        #expect(distinct.count > 5)
        // Whole levels are reached again after each gesture.
        #expect(zooms.filter { $0 == $0.rounded() }.count > 20)
    }

    @Test("jumps land on cities inside the dataset's bounds")
    func jumpsStayInBounds() {
        let europe = BBox(west: -10, south: 35, east: 30, north: 60)
        let (_, ticks) = Self.run(.jump, seed: 3, ticks: 200, bounds: europe)
        let viewports = ticks.compactMap { $0 }
        #expect(viewports.count > 50)
        for v in viewports {
            #expect(europe.contains(lat: v.bbox.center.lat, lon: v.bbox.center.lon))
        }
        #expect(Set(viewports.map { $0.bbox }).count > 3)
    }

    @Test("bounds holding none of the cities get points spread inside them instead")
    func boundsWithoutCities() {
        let ocean = BBox(west: -150, south: -40, east: -120, north: -20)
        for c in TourCities.within(ocean) {
            #expect(ocean.contains(lat: c.lat, lon: c.lon))
        }
        #expect(TourCities.within(ocean).count == 9)
        let (start, _) = Self.run(.mixed, seed: 1, ticks: 1, bounds: ocean)
        #expect(ocean.contains(lat: start.bbox.center.lat, lon: start.bbox.center.lon))
    }

    @Test("a map wider than the world reports every longitude; one over the antimeridian has west > east")
    func viewportEdges() {
        let wide = TourViewport(x: 0.5, y: 0.5, zoom: 2, width: 1280, height: 800)
        #expect(wide.bbox.west == -180 && wide.bbox.east == 180)
        let pacific = TourViewport(x: 0.999, y: 0.5, zoom: 6, width: 1280, height: 800)
        #expect(pacific.bbox.west > pacific.bbox.east)
        #expect(pacific.bbox.crossesAntimeridian)
    }

    @Test("the viewport message decodes as the server reads it, with coordinates rounded to six decimals")
    func viewportMessage() throws {
        let v = TourViewport(x: 0.5, y: 0.5, zoom: 10.5, width: 1280, height: 800)
        guard case .viewport(let m) = try ClientMessage.decode(v.message(seq: 7).json) else {
            Issue.record("not a viewport")
            return
        }
        #expect(m.seq == 7 && m.zoom == 10.5 && m.width == 1280 && m.height == 800)
        #expect(m.bbox.west == (v.bbox.west * 1e6).rounded() / 1e6)
        #expect(m.bbox.north == (v.bbox.north * 1e6).rounded() / 1e6)
    }
}
