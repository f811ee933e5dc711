import Foundation

/// Where the members of a same-coordinate group are drawn. Member `i` of `n` is the group's i-th member
/// in dataset-id order; every member keeps its true coordinate as the anchor of a leg.
///
/// In ``SpreadMode/adaptive`` mode the layout is made in screen pixels at the given zoom (web mercator,
/// `tileSize`-pixel tiles, so one pixel is ``Mercator/metresPerPixel(lat:zoom:tileSize:)`` metres on
/// the ground): up to ``maxCircleCount`` members sit on a circle whose neighbouring pins are `spacing`
/// pixels apart; larger groups follow an Archimedean spiral walked in steps that keep every pair of
/// pins at least `spacing` pixels apart. The spiral does not depend on `n`, so a group of 5,000 is a
/// group of 4,999 plus one pin.
public struct SpreadPlacement: Sendable {
    /// Groups up to this size are laid on a circle, larger ones on a spiral.
    public static let maxCircleCount = 8
    /// Default pixels between neighbouring pins: a little more than a 25-pixel marker icon.
    public static let defaultSpacing = 28.0

    /// Circle or spiral, see ``SpreadMode``.
    public let mode: SpreadMode
    /// Minimum pixels between any two pins of a group (adaptive mode).
    public let spacing: Double
    /// Pixels per tile edge of the map that draws the pins (Leaflet: 256).
    public let tileSize: Double
    /// Spiral offsets in pixels for the first members, x (east) at 2i and y (south) at 2i+1.
    private let spiral: [Double]

    /// - Parameters:
    ///   - mode: the layout; adaptive by default.
    ///   - spacing: minimum pixels between pins (adaptive mode); must be positive.
    ///   - tileSize: pixels per tile edge.
    ///   - preparedCount: spiral positions computed up front, so placing a group of up to this many
    ///     members costs O(n) without trigonometry per step.
    public init(
        mode: SpreadMode = .adaptive, spacing: Double = defaultSpacing, tileSize: Double = 256,
        preparedCount: Int = 256
    ) {
        precondition(spacing > 0 && tileSize > 0, "spacing and tileSize must be positive")
        self.mode = mode
        self.spacing = spacing
        self.tileSize = tileSize
        var walk = SpiralWalk(spacing: spacing)
        var table = [Double]()
        table.reserveCapacity(2 * max(0, preparedCount))
        for _ in 0..<max(0, preparedCount) {
            let (x, y) = walk.next()
            table.append(x)
            table.append(y)
        }
        spiral = table
    }

    /// Pixel offset of member `i` of `n` from the shared point in adaptive mode, x east, y south.
    /// Spiral members beyond the prepared table are walked from the start (O(i)); ``place`` walks once.
    public func pixelOffset(member i: Int, count n: Int) -> (x: Double, y: Double) {
        precondition(i >= 0 && i < n, "member index out of range")
        if n <= SpreadPlacement.maxCircleCount {
            let r = circleRadius(count: n)
            let angle = 2 * Double.pi * Double(i) / Double(n)
            return (r * sin(angle), -r * cos(angle))
        }
        if 2 * i + 1 < spiral.count { return (spiral[2 * i], spiral[2 * i + 1]) }
        var walk = SpiralWalk(spacing: spacing)
        for _ in 0..<i { _ = walk.next() }
        return walk.next()
    }

    /// The largest distance in pixels of a pin from the shared point in adaptive mode.
    public func pixelRadius(count n: Int) -> Double {
        guard n > 0 else { return 0 }
        if n <= SpreadPlacement.maxCircleCount { return circleRadius(count: n) }
        let (x, y) = pixelOffset(member: n - 1, count: n)
        return (x * x + y * y).squareRoot()
    }

    /// Places all members of a group.
    /// - Parameters:
    ///   - center: the contested coordinate.
    ///   - n: members in the group.
    ///   - zoom: the map zoom the layout is for (adaptive mode; seed mode ignores it).
    ///   - out: receives `n` positions, member i at index i; cleared first, capacity kept.
    /// - Complexity: O(n).
    public func place(around center: Coordinate, count n: Int, zoom: Double, into out: inout [Coordinate]) {
        out.removeAll(keepingCapacity: true)
        guard n > 0 else { return }
        switch mode {
        case .seed:
            for i in 0..<n { out.append(SpreadPlacement.seedPosition(member: i, count: n, around: center)) }
        case .adaptive:
            let frame = PixelFrame(center: center, radius: pixelRadius(count: n), zoom: zoom, tileSize: tileSize)
            if n <= SpreadPlacement.maxCircleCount || 2 * n <= spiral.count {
                for i in 0..<n {
                    let (dx, dy) = pixelOffset(member: i, count: n)
                    out.append(frame.coordinate(dx: dx, dy: dy))
                }
            } else {
                var walk = SpiralWalk(spacing: spacing)
                for _ in 0..<n {
                    let (dx, dy) = walk.next()
                    out.append(frame.coordinate(dx: dx, dy: dy))
                }
            }
        }
    }

    /// The published design's position of member `i` of `n`: bearing 2π·i/n, distance 3·n/2 metres.
    public static func seedPosition(member i: Int, count n: Int, around center: Coordinate) -> Coordinate {
        Sphere.destination(
            from: center, bearing: 2 * Double.pi * Double(i) / Double(n), distance: 3 * Double(n) / 2)
    }

    /// Radius of the circle layout: neighbours `spacing` apart (chord 2r·sin(π/n)), never closer to
    /// the shared point than `spacing`, so a pair does not sit on top of its own leg.
    private func circleRadius(count n: Int) -> Double {
        n < 2 ? spacing : max(spacing, spacing / (2 * sin(Double.pi / Double(n))))
    }
}

/// The pixel grid of one zoom around a spread's centre, which is nudged away from the poles so the
/// whole layout fits on the map.
private struct PixelFrame {
    let worldPixels: Double
    let cx: Double
    let cy: Double

    init(center: Coordinate, radius: Double, zoom: Double, tileSize: Double) {
        worldPixels = tileSize * pow(2, zoom)
        cx = Mercator.x(lon: center.lon) * worldPixels
        let y = Mercator.y(lat: center.lat) * worldPixels
        // Mercator clamps latitude, so a spread crossing the map's top or bottom edge would collapse.
        cy = 2 * radius < worldPixels ? min(max(y, radius), worldPixels - radius) : worldPixels / 2
    }

    func coordinate(dx: Double, dy: Double) -> Coordinate {
        let x = (cx + dx) / worldPixels
        let y = (cy + dy) / worldPixels
        return Coordinate(lat: Mercator.lat(y: y), lon: BBox.wrap(Mercator.lon(x: x)))
    }
}

/// Walks the Archimedean spiral r = a + bθ in steps whose chord is exactly `spacing` at the inner radius.
/// With a = spacing and turns 1.1·spacing apart, every pair of pins is at least `spacing` apart:
/// consecutive pins by the chord, pins on one turn because their angle only grows, pins a turn apart
/// because the turn gap plus the angular gap stays above `spacing`.
private struct SpiralWalk {
    let spacing: Double
    let a: Double
    let b: Double
    var theta = 0.0

    init(spacing: Double) {
        self.spacing = spacing
        a = spacing
        b = 1.1 * spacing / (2 * Double.pi)
    }

    mutating func next() -> (x: Double, y: Double) {
        let r = a + b * theta
        let point = (r * sin(theta), -r * cos(theta))
        theta += 2 * asin(min(1, spacing / (2 * r)))
        return point
    }
}
