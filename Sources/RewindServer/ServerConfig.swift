import RewindCore
import RewindStore

/// Everything an operator can set; every limit here is listed in docs/protocol.md, "Limits" (the options: docs/operating.md, "Server and CLI").
public struct ServerConfig: Sendable {
    public var host = "127.0.0.1"
    public var port = 7878
    /// libpq conninfo; empty means the standard PG* environment variables.
    public var conninfo = ""
    /// Wraps every document's data key (`--master-key-file`); required.
    public var masterKey: MasterKey?
    public var limits = Limits()
    /// A connection silent this long is closed (`bye` reason `idle`).
    public var idleTimeoutMs: UInt64 = 45_000
    /// A connection that has not said `hello` this long after connecting is closed.
    public var handshakeTimeoutMs: UInt64 = 10_000
    /// Replies and pushes not yet written: past it the connection's requests
    /// wait; pushes past twice this close it (`bye` reason `slow`).
    public var maxOutputBytes = 4 << 20
    /// Bytes of one reply page of events (`open` with `since`): past it, `more: true`.
    public var maxPageBytes = 1 << 20
    public var maxConnections = 10_000
    /// Documents one connection may have open at once.
    public var maxOpenDocuments = 64
    /// Events per page of `open` with `since`.
    public var catchUpPage = 1_000
    /// Committed events per document kept in memory for catch-up without a query.
    public var recentEvents = 1_000
    /// Requests per second per connection (a token bucket; past it `rate_limited`).
    public var requestsPerSecond: Double = 1_000
    /// Requests a connection may save up (the bucket's size).
    public var requestBurst: Double = 2_000
    /// Requests of one connection handled per loop turn before the others get theirs.
    public var requestsPerTurn = 32
    /// Submits of one connection waiting for their commit; past it its next lines wait.
    public var maxCommitsInFlight = 256
    /// Connections one user may hold at once (past it the new one gets `bye` `rate_limited`).
    public var maxConnectionsPerUser = 256
    /// Connections from one address that have not said `hello` yet.
    public var maxHandshakesPerAddress = 128
    /// Hellos between their token's check and their answer at once (`HelloGate`); the others wait their turn.
    public var maxHellosInFlight = 128
    /// Peers (load balancers) whose connections start with a PROXY protocol
    /// header naming the client: its address then counts for the per-address limits and logs.
    public var proxyProtocolFrom: Set<String> = []
    /// Failed `hello`s per address: per second, and how many may come at once.
    public var failedHellosPerSecond: Double = 1
    public var failedHelloBurst: Double = 10
    /// `share`s naming no user, per user: how many may come at once, and how
    /// many more a minute (past them `rate_limited`: user names cannot be listed by trying).
    public var shareProbeBurst: Double = 10
    public var shareProbesPerMinute: Double = 10
    /// Bytes held in incomplete lines over all connections (past it the connection adding more is closed).
    public var maxPartialBytes = 256 << 20
    /// A connection whose output stays past the bound this long is closed (`bye` `slow`).
    public var slowTimeoutMs: UInt64 = 30_000
    /// Bad frames in a row after which a connection is dropped.
    public var maxBadFrames = 16
    /// How long a starting server waits for PostgreSQL before it listens anyway.
    public var startupWaitMs: UInt64 = 10_000
    /// How long a connection saying `bye` may take to read it before it is closed hard.
    public var closeGraceMs: UInt64 = 5_000
    /// How long shutdown waits for commits already under way.
    public var shutdownGraceMs: UInt64 = 5_000

    /// Text edits by one terminal in one node this close together form one "Typing" group.
    public var typingWindowMs: Int64 = 500
    /// Groups kept per undo (and redo) stack; 0 keeps all. Changing it changes
    /// what a replay of old logs keeps, so set it once per deployment.
    public var undoLevels = 100
    /// How long an undo prompt stays open for its terminal (stored in PostgreSQL: across reconnects and restarts).
    public var promptTTLSeconds: Double = 600

