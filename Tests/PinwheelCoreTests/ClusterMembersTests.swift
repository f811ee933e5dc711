import Testing

@testable import PinwheelCore

/// A cluster's children and its points paged by cursor: pages partition the points exactly, built
/// whole and under changes; the session answers the requests, refuses bad ones by field and limits
/// their rate.
@Suite("Cluster members")
struct ClusterMembersTests {
    static let world = BBox(west: -180, south: -85, east: 180, north: 85)

    /// Pages every cluster in view at `zoom` with pages of `limit`: ascending ids, each point once, as
    /// many as the cluster's count, and the same set as its members.
    static func checkPaging(_ clusterer: any Clusterer, zoom: Double, limit: Int) {
        var features: [Feature] = []
        clusterer.features(in: world, zoom: zoom, into: &features)
        var paged = 0
        for f in features where !f.isPoint {
            let members = clusterer.members(of: f.id, zoom: zoom) ?? []
            var seen: [FeatureID] = []
            var after: UInt32?
            var pages = 0
            repeat {
                let page = clusterer.memberPage(of: f.id, zoom: zoom, after: after, limit: limit)!
                #expect(page.total == Int(f.count))
                #expect(page.points.count <= limit && (page.next == nil || page.points.count == limit))
                seen += page.points.map(\.id)
                after = page.next
                pages += 1
            } while after != nil && pages <= members.count
            #expect(seen == members.map(\.id).sorted(), "cluster \(f.id) at zoom \(zoom)")
            #expect(Set(seen).count == Int(f.count), "cluster \(f.id) at zoom \(zoom)")
            paged += 1
        }
        #expect(paged > 0)
    }

    @Test("pages of a cluster's points partition them exactly, in ascending ids", arguments: [1, 7, 100])
    func pagesPartition(limit: Int) throws {
        let data = ClusterContentsTests.dataset(seed: 21, count: 4000)
        let index = try ClusterIndex(dataset: data)
        for zoom in [0.0, 3, 6, 9, 12] { Self.checkPaging(index, zoom: zoom, limit: limit) }
        // With contents the index pages from its hierarchy order's runs.
        let ordered = try ClusterIndex(dataset: data, contents: try ClusterContentsTests.contents(for: data))
        for zoom in [0.0, 3, 6, 9, 12] { Self.checkPaging(ordered, zoom: zoom, limit: limit) }
        let tree = try PCATree(dataset: SyntheticGenerator(seed: 21).dataset(count: 4000))
        for zoom in [0.0, 6] { Self.checkPaging(tree, zoom: zoom, limit: limit) }
    }

    @Test(
        "pages partition a live cluster's points, changed points included",
        arguments: [UInt64(31), 32], [false, true])
    func pagesPartitionLive(seed: UInt64, withContents: Bool) throws {
        let start = ClusterContentsTests.dataset(seed: seed, count: 3000)
        let contents = withContents ? try ClusterContentsTests.contents(for: start) : .none
        var delta = ClusterDelta(base: try ClusterIndex(dataset: start, contents: contents))
        let (table, changed) = ClusterContentsTests.history(seed: seed, base: start, changes: 1200)
        for change in changed { delta.apply(change) }
        let live = LiveClusterIndex(
            delta: delta, version: table.dataset.version, names: table.dataset.names,
            columns: table.dataset.properties.columns, pointCount: table.count)
        for zoom in [0.0, 4, 8, 11] { Self.checkPaging(live, zoom: zoom, limit: 9) }
    }

    @Test("a page after a point that left the cluster starts at the next id, without repeats")
    func cursorPastAGonePoint() {
        let members = [5, 9, 12, 40, 41].map {
            Feature(id: FeatureID($0), lat: 0, lon: 0, count: 1, parent: nil, row: 0)
        }
        let page = MemberPage(members: members, after: 10, limit: 2)
        #expect(page.points.map(\.id) == [12, 40] && page.next == 40 && page.total == 5)
        #expect(MemberPage(members: members, after: 40, limit: 2).next == nil)
    }

