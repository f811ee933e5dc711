/// The kind of movement a simulated tourist makes.
public enum TourTrace: String, CaseIterable, Sendable, Codable {
    /// Drags of 100–600 pixels in random directions.
    case pan
    /// Zoom steps in and out around where the tourist stands.
    case zoom
    /// Mostly drags, some zoom steps, now and then a jump to another city.
    case mixed
    /// A jump to another city each gesture.
    case jump
}