    /// Push presence whose selection an edit moved (each moved caret costs one
    /// push per other terminal: N² per keystroke in a busy node). When false,
    /// the server still moves its copy (later pushes and `open` carry it) and
    /// terminals move remote carets through the events by the same rule.
    public var pushMovedPresence = true

    /// A snapshot of a document is stored every this many events (0: never).
    public var snapshotEvery = 1_000

    /// A snapshot `snapshotEvery` asks for is skipped (the ledgers are still
    /// compacted) while the events since the last one stored are fewer than that
    /// one's size in bytes over this (0: never skipped). A snapshot holds every
    /// user's undo stacks: ten users editing one document made each ~134 KB
    /// (one user's ~10 KB), encoded, sealed and written to the WAL every 1,000
    /// events — a tenth of the server's CPU and 134 bytes of WAL an event
    /// (issue 44). So what snapshots cost an event stays near this many bytes,
    /// and a first open reads a longer tail only for such documents.
    public var snapshotBytesPerEvent = 64

    /// Static quick actions (`--shortcuts FILE`), listed before the recent documents.
    public var shortcuts = Shortcuts.defaultStatic

    /// Origins besides the server's own page that may open a WebSocket (`--allowed-origins`).
    public var allowedOrigins = WebRoute.Origins.listed([])
    /// The origins the web editor is served from (`--public-origin`); empty:
    /// taken from `Host` when it is a loopback name or an IP literal.
    public var publicOrigins: Set<String> = []
    /// The web editor's files (nil: `web/` found beside the executable's checkout, `WebFiles`).
    public var webDirectory: String?

    /// Writer connections to PostgreSQL, each owning a share of the documents.
    public var writers = 2
    /// Batches in flight per writer connection (`EventStore.maxBatchesInFlight`).
    public var batchesInFlight = 2
    /// How long to wait for PostgreSQL (connecting, answering, statements).
    public var databaseTimeouts = PipelineConnection.Timeouts()

    /// `--metrics HOST:PORT`: where `GET /metrics` and `GET /health` are served (nil: nowhere, nothing counted).
    public var metricsAddress: (host: String, port: Int)?

    /// Tests only: the committed ledger refuses the event with this version,
    /// as if this server and its log disagreed (`DocumentRuntime.halt`).
    public var faultUnappliableVersion: Int64?

    /// Benchmarks only (false): documents it creates content for are written
    /// in plain text, to measure what sealing costs beside it in one run.
    public var sealsContent = true

    /// Identity from the app (`--jwt-secret-file`, `--jwks-file`): the secret
    /// file's text without its trailing newline, and a JWKS document. Neither:
    /// only tokens of `rewind admin user` are taken.
    public var tokenSecret: String?
    public var tokenKeys: String?
    /// Where `tokenKeys` was read (`--jwks-file`): read again on SIGHUP and for an unknown `kid`.
    public var tokenKeysFile: String?
    /// What a signed token's claims must meet (`--jwt-issuer`, `--jwt-audience`, `--jwt-max-lifetime`, `--jwt-clock-skew`).
    public var tokenPolicy = TokenPolicy()
    /// Seconds before a signed token's `exp` that `token_expiring` is pushed (`--jwt-expiry-warning`).
    public var tokenExpiryWarning: Double = 60

    /// `--api HOST:PORT`: where the server API listens (nil: nowhere); its bounds (`--api-*`).
    public var apiAddress: (host: String, port: Int)?
    /// Requests a second each API key may make (bursts of twice as many; `--api-requests-per-second`).
    public var apiRequestsPerSecond = 100.0
    var apiLimits: ServerAPI.Limits {
        var l = ServerAPI.Limits()
        l.rate = apiRequestsPerSecond
        l.burst = apiRequestsPerSecond * 2
        return l
    }
    /// How long a deleted document can be brought back (`POST /v1/docs/{doc}/undelete`), as `rewind admin undelete`'s default.
    public var deletedRetentionDays = 30
    /// Webhook deliveries (`--webhook-*`, `--no-webhooks`; RewindServer/Webhooks).
    public var webhooks = WebhookSettings()

    public init() {}
}
