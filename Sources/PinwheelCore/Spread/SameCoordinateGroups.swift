import Foundation

/// The dataset's same-coordinate groups: two or more points sharing exactly one coordinate (the
/// shopping-mall case), or, with a tolerance, lying within that many metres of the group's first point.
/// Zooming never separates such a group, so clusterers show it spread instead (``SpreadPlacement``).
public struct SameCoordinateGroups: Sendable {
    /// Largest accepted tolerance, in metres; beyond it "same coordinate" stops meaning anything.
    public static let maxToleranceMetres = 1_000.0

    /// Metres within which points count as one coordinate; 0 means bit-for-bit equal degrees.
    public let toleranceMetres: Double
    /// Dataset rows of every group, group after group, each group in ascending dataset-id order.
    public let rows: [Int32]
    /// Group g holds `rows[starts[g] ..< starts[g + 1]]`; one more entry than there are groups.
    public let starts: [Int32]
    /// Each group's shared point: the coordinate of its first member (the seed, with a tolerance).
    public let centers: [Coordinate]

    /// Finds the groups of a dataset.
    /// - Parameters:
    ///   - dataset: the points.
    ///   - toleranceMetres: 0 (default) groups exactly equal coordinates; a positive value groups
    ///     greedily, in row order, every ungrouped point within that great-circle distance of a seed.
    ///     At most ``maxToleranceMetres``.
    /// - Complexity: O(n) for exact grouping (a radix sort of coordinate hashes).
    public init(dataset: Dataset, toleranceMetres: Double = 0) {
        precondition(
            toleranceMetres >= 0 && toleranceMetres <= SameCoordinateGroups.maxToleranceMetres,
            "toleranceMetres must be within 0...\(SameCoordinateGroups.maxToleranceMetres), got \(toleranceMetres)")
        self.toleranceMetres = toleranceMetres
        let found =
            toleranceMetres == 0
            ? SameCoordinateGroups.exactGroups(dataset)
            : SameCoordinateGroups.toleranceGroups(dataset, toleranceMetres)
        // Groups ordered by their first member's id, members by id: the same data always numbers
        // its groups the same way, however rows are shuffled.
        let ids = dataset.ids
        var groups = zip(found.groups, found.seeds).map { group, seed in
            (members: group.sorted { ids[Int($0)] < ids[Int($1)] }, seed: seed)
        }
        groups.sort { ids[Int($0.members[0])] < ids[Int($1.members[0])] }
        var rows = [Int32]()
        var starts: [Int32] = [0]
        var centers = [Coordinate]()
        rows.reserveCapacity(groups.reduce(0) { $0 + $1.members.count })
        for group in groups {
            rows.append(contentsOf: group.members)
            starts.append(Int32(rows.count))
            // Exact groups share one coordinate; a tolerance group is centred on its seed.
            let center = toleranceMetres == 0 ? Int(group.members[0]) : Int(group.seed)
            centers.append(Coordinate(lat: dataset.lat(center), lon: dataset.lon(center)))
        }
        self.rows = rows
        self.starts = starts
        self.centers = centers
    }

    /// Number of groups.
    public var count: Int { starts.count - 1 }

    /// The rows of group `g`, in dataset-id order.
    public func rows(of g: Int) -> ArraySlice<Int32> {
        rows[Int(starts[g])..<Int(starts[g + 1])]
    }

    /// Number of members of group `g`.
    public func size(of g: Int) -> Int { Int(starts[g + 1] - starts[g]) }

    /// For each of `rowCount` rows, the index of its group, or -1 when it is in none.
    public func groupIndexByRow(rowCount: Int) -> [Int32] {
        var byRow = [Int32](repeating: -1, count: rowCount)
        for g in 0..<count {
            for row in rows(of: g) { byRow[Int(row)] = Int32(g) }
        }
        return byRow
    }

    /// Groups of exactly equal coordinates: rows sorted by a hash of the coordinate, then each run of
    /// equal hashes split by the coordinates themselves (hash collisions are possible, just rare).
    private static func exactGroups(_ dataset: Dataset) -> FoundGroups {
        let n = dataset.count
        guard n > 1 else { return FoundGroups() }
        // One word per row: the hash's top bits above the row, so the sort moves a single array; a
        // shorter hash only means more (harmless, re-checked) collisions.
        let rowBits = max(1, Int.bitWidth - (n - 1).leadingZeroBitCount)
        let hashBits = 64 - rowBits
        let rowMask = UInt64((1 << rowBits) - 1)
        var keys = [UInt64](repeating: 0, count: n)
        var scratch = [UInt64](repeating: 0, count: n)
        let sorted = dataset.coordinates.withUnsafeBufferPointer { c in
            keys.withUnsafeMutableBufferPointer { k in
                scratch.withUnsafeMutableBufferPointer { s in
                    for i in 0..<n {
                        let hash = coordinateHash(lon: c[2 * i], lat: c[2 * i + 1])
                        k[i] = (hash & ~rowMask) | UInt64(i)
                    }
                    let inScratch = RadixSort.sortKeys(
                        k, scratch: s, lowBit: rowBits, bits: hashBits, parallel: n >= Parallel.minimumItems)
                    return inScratch ? Array(s) : Array(k)
                }
            }
        }
        var found = FoundGroups()
        var start = 0
        while start < n {
            let hash = sorted[start] >> UInt64(rowBits)
            var end = start + 1
            while end < n && sorted[end] >> UInt64(rowBits) == hash { end += 1 }
            if end - start > 1 {
                splitRun(sorted[start..<end].map { UInt32($0 & rowMask) }[...], dataset, into: &found)
            }
            start = end
        }
        return found
    }