    @Test("cursors are opaque text the server reads back, and text that is no cursor is refused by field")
    func cursorText() throws {
        #expect(LeavesRequest.id(ofCursor: LeavesRequest.cursor(after: 4_294_967_295)) == 4_294_967_295)
        let request = ClientMessage.leaves(LeavesRequest(id: 77, req: 3, limit: 50, after: 1234))
        #expect(try ClientMessage.decode(request.json) == request)
        #expect(
            throws: WireError(
                .invalidField, field: "cursor", message: #"cursor is not a cursor of this server: "12""#, req: 1)
        ) {
            try ClientMessage.decode(#"{"type":"leaves","id":1,"req":1,"cursor":"12"}"#)
        }
        #expect(throws: WireError.self) { try ClientMessage.decode(#"{"type":"leaves","id":1,"req":1,"limit":501}"#) }
        do {
            _ = try ClientMessage.decode(#"{"type":"leaves","id":1,"req":1,"limit":501}"#)
        } catch {
            #expect(error.field == "limit" && error.code == .invalidField && error.req == 1)
        }
        #expect(
            try ClientMessage.decode(#"{"type":"leaves","id":1,"req":2}"#)
                == .leaves(LeavesRequest(id: 1, req: 2, limit: 100, after: nil)))
        #expect(try ClientMessage.decode(#"{"type":"children","id":9,"req":4}"#) == .children(id: 9, req: 4))
    }

    @Test("a refused children or leaves request names its req, and one whose req cannot be read names none")
    func refusalsNameTheRequest() {
        func refusal(_ text: String) -> WireError? {
            do {
                _ = try ClientMessage.decode(text)
                return nil
            } catch {
                return error
            }
        }
        #expect(
            refusal(#"{"type":"children","req":12}"#)
                == WireError(.missingField, field: "id", message: #"children needs "id""#, req: 12))
        #expect(refusal(#"{"type":"leaves","id":1,"req":13,"limit":0}"#)?.req == 13)
        #expect(refusal(#"{"type":"leaves","id":-1,"req":14}"#)?.req == 14)
        #expect(refusal(#"{"type":"leaves","id":1,"req":-1}"#).map { $0.req == nil && $0.field == "req" } == true)
        #expect(refusal(#"{"type":"expand","id":-1}"#).map { $0.req == nil } == true)
        // The answer's JSON carries it, and a client reads it back.
        var encoder = MessageEncoder()
        encoder.error(WireError(.rateLimited, field: "type", message: "slow down", retryMs: 40, req: 2 << 40))
        let decoded = try? ServerMessage.decode(Array(encoder.message))
        #expect(
            decoded == .error(WireError(.rateLimited, field: "type", message: "slow down", retryMs: 40, req: 2 << 40)))
    }

    /// A session that was sent Europe at zoom 4 a second ago, and the largest cluster it holds.
    static func servedEurope() throws -> (SessionMachineTests.Harness, WireFeature) {
        var h = SessionMachineTests.Harness()
        _ = try h.opened()
        try h.turn([h.viewport(SessionMachineTests.europe, zoom: 4)])
        let cluster = h.page.values.filter { $0.id >> 32 != 0 }.max { $0.count < $1.count }!
        h.clock.advance(by: .seconds(1))
        return (h, cluster)
    }

    @Test("a session answers children and leaves with the request's req, and unknown ids with unknown-feature")
    func sessionAnswers() throws {
        var (h, cluster) = try Self.servedEurope()
        let answers = try h.turn([
            .children(id: cluster.id, req: 7), .leaves(LeavesRequest(id: cluster.id, req: 8, limit: 10)),
            .leaves(LeavesRequest(id: 5 << 32 | 123_456_789, req: 9)),
        ])
        guard answers.count == 3, case .children(let req, let id, let children) = answers[0],
            case .leaves(let page) = answers[1], case .error(let unknown) = answers[2]
        else {
            Issue.record("answers: \(answers)")
            return
        }
        #expect(req == 7 && id == cluster.id)
        #expect(children.reduce(0) { $0 + Int($1.count) } == Int(cluster.count))
        #expect(children.allSatisfy { $0.parent == cluster.id })
        #expect(page.req == 8 && page.total == Int(cluster.count) && page.points.count == 10)
        #expect(page.points.map(\.id) == page.points.map(\.id).sorted())
        #expect(page.next == LeavesRequest.cursor(after: UInt32(page.points.last!.id)))
        #expect(unknown.code == .unknownFeature && unknown.field == "id" && unknown.req == 9)
    }

    @Test("a leaves request is answered before a viewport that came before it in the same turn")
    func leavesAheadOfViewport() throws {
        var (h, cluster) = try Self.servedEurope()
        let answers = try h.turn([
            h.viewport(SessionMachineTests.europe, zoom: 5), .leaves(LeavesRequest(id: cluster.id, req: 3, limit: 5)),
        ])
        guard case .leaves(let page)? = answers.first else {
            Issue.record("answers: \(answers)")
            return
        }
        #expect(page.req == 3 && page.total == Int(cluster.count) && page.points.count == 5)
        #expect(answers.dropFirst().contains { if case .batch = $0 { true } else { false } })
    }

    @Test("children and leaves past the rate are refused with when to retry, then taken again")
    func rateLimited() throws {
        var h = SessionMachineTests.Harness()
        _ = try h.opened()
        let requests = (0..<6).map { ClientMessage.children(id: 3, req: UInt64($0)) }
        let answers = try h.turn(requests)
        let refused = answers.compactMap { m -> WireError? in
            if case .error(let e) = m, e.code == .rateLimited { return e }
            return nil
        }
        #expect(answers.count == 6 && refused.count == 2)
        // Each refusal names the request it turns away: the two past the burst.
        #expect(refused.map(\.req) == [4, 5])
        #expect(refused.allSatisfy { ($0.retryMs ?? 0) > 0 && ($0.retryMs ?? 0) <= 400 })
        h.clock.advance(by: .milliseconds(refused[0].retryMs!))
        let later = try h.turn([.children(id: 3, req: 9)])
        if case .error(let e) = later.first { #expect(e.code != .rateLimited) }
    }
}
