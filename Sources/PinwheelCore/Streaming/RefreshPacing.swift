/// How long the index thread waits between two refreshes while data changes.
///
/// A refresh makes every session whose view the changes reach compute its view again, on the cores
/// that answer viewers' viewports. A viewer waits on its viewport, while a change has half a second
/// to reach the viewers. So the interval is the configured one while viewports are answered
/// promptly, and stretches, up to ``stretchLimit`` times, while more than ``slowShareToStretch`` of
/// first batches were slow (past the server's threshold, `ServerConfiguration.slowFirstBatch`):
/// fewer refreshes, each coalescing more changes per feature, leave the cores to the viewports. It
/// comes back a fiftieth at a time once fewer than ``slowShareToRelax`` are slow, and holds in
/// between, so it does not swing with every window.
public struct RefreshPacing: Sendable {
    /// The configured interval: the shortest.
    public let shortest: Duration
    /// The longest the interval stretches to.
    public var longest: Duration { shortest * Self.stretchLimit }
    /// The interval to wait now.
    public private(set) var interval: Duration

    public static let stretchLimit = 3
    public static let slowShareToStretch = 0.01
    public static let slowShareToRelax = 0.0025
    /// Fewer slow first batches than this in a window never stretch the interval: a few viewports
    /// on a quiet server are not a trend.
    public static let fewestSlowToStretch = 3

    /// Pacing at `shortest` to start with.
    public init(shortest: Duration) {
        self.shortest = shortest
        interval = shortest
    }

    /// Takes in the first batches sent since the last refresh.
    /// - Parameters:
    ///   - answered: viewports whose first batch went out in that time.
    ///   - slow: how many of them were slow.
    public mutating func observe(answered: Int, slow: Int) {
        let share = answered > 0 ? Double(slow) / Double(answered) : 0
        if slow >= Self.fewestSlowToStretch && share > Self.slowShareToStretch {
            interval = min(longest, interval * 3 / 2)
        } else if share < Self.slowShareToRelax {
            interval = max(shortest, interval * 49 / 50)
        }
    }
}
