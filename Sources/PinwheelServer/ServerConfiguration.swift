import PinwheelCore
import PinwheelTransport

/// Everything `pinwheel serve` can set, with the defaults the protocol's `hello` announces.
public struct ServerConfiguration: Sendable {
    /// Address to listen on.
    public var host: String = "127.0.0.1"
    /// Port to listen on; 0 asks the kernel for a free one.
    public var port: Int = 8080
    /// Folder served at `/` (index.html, demo.js, style.css, pinwheel/).
    public var webRoot: String
    /// Folder served at `/vendor/leaflet/` (Debian's libjs-leaflet).
    public var leafletRoot: String = "/usr/share/javascript/leaflet"
    /// MapLibre GL JS as scripts/vendor-maplibre installs it, served at /vendor/maplibre when present.
    public var maplibreRoot: String = "/usr/local/share/javascript/maplibre-gl"
    /// Origins allowed to open a WebSocket besides the server's own, which always is; `*` allows
    /// every origin. See ``OriginPolicy``.
    public var allowedOrigins: [String] = []
    /// Sessions beyond this are closed with 1013.
    public var maxSessions: Int = 10_000
    /// Connections (WebSocket and HTTP together) held at once; nil: the descriptor limit less a
    /// reserve (``DescriptorBudget``).
    public var maxConnections: Int?
    /// Sessions that send no message for this long are closed with 1000; pings and pongs do not
    /// count. nil: never.
    public var idleTimeout: Duration? = .seconds(600)
    /// Viewports served per second per session; faster ones are coalesced (latest wins).
    public var viewportHz: Double = 10
    /// Most features one viewport is served; past it, those nearest the viewport's centre.
    public var maxFeatures: Int = 10_000
    /// Markers per millisecond of client time the pacer budgets for, before acks refine it.
    public var pace: Double = 0.5
    /// Unacknowledged batches allowed in flight per session.
    public var window: Int = 4
    /// Largest client message accepted, bytes; larger ones close with 1009.
    public var maxMessageBytes: Int = 64 * 1024
    /// Outbound bytes queued for one session before it is closed with 1008 as a stalled reader.
    public var maxQueuedBytes: Int = 4 * 1024 * 1024
    /// TLS certificate and key (PEM); both or neither.
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// Algorithm a new session starts with.
    public var algorithm: Algorithm = .hierarchical
    /// The event loop under lws: `.poll` (default here; `pinwheel serve` picks libev), or `.libev`
    /// for many connections.
    public var eventLoop: EventLoopBackend = .poll
    /// Accept permessage-deflate when a client offers it (browsers do). Off saves the server about a
    /// quarter of its CPU under load and a quarter of an idle session's memory, at about twice the
    /// bytes on the wire (coordinates in JSON compress only about 2:1).
    public var permessageDeflate = true
    /// Clustering options for every algorithm (radius, minPoints, …), announced in `hello`.
    public var clusterOptions = ClusterOptions()
    /// Values reduced over every cluster's points (`--aggregate`), announced in `hello`.
    public var aggregates: [Aggregate] = []
    /// The column every cluster breaks its count down by (`--group-by`); nil for none.
    public var groupBy: String?
    /// Rules whose matches every cluster counts (`--flag`).
    public var flags: [FlagRule] = []
    /// Worker threads that cluster and diff.
    public var workers: Int = 2
    /// The bearer token producers must show to change data; nil turns ingest off.
    public var ingestToken: String?
    /// Tokens that let a producer change only its tenant's points, token → tenant (`--producer-tokens`).
    public var producerTokens: [String: String] = [:]
    /// The key viewers' tokens are verified with (`--viewer-key`); nil: viewers are anonymous.
    public var viewerKeys: ViewerKeys?
    /// How long a session on a server with ``viewerKeys`` has to send its `auth` message.
    public var authDeadline: Duration = .seconds(5)
    /// The point property a token's `tenant` claim is compared with (`--tenant-column`).
    public var tenantColumn: String = "tenant"
    /// Changes per second each producer may send; beyond it requests get 429.
    public var ingestRate: Double = 100_000
    /// How long a change request may take from its arrival to being sent to the log; a later one is
    /// dropped, never applied.
    public var ingestDeadline: Duration = .seconds(10)
    /// While viewers are connected, the most of one core that taking changes in may use, shared
    /// evenly by the producers (``IngestShare``); a producer over its part waits (its socket's frames
    /// are answered later, or its HTTP request is held up to a second, then 429). Nil: no limit.
    public var ingestShare: Double? = 0.3
    /// Largest `POST /v1/changes` body, bytes; larger ones get 413.
    public var maxIngestBodyBytes: Int = 16 * 1024 * 1024
    /// The most time one HTTP request may take, headers and body together; a late body gets 408.
    public var httpDeadline: Duration = .seconds(30)
    /// Bytes per second a request body must keep up from 2 s after its headers; 0 turns it off.
    public var httpMinimumBodyRate: Int = 1024
    /// Least time between two refreshes of the index while data changes: each refresh publishes the
    /// changes since the last and refreshes the sessions they reach. Stretched up to three times while
    /// viewers' first batches are slow (``RefreshPacing``).
    public var refreshInterval: Duration = .milliseconds(100)
    /// The viewport → first batch latency beyond which a viewport counts as slow for
    /// ``RefreshPacing``: the server's own target, which clients see with their network added.
    public var slowFirstBatch: Duration = .milliseconds(3)
    /// Least time between two full rebuilds (compactions) of the index while data changes; between
    /// them, changes are laid over the last build.
    public var compactionInterval: Duration = .seconds(2)
    /// Most bytes the indexes of filtered views may hold together; an index no session uses is let go
    /// of, least recently used first, past it (`--filter-memory`).
    public var filterMemory: Int = 512 << 20
    /// Changes between two snapshots of the data in the change log.
    public var snapshotEvery: UInt64 = 1_000_000

    public init(webRoot: String) {
        self.webRoot = webRoot
    }
}

extension ServerConfiguration {
    /// What clusters count besides their points over `dataset`: `groupBy`'s most common values there
    /// and `flags`.
    /// - Throws: ``IndexError/invalidContents(reason:)`` for a column the dataset lacks.
    public func contents(of dataset: Dataset) throws -> ClusterContents {
        try ClusterContents.choosing(groupBy: groupBy, flags: flags, from: dataset)
    }
}
