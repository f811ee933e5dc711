/// A rate limit in units per second with a burst of one second's worth: a request may take the bucket
/// below zero when it finds it full (so a request larger than a second's worth passes, then waits out
/// its debt), otherwise it must find enough units.
public struct TokenBucket<Clock: PinwheelClock>: Sendable {
    public let clock: Clock
    /// Units per second.
    public let rate: Double
    private var units: Double
    private var at: Clock.Instant

    public init(clock: Clock, rate: Double) {
        self.clock = clock
        self.rate = rate
        units = rate
        at = clock.now
    }

    /// Takes `cost` units, or says how long until they are there.
    /// - Returns: nil when taken, else the wait before trying again.
    public mutating func take(_ cost: Int) -> Duration? {
        let now = clock.now
        units = min(rate, units + rate * at.duration(to: now).milliseconds / 1000)
        at = now
        let cost = Double(cost)
        if units >= cost || units >= rate {
            units -= cost
            return nil
        }
        return .milliseconds(fractional: ((min(cost, rate) - units) / rate) * 1000)
    }
}
