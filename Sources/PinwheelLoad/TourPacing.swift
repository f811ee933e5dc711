/// When a simulated tourist sends its viewports.
public enum TourPacing: String, CaseIterable, Sendable, Codable {
    /// One every tick at `--viewport-hz`, pausing only for a glance between some gestures.
    case steady
    /// As people do: each gesture's views at `--gesture-hz`, then idle, `--viewport-hz` on average.
    case people
}
