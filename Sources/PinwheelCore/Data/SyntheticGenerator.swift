import Foundation

/// Deterministic synthetic points for demos and benchmarks: gaussian blobs of very different sizes
/// and weights (cities, regions) centred over land-like areas, with a share of the points stacked in
/// same-coordinate groups (the shopping-mall case). The same seed and count give the same dataset.
public struct SyntheticGenerator: Sendable {
    /// Seed of the ``SplitMix64`` stream everything is drawn from.
    public var seed: UInt64
    /// Share of points placed in same-coordinate groups (default 5 %).
    public var groupedFraction: Double
    /// Sizes of same-coordinate groups, drawn uniformly (default 2...50).
    public var groupSizes: ClosedRange<Int>
    /// Number of gaussian blobs (default 1,000).
    public var blobCount: Int
    /// Values of a `kind` property column (`kind-0`, `kind-1` …, the first the most common, each next
    /// about 0.7 times as common); 0 (the default) for points without properties.
    public var categories: Int = 0
    /// Tenants of a fleet: when above 0 every point gets a `tenant` column (`t0` … `t{tenants-1}`, each
    /// about as common) and a `speed` column (a number 0 ..< 100 with one decimal, uniform), both drawn
    /// from the point's id alone (``fleetProperties(id:)``), so a producer can upsert a point with the
    /// properties it had. Columns a filtered view can select 1 % to 100 % of the points by.
    public var tenants: Int = 0

    public init(
        seed: UInt64 = 1, groupedFraction: Double = 0.05, groupSizes: ClosedRange<Int> = 2...50,
        blobCount: Int = 1_000
    ) {
        precondition(groupedFraction >= 0 && groupedFraction <= 1, "groupedFraction must be within 0...1")
        precondition(groupSizes.lowerBound >= 2, "a same-coordinate group has at least two points")
        precondition(blobCount > 0, "at least one blob")
        self.seed = seed
        self.groupedFraction = groupedFraction
        self.groupSizes = groupSizes
        self.blobCount = blobCount
    }

    /// Rough boxes over the continents (west, south, east, north in degrees), weighted by area, so blob
    /// centres mostly fall on land and the oceans stay nearly empty, as in real point data.
    static let landBoxes: [(west: Double, south: Double, east: Double, north: Double)] = [
        (-125, 30, -70, 50),  // United States
        (-120, 50, -60, 62),  // Canada
        (-110, 15, -90, 30),  // Mexico
        (-80, -35, -40, 5),  // South America east
        (-75, -50, -65, -20),  // Andes, Patagonia
        (-10, 36, 30, 60),  // Europe
        (30, 45, 60, 60),  // Eastern Europe
        (-15, 5, 35, 32),  // North and West Africa
        (15, -30, 40, 5),  // Central and Southern Africa
        (35, 15, 60, 38),  // Middle East
        (68, 8, 90, 32),  // India
        (100, 22, 122, 42),  // China
        (125, 31, 142, 43),  // Japan and Korea
        (95, -8, 125, 20),  // South-East Asia
        (115, -38, 153, -15),  // Australia
        (172, -46, 178, -35),  // New Zealand
        (60, 40, 90, 55),  // Central Asia
    ]

    /// Generates `count` points with ids 0..<count.
    /// - Complexity: O(count).
    public func dataset(count: Int) -> Dataset {
        precondition(count >= 0 && count <= Int(UInt32.max), "count must fit a dataset id")
        var rng = SplitMix64(seed: seed)
        let blobs = makeBlobs(&rng)
        var coordinates = [Double](repeating: 0, count: 2 * count)
        var filled = 0
        // Groups first, then single points; a shuffle below scatters both through the rows.
        var grouped = Int((Double(count) * groupedFraction).rounded())
        if grouped < groupSizes.lowerBound { grouped = 0 }
        while filled < grouped {
            let remaining = grouped - filled
            let span = UInt64(groupSizes.count)
            var size = groupSizes.lowerBound + Int(rng.next() % span)
            // Never leave a remainder too small to be a group of its own.
            if remaining <= groupSizes.upperBound {
                size = remaining
            } else if remaining - size < groupSizes.lowerBound {
                size = remaining - groupSizes.lowerBound
            }
            let (lon, lat) = blobs.sample(&rng)
            for _ in 0..<size {
                coordinates[2 * filled] = lon
                coordinates[2 * filled + 1] = lat
                filled += 1
            }
        }
        coordinates.withUnsafeMutableBufferPointer { c in
            while filled < count {
                let (lon, lat) = blobs.sample(&rng)
                c[2 * filled] = lon
                c[2 * filled + 1] = lat
                filled += 1
            }
            // Fisher-Yates over coordinate pairs.
            var i = count - 1
            while i > 0 {
                let j = Int(rng.next() % UInt64(i + 1))
                c.swapAt(2 * i, 2 * j)
                c.swapAt(2 * i + 1, 2 * j + 1)
                i -= 1
            }
        }
        var dataset = Dataset(ids: (0..<count).map { UInt32($0) }, coordinates: coordinates)
        if categories > 0 { dataset.properties = kinds(count: count) }
        if tenants > 0 { dataset.properties = withFleet(dataset.properties, count: count) }
        return dataset
    }

