import PinwheelCore
import Testing

@testable import PinwheelLoad

@Suite("Staleness at still viewers")
struct StillStalenessTests {
    static let view = BBox(west: 0, south: 0, east: 1, north: 1)
    static let inside = Coordinate(lat: 0.5, lon: 0.5)
    static let outside = Coordinate(lat: 5, lon: 5)

    @Test(
        "only changes landing in or leaving the view count, each from its request's send to the first batch holding it")
    func changesInView() {
        let start = ContinuousClock.now
        let placed = [
            StillStaleness.Placed(before: nil, after: Self.inside),  // version 11: lands in view
            StillStaleness.Placed(before: nil, after: Self.outside),  // 12: elsewhere
            StillStaleness.Placed(before: Self.inside, after: Self.outside),  // 13: leaves the view
            StillStaleness.Placed(before: Self.inside, after: nil),  // 14: deleted in view
        ]
        let requests = [
            StillStaleness.Request(firstChange: 0, firstVersion: 11, count: 2, sentAt: start),
            StillStaleness.Request(firstChange: 2, firstVersion: 13, count: 2, sentAt: start + .milliseconds(100)),
        ]
        let viewer = StillStaleness.Viewer(
            bbox: Self.view, startVersion: 10,
            arrivals: [
                .init(from: 10, version: 12, at: start + .milliseconds(80)),
                .init(from: 12, version: 14, at: start + .milliseconds(400)),
            ])
        let figures = StillStaleness(
            placed: placed, requests: requests, viewers: [viewer], deliveredBy: start + .seconds(10))
        #expect(figures.staleness.totalCount == 3)
        #expect(figures.staleness.max / 1000 == 300, "13 and 14: sent at 100 ms, shown at 400 ms")
        #expect(figures.staleness.min / 1000 == 80)
        #expect(figures.longestGap == .milliseconds(300), "from the send at 100 ms, after the update at 80 ms")
        #expect(figures.undelivered == 0)
    }

    @Test(
        "a change no batch brought is undelivered unless sent too late, and changes before the viewer came are not counted"
    )
    func undelivered() {
        let start = ContinuousClock.now
        let placed = [StillStaleness.Placed](repeating: .init(before: nil, after: Self.inside), count: 3)
        let requests = [
            StillStaleness.Request(firstChange: 0, firstVersion: 5, count: 1, sentAt: start),
            StillStaleness.Request(firstChange: 1, firstVersion: 6, count: 1, sentAt: start + .seconds(1)),
            StillStaleness.Request(firstChange: 2, firstVersion: 7, count: 1, sentAt: start + .seconds(3)),
        ]
        let viewer = StillStaleness.Viewer(bbox: Self.view, startVersion: 5, arrivals: [])
        let figures = StillStaleness(
            placed: placed, requests: requests, viewers: [viewer], deliveredBy: start + .seconds(2))
        #expect(figures.staleness.totalCount == 0)
        #expect(figures.undelivered == 1, "6 never came; 5 was there before; 7 was sent after the cut")
    }

    @Test("still views alternate zoom 12 and zoom 5, each around a city")
    func views() {
        let near = StillStaleness.view(0, width: 1280, height: 800)
        let far = StillStaleness.view(1, width: 1280, height: 800)
        #expect(near.zoom == 12 && far.zoom == 5)
        let city = TourCities.all[0]
        #expect(near.bbox.contains(lat: city.lat, lon: city.lon) && far.bbox.contains(lat: city.lat, lon: city.lon))
        #expect(near.bbox.east - near.bbox.west < 1 && far.bbox.east - far.bbox.west > 20)
    }
}
