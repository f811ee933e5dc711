import Foundation
import PinwheelCore

/// A seeded simulated person touring a map: one call to `next()` per viewport tick.
///
/// Gestures last a few ticks, as a browser reports a drag or an animated zoom while it moves:
/// drags of 100–600 pixels, zoom steps of one level in or out, and jumps to a city inside the
/// dataset's bounds. Between gestures the person sometimes pauses for a tick or two. Equal seeds
/// give equal tours.
public struct Tour: Sendable {
    /// Zoom range the tourist stays within.
    public static let zoomRange = 2.0...16.0

    public let trace: TourTrace
    public let width: Int
    public let height: Int
    private var random: SplitMix64
    private let cities: [Coordinate]
    // Camera centre in Mercator units and zoom.
    private var x: Double
    private var y: Double
    private var zoom: Double
    private var gesture = Gesture.pause(ticks: 0)
    /// Share of the ticks that send a viewport, on average (1: pauses only as a person glances).
    private let sendShare: Double
    private var ticks = 0
    private var sends = 0

    private enum Gesture: Sendable {
        /// Moves the centre by (dx, dy) pixels per tick.
        case drag(dx: Double, dy: Double, ticks: Int)
        /// Changes the zoom by `step` per tick, landing exactly on `target`.
        case zoom(step: Double, target: Double, ticks: Int)
        /// Sends nothing.
        case pause(ticks: Int)

        var isOver: Bool {
            switch self {
            case .drag(_, _, let ticks), .zoom(_, _, let ticks), .pause(let ticks): ticks <= 0
            }
        }
    }

    /// - Parameters:
    ///   - trace: what kind of movement.
    ///   - seed: any value; equal seeds give equal tours.
    ///   - bounds: the dataset's bounds from `hello`; tours start and jump to cities inside them.
    ///   - width: map width in pixels.
    ///   - height: map height in pixels.
    ///   - sendShare: below 1, the tourist idles between gestures (0.5–1.5 times the time that keeps
    ///     its views at this share of the ticks), as a person looks at the map between drags.
    public init(
        trace: TourTrace, seed: UInt64, bounds: BBox, width: Int = 1280, height: Int = 800, sendShare: Double = 1
    ) {
        self.trace = trace
        self.sendShare = min(1, max(sendShare, 1e-3))
        self.width = width
        self.height = height
        random = SplitMix64(seed: seed)
        cities = TourCities.within(bounds)
        x = 0.5
        y = 0.5
        zoom = 10
        jumpToCity()
    }

    /// The viewport for this tick, or nil while the person pauses.
    public mutating func next() -> TourViewport? {
        ticks += 1
        if gesture.isOver {
            startGesture()
        }
        switch gesture {
        case .drag(let dx, let dy, let ticks):
            let worldPixels = 256 * pow(2, zoom)
            x = wrapUnit(x + dx / worldPixels)
            y = clampY(y + dy / worldPixels)
            gesture = .drag(dx: dx, dy: dy, ticks: ticks - 1)
        case .zoom(let step, let target, let ticks):
            zoom = ticks == 1 ? target : zoom + step
            gesture = .zoom(step: step, target: target, ticks: ticks - 1)
        case .pause(let ticks):
            gesture = .pause(ticks: ticks - 1)
            return nil
        }
        sends += 1
        return current
    }

    /// Where the camera is now.
    public var current: TourViewport {
        TourViewport(x: x, y: y, zoom: zoom, width: width, height: height)
    }

    private mutating func startGesture() {
        // Idle until the sends are back at their share of the ticks, give or take half.
        if sendShare < 1, case .pause = gesture {
        } else if sendShare < 1 {
            let behind = Double(sends) / sendShare - Double(ticks)
            if behind >= 1 {
                gesture = .pause(ticks: max(1, Int((behind * uniform(0.5, 1.5)).rounded())))
                return
            }
        }
        // A short look around after one gesture in three.
        if case .pause = gesture {
        } else if uniform(0, 1) < 1.0 / 3 {
            gesture = .pause(ticks: 1 + Int(random.next() % 2))
            return
        }
        switch trace {
        case .pan: startDrag()
        case .zoom: startZoom()
        case .jump: startJump()
        case .mixed:
            let roll = uniform(0, 1)
            if roll < 0.6 {
                startDrag()
            } else if roll < 0.92 {
                startZoom()
            } else {
                startJump()
            }
        }
    }

    private mutating func startDrag() {
        let distance = uniform(100, 600)
        let angle = uniform(0, 2 * .pi)
        let ticks = 3 + Int(random.next() % 6)
        gesture = .drag(
            dx: distance * cos(angle) / Double(ticks), dy: distance * sin(angle) / Double(ticks), ticks: ticks)
    }

    private mutating func startZoom() {
        // Mostly in and out around the middle; at the ends of the range, back towards it.
        var direction: Double = random.next() % 2 == 0 ? 1 : -1
        if zoom >= Self.zoomRange.upperBound - 1 { direction = -1 }
        if zoom <= Self.zoomRange.lowerBound + 1 { direction = 1 }
        let ticks = 2 + Int(random.next() % 3)
        let target = min(max(zoom + direction, Self.zoomRange.lowerBound), Self.zoomRange.upperBound)
        gesture = .zoom(step: (target - zoom) / Double(ticks), target: target, ticks: ticks)
    }

    private mutating func startJump() {
        jumpToCity()
        // The jump itself is one viewport: a zero-length drag.
        gesture = .drag(dx: 0, dy: 0, ticks: 1)
    }

    private mutating func jumpToCity() {
        let city = cities[Int(random.next() % UInt64(cities.count))]
        x = Mercator.x(lon: city.lon)
        y = Mercator.y(lat: city.lat)
        zoom = uniform(8, 13).rounded()
    }

    private mutating func uniform(_ low: Double, _ high: Double) -> Double {
        low + (high - low) * random.nextUnit()
    }

    private func wrapUnit(_ value: Double) -> Double {
        let r = value.truncatingRemainder(dividingBy: 1)
        return r < 0 ? r + 1 : r
    }

    private func clampY(_ value: Double) -> Double {
        min(max(value, 0), 1)
    }
}
