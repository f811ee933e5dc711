import Testing

@testable import PinwheelCore

@Suite("Served views at a publication of live data")
struct ServedViewTests {
    let paris = BBox(west: 2.2, south: 48.8, east: 2.5, north: 48.95)
    let options = ClusterOptions()

    /// The changes of one publication: a point moved from `from` to `to` (latitude, longitude).
    func footprint(_ from: (Double, Double), _ to: (Double, Double)) -> ChangeFootprint {
        var footprint = ChangeFootprint()
        footprint.add(x: Mercator.x(lon: from.1), y: Mercator.y(lat: from.0))
        footprint.add(x: Mercator.x(lon: to.1), y: Mercator.y(lat: to.0))
        return footprint
    }

    @Test("a view no change reaches is left out, and then holds at the new version")
    func untouched() {
        var view = ServedView(bbox: paris, zoom: 12, version: 7)
        let tokyo = footprint((35.6, 139.7), (35.7, 139.8))
        let first = view.needsTelling(of: tokyo, previous: 7, now: 9, options: options)
        #expect(!first && view.version == 9)
        let second = view.needsTelling(of: tokyo, previous: 9, now: 12, options: options)
        #expect(!second && view.version == 12)
    }

    @Test("a change that leaves or reaches the view is told")
    func touched() {
        var view = ServedView(bbox: paris, zoom: 12, version: 7)
        let left = view.needsTelling(of: footprint((48.85, 2.35), (35.7, 139.8)), previous: 7, now: 9, options: options)
        let reached = view.needsTelling(
            of: footprint((35.7, 139.8), (48.9, 2.3)), previous: 7, now: 9, options: options)
        #expect(left && reached)
        #expect(view.version == 7, "a told view is recorded again by its refresh, at the version that reads")
    }

    @Test("a view read from an index older than the one published before is told, wherever the changes are")
    func readFromAnOlderIndex() {
        // Read at 5 while 7 was published: that publication judged the session by its view before.
        var view = ServedView(bbox: paris, zoom: 12, version: 5)
        let told = view.needsTelling(of: footprint((35.6, 139.7), (35.7, 139.8)), previous: 7, now: 9, options: options)
        #expect(told)
    }

    @Test("after a compaction every view is told")
    func compaction() {
        var view = ServedView(bbox: paris, zoom: 12, version: 9)
        let told = view.needsTelling(of: nil, previous: 9, now: 9, options: options)
        #expect(told)
    }
}