    /// Splits rows with equal hashes into groups of truly equal coordinates.
    private static func splitRun(_ run: ArraySlice<UInt32>, _ dataset: Dataset, into found: inout FoundGroups) {
        let sorted = run.sorted {
            let (a, b) = (Int($0), Int($1))
            return (dataset.lon(a), dataset.lat(a), a) < (dataset.lon(b), dataset.lat(b), b)
        }
        var i = 0
        while i < sorted.count {
            let first = Int(sorted[i])
            var j = i + 1
            while j < sorted.count && dataset.lon(Int(sorted[j])) == dataset.lon(first)
                && dataset.lat(Int(sorted[j])) == dataset.lat(first)
            {
                j += 1
            }
            if j - i > 1 { found.append(sorted[i..<j].map { Int32($0) }, seed: Int32(first)) }
            i = j
        }
    }

    /// Greedy grouping within a tolerance on a latitude/longitude grid whose cells are the tolerance
    /// tall; a seed looks as many cells east and west as the tolerance spans at its latitude.
    private static func toleranceGroups(_ dataset: Dataset, _ tolerance: Double) -> FoundGroups {
        let n = dataset.count
        let cellDegrees = tolerance / (Sphere.radius * Double.pi / 180)
        let lonCells = Int((360 / cellDegrees).rounded(.up))
        let latCells = Int((180 / cellDegrees).rounded(.up))
        func cell(_ row: Int) -> (Int, Int) {
            let cx = min(lonCells - 1, max(0, Int((dataset.lon(row) + 180) / cellDegrees)))
            let cy = min(latCells - 1, max(0, Int((dataset.lat(row) + 90) / cellDegrees)))
            return (cx, cy)
        }
        var grid = [Int: [Int32]]()
        for row in 0..<n {
            let (cx, cy) = cell(row)
            grid[cy * lonCells + cx, default: []].append(Int32(row))
        }
        var taken = [Bool](repeating: false, count: n)
        var found = FoundGroups()
        for seed in 0..<n where !taken[seed] {
            taken[seed] = true
            let (cx, cy) = cell(seed)
            let seedLat = dataset.lat(seed)
            let seedLon = dataset.lon(seed)
            // Near the poles a metre spans more longitude, so look further east and west.
            let cosLat = max(cos(min(89.9, abs(seedLat) + cellDegrees) * Double.pi / 180), 1e-3)
            let reach = min(lonCells / 2, Int((1 / cosLat).rounded(.up)))
            var members: [Int32] = [Int32(seed)]
            for y in max(0, cy - 1)...min(latCells - 1, cy + 1) {
                for dx in -reach...reach {
                    let x = ((cx + dx) % lonCells + lonCells) % lonCells
                    guard let candidates = grid[y * lonCells + x] else { continue }
                    for other in candidates where !taken[Int(other)] {
                        let o = Int(other)
                        if haversine(seedLat, seedLon, dataset.lat(o), dataset.lon(o)) <= tolerance {
                            taken[o] = true
                            members.append(other)
                        }
                    }
                }
            }
            if members.count > 1 { found.append(members, seed: Int32(seed)) }
        }
        return found
    }

    /// Great-circle distance in metres on the sphere of ``Sphere/radius``.
    static func haversine(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let toRadians = Double.pi / 180
        let dLat = (lat2 - lat1) * toRadians
        let dLon = (lon2 - lon1) * toRadians
        let h =
            sin(dLat / 2) * sin(dLat / 2)
            + cos(lat1 * toRadians) * cos(lat2 * toRadians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * Sphere.radius * asin(min(1, h.squareRoot()))
    }

    /// A well-mixed hash of a coordinate's bits (SplitMix64's finaliser); -0 and +0 hash alike.
    private static func coordinateHash(lon: Double, lat: Double) -> UInt64 {
        let a = (lon == 0 ? 0 : lon).bitPattern
        let b = (lat == 0 ? 0 : lat).bitPattern
        var z = a &+ (b &* 0x9E37_79B9_7F4A_7C15)
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Groups as found, before they are put in id order.
private struct FoundGroups {
    var groups: [[Int32]] = []
    var seeds: [Int32] = []

    mutating func append(_ group: [Int32], seed: Int32) {
        groups.append(group)
        seeds.append(seed)
    }
}
