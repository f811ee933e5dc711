/// The server's first message: who it is, what it serves and the limits it enforces.
public struct HelloMessage: Equatable, Sendable {
    /// The dataset being served.
    public struct DatasetInfo: Equatable, Sendable {
        public var name: String
        public var points: Int
        /// West, south, east, north of all points; nil for an empty dataset (sent as `null`).
        public var bounds: BBox?
        /// GeoJSON features with `"geometry": null`, left out (RFC 7946's unlocated features).
        public var unlocated: Int
        /// Bad rows left out under `--on-bad-row skip`.
        public var skipped: Int
        /// Values reduced over every cluster's points, the keys of a cluster's `aggregates`.
        public var aggregates: [Aggregate]

        public init(
            name: String, points: Int, bounds: BBox?, unlocated: Int = 0, skipped: Int = 0,
            aggregates: [Aggregate] = []
        ) {
            self.name = name
            self.points = points
            self.bounds = bounds
            self.unlocated = unlocated
            self.skipped = skipped
            self.aggregates = aggregates
        }
    }

    /// Clustering options, with supercluster's names.
    public struct Options: Equatable, Sendable {
        public var minZoom: Int
        public var maxZoom: Int
        public var minPoints: Int
        /// Cluster radius, pixels.
        public var radius: Double
        /// Tile extent the radius is measured against.
        public var extent: Int
        /// Same-coordinate spreading: `seed` or `adaptive`.
        public var spread: String
        /// Clusters in view for the `pca-tree` algorithm.
        public var maxClusters: Int

        public init(
            minZoom: Int = 0, maxZoom: Int = 16, minPoints: Int = 2, radius: Double = 40, extent: Int = 512,
            spread: String = "adaptive", maxClusters: Int = 32
        ) {
            self.minZoom = minZoom
            self.maxZoom = maxZoom
            self.minPoints = minPoints
            self.radius = radius
            self.extent = extent
            self.spread = spread
            self.maxClusters = maxClusters
        }
    }

    /// What the server enforces.
    public struct Limits: Equatable, Sendable {
        /// Viewports served per second at most.
        public var viewportHz: Double
        /// Starting pace, markers per millisecond.
        public var pace: Double
        /// Batches in flight without an ack.
        public var window: Int
        public var maxMessageBytes: Int
        public var maxZoom: Double
        public var maxPixels: Int
        /// Most features one viewport is served; past it, the nearest the centre (see ``BatchMessage/Capped``).
        public var maxFeatures: Int

        public init(
            viewportHz: Double = 10, pace: Double = 0.5, window: Int = 4, maxMessageBytes: Int = 65_536,
            maxZoom: Double = ViewportMessage.maxZoom, maxPixels: Int = ViewportMessage.maxPixels,
            maxFeatures: Int = 10_000
        ) {
            self.viewportHz = viewportHz
            self.pace = pace
            self.window = window
            self.maxMessageBytes = maxMessageBytes
            self.maxZoom = maxZoom
            self.maxPixels = maxPixels
            self.maxFeatures = maxFeatures
        }
    }

    /// The session's subprotocol, sent as `protocol`.
    public var encoding: WireEncoding
    public var session: String
    public var algorithm: Algorithm
    public var algorithms: [Algorithm]
    public var dataset: DatasetInfo
    public var options: Options
    public var limits: Limits
    /// The column clusters break down (`groups.column`) and its listed values; nil without one.
    public struct Groups: Equatable, Sendable {
        public var column: String
        public var values: [String]

        public init(column: String, values: [String]) {
            self.column = column
            self.values = values
        }
    }

    /// hello's `groups`.
    public var groups: Groups?
    /// hello's `flags`: the names of the rules each cluster counts the matches of.
    public var flags: [String]

    public init(
        session: String, algorithm: Algorithm, algorithms: [Algorithm] = Algorithm.allCases,
        dataset: DatasetInfo, options: Options = Options(), limits: Limits = Limits(), encoding: WireEncoding = .json,
        contents: ClusterContents = .none
    ) {
        groups = contents.column.map { Groups(column: $0, values: contents.values) }
        flags = contents.flags.map(\.name)
        self.encoding = encoding
        self.session = session
        self.algorithm = algorithm
        self.algorithms = algorithms
        self.dataset = dataset
        self.options = options
        self.limits = limits
    }
}