    /// The `tenant` and `speed` a point with `id` has (``tenants`` above 0): a hash of the seed and the id.
    public func fleetProperties(id: UInt32) -> (tenant: String, speed: Double) {
        let (tenant, speed) = fleet(id: id)
        return ("t\(tenant)", speed)
    }

    private func fleet(id: UInt32) -> (tenant: Int, speed: Double) {
        var rng = SplitMix64(seed: seed ^ 0x666C_6565_7400_0000 ^ (UInt64(id) &* 0xD6E8_FEB8_6659_FD93))
        let tenant = Int(rng.next() % UInt64(max(1, tenants)))
        // Tenths, so every speed a filter names is held exactly.
        let speed = Double(rng.next() % 1000) / 10
        return (tenant, speed)
    }

    /// `table` with the `tenant` and `speed` columns after its own.
    private func withFleet(_ table: PropertyTable, count: Int) -> PropertyTable {
        let width = table.columns.count
        var values: [PropertyValue?] = []
        values.reserveCapacity(count * (width + 2))
        // Tenant names made once: each row's cell shares its string.
        let names = (0..<tenants).map { PropertyValue.string("t\($0)") }
        for row in 0..<count {
            values.append(contentsOf: table.values[row * width..<(row + 1) * width])
            let (tenant, speed) = fleet(id: UInt32(row))
            values.append(names[tenant])
            values.append(.number(speed))
        }
        return PropertyTable(columns: table.columns + ["tenant", "speed"], values: values)
    }

    /// The `kind` column: geometric weights, from a stream of its own so positions stay as they were.
    private func kinds(count: Int) -> PropertyTable {
        var rng = SplitMix64(seed: seed ^ 0x6B69_6E64)
        let names = (0..<categories).map { "kind-\($0)" }
        var cumulative: [Double] = []
        var total = 0.0
        for k in 0..<categories {
            total += pow(0.7, Double(k))
            cumulative.append(total)
        }
        let values = (0..<count).map { _ in
            let pick = rng.nextUnit() * total
            return PropertyValue.string(names[cumulative.firstIndex { pick < $0 } ?? categories - 1])
        }
        return PropertyTable(columns: ["kind"], values: values)
    }

    private func makeBlobs(_ rng: inout SplitMix64) -> Blobs {
        let areas = SyntheticGenerator.landBoxes.map { ($0.east - $0.west) * ($0.north - $0.south) }
        let totalArea = areas.reduce(0, +)
        var blobs = Blobs()
        var cumulative = 0.0
        for _ in 0..<blobCount {
            var pick = rng.nextUnit() * totalArea
            var box = SyntheticGenerator.landBoxes[0]
            for (i, area) in areas.enumerated() {
                box = SyntheticGenerator.landBoxes[i]
                if pick < area { break }
                pick -= area
            }
            let lon = box.west + rng.nextUnit() * (box.east - box.west)
            let lat = box.south + rng.nextUnit() * (box.north - box.south)
            // Sizes log-uniform from 2 to 200 km; weights heavy-tailed (a few metropolises).
            let sigmaKm = 2 * pow(100, rng.nextUnit())
            let weight = 1 / max(0.01, rng.nextUnit())
            cumulative += weight
            blobs.centers.append((lon, lat))
            blobs.sigmaLatDegrees.append(sigmaKm / 111.2)
            blobs.sigmaLonDegrees.append(sigmaKm / (111.2 * cos(lat * .pi / 180)))
            blobs.cumulativeWeight.append(cumulative)
        }
        return blobs
    }
}

/// Blob parameters as parallel arrays, with cumulative weights for choosing a blob by binary search.
private struct Blobs {
    var centers: [(lon: Double, lat: Double)] = []
    var sigmaLonDegrees: [Double] = []
    var sigmaLatDegrees: [Double] = []
    var cumulativeWeight: [Double] = []

    /// One point: a weighted blob, then a Box-Muller gaussian offset from its centre.
    func sample(_ rng: inout SplitMix64) -> (lon: Double, lat: Double) {
        let target = rng.nextUnit() * cumulativeWeight[cumulativeWeight.count - 1]
        var lo = 0
        var hi = cumulativeWeight.count - 1
        while lo < hi {
            let mid = (lo + hi) / 2
            if cumulativeWeight[mid] <= target { lo = mid + 1 } else { hi = mid }
        }
        let radius = (-2 * log(1 - rng.nextUnit())).squareRoot()
        let angle = 2 * Double.pi * rng.nextUnit()
        let lat = centers[lo].lat + radius * sin(angle) * sigmaLatDegrees[lo]
        let lon = centers[lo].lon + radius * cos(angle) * sigmaLonDegrees[lo]
        return (BBox.wrap(lon), min(84, max(-84, lat)))
    }
}
