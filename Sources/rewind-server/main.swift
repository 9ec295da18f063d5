import ArgumentParser
import Glibc
import Logging
import RewindCore
import RewindServer
import RewindStore

/// Every default lives in `ServerConfig`; the options show them.
private let defaults = ServerConfig()

/// `rewind-server`: serves the wire protocol (PROTOCOL.md) on one libuv loop.
struct RewindServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rewind-server",
        abstract: "Serve Rewind's collaborative editing protocol over TCP (NDJSON).",
        discussion: """
            The database comes from --database, else REWIND_DATABASE, else the standard
            PGHOST/PGPORT/PGUSER/PGDATABASE variables. Apply the schema first with
            `rewind admin migrate`: a database behind this release's schema is refused
            (exit 1). SIGINT/SIGTERM shut down cleanly: commits under way
            are answered, then every terminal gets `bye` with retry: true.
            """)

    @Option(help: "Address to listen on, HOST:PORT (env REWIND_LISTEN).")
    var listen: String = env("REWIND_LISTEN") ?? "127.0.0.1:7878"

    @Option(help: "libpq connection string (env REWIND_DATABASE; default: PG* variables).")
    var database: String = env("REWIND_DATABASE") ?? ""

    @Option(help: "The master key file: wraps every document's data key (one line, 32 bytes in base64, mode 0600; `rewind admin master-key create FILE` makes one). Required (env REWIND_MASTER_KEY_FILE). A key other than the database's: exit 1.")
    var masterKeyFile: String?

    @Option(help: "Seconds without a complete line after which a connection is closed (bye idle).")
    var idleTimeout: Int = Int(defaults.idleTimeoutMs / 1000)

    @Option(help: "Seconds to say hello after connecting, and the longest an incomplete line may be held (bye handshake_timeout / partial_line).")
    var handshakeTimeout: Int = Int(defaults.handshakeTimeoutMs / 1000)

    @Option(help: "Bytes held in incomplete lines over all connections; the connection taking it past this is closed (bye rate_limited).")
    var maxPartialBytes: Int = defaults.maxPartialBytes

    @Option(help: "Bytes of replies and pushes not yet written past which a connection's requests wait (pushes past twice this disconnect it: bye slow).")
    var maxOutputBytes: Int = defaults.maxOutputBytes

    @Option(help: "Seconds a connection may stay past --max-output-bytes before it is disconnected (bye slow).")
    var slowTimeout: Int = Int(defaults.slowTimeoutMs / 1000)

    @Option(help: "Seconds a closed connection's last bytes (its bye) may wait for a peer that does not read them before the socket is closed hard.")
    var closeGrace: Int = Int(defaults.closeGraceMs / 1000)

    @Option(help: "Most simultaneous connections (lowered, with a warning, to fit the descriptor limit).")
    var maxConnections: Int = defaults.maxConnections

    @Option(help: "Connections one user may hold at once.")
    var maxConnectionsPerUser: Int = defaults.maxConnectionsPerUser

    @Option(help: "Connections from one address that have not said hello yet.")
    var maxHandshakesPerAddress: Int = defaults.maxHandshakesPerAddress

    @Option(help: "Hellos checked at once (their token's lookup and their quick actions' read); the others wait their turn, so a reconnect storm does not send every query to PostgreSQL at once.")
    var maxHellosInFlight: Int = defaults.maxHellosInFlight

    @Option(help: "Load balancers (IP addresses, comma-separated) whose connections begin with a PROXY protocol header (v1 or v2; HAProxy send-proxy-v2): the client's address it names counts for the per-address limits and logs. Connections from other addresses send none.")
    var proxyProtocolFrom: String = ""

    @Option(help: "Requests per second per connection (token bucket; burst twice this); past it: rate_limited with retry_after_ms.")
    var requestsPerSecond: Int = Int(defaults.requestsPerSecond)

    @Option(help: "Milliseconds within which one terminal's text edits in one node coalesce into one \"Typing\" undo group.")
    var typingWindow: Int64 = defaults.typingWindowMs

    @Option(help: "Groups kept per undo and redo stack (0: all): the default, and the most a user may choose with `set_undo_levels`. Set once per deployment: replay uses the same value.")
    var undoLevels: Int = defaults.undoLevels

    @Option(help: "Seconds an undo prompt (a shake's, a conflict's) stays open for its terminal, across reconnects and restarts, before it expires.")
    var promptTtl: Double = defaults.promptTTLSeconds

    @Option(help: "Store a snapshot of a document every N events, so that opening it reads only the log after it (0: never).")
    var snapshotEvery: Int = defaults.snapshotEvery

    @Option(help: "Skip a snapshot --snapshot-every asks for while the events since the last one are fewer than its size in bytes over N (0: never skip): a document with a large snapshot (many users' undo stacks) is snapshotted less often.")
    var snapshotBytesPerEvent: Int = defaults.snapshotBytesPerEvent

    @Option(help: "push: send presence whose selection others' edits moved (default); quiet: keep it moved without pushing (clients move remote carets through the events themselves; for rooms with many carets).")
    var presenceMoves: String = "push"

    @Option(help: "A JSON file of static quick actions, listed before the documents a user edited recently: an array of at most 4 {type, title, subtitle?, icon?, info?}, type new_document or open_document (with info.doc). [] lists none. Default: one new_document item, \"New Document\" (env REWIND_SHORTCUTS).")
    var shortcuts: String?

    @Option(help: "Writer connections to PostgreSQL; each owns a share of the documents and commits their batches.")
    var writers: Int = defaults.writers

    @Option(help: "Batches each writer connection has sent and not yet had answered, at most: PostgreSQL starts the next as soon as one commits (1: wait for each answer).")
    var batchesInFlight: Int = defaults.batchesInFlight

    @Option(help: "Seconds to wait for PostgreSQL: to connect, to answer (then the connection is made again and requests fail unavailable meanwhile); statements are cancelled after the same time.")
    var dbTimeout: Int = Int(defaults.databaseTimeouts.statementMs / 1000)

    @Option(help: "Serve GET /metrics (Prometheus text format) and GET /health (200 ok, or 503 and why the database is unreachable) over HTTP on HOST:PORT, e.g. 127.0.0.1:9464. Without it nothing is counted.")
    var metrics: String?

    @Option(help: "Origins besides the server's own page that may open a WebSocket at /ws: comma-separated (https://app.example.com), or * for any. Clients that send no Origin (not browsers) are always allowed (env REWIND_ALLOWED_ORIGINS).")
    var allowedOrigins: String?

    @Option(help: "The origin(s) browsers load the web editor from, comma-separated (https://rewind.example.com): its WebSocket is allowed from there. Without it, the page's own origin is taken from the Host header only when Host is localhost or an IP address (a DNS name in Host could be an attacker's, rebound to this server); behind a name, set this (env REWIND_PUBLIC_ORIGIN).")
    var publicOrigin: String?

    @Option(help: "The folder of the web editor's files (index.html, rewind.js), served at GET / and GET /rewind.js. Default: web/ of the checkout the server was built in (env REWIND_WEB_DIR).")
    var webDir: String?

    @Option(help: "Identity from the app: accept JWTs signed HS256 with this shared secret at hello (the file's text without its trailing newline; env REWIND_JWT_SECRET_FILE). Never logged.")
    var jwtSecretFile: String?

    @Option(help: "Identity from the app: accept JWTs signed ES256 or EdDSA by the public keys of this JWKS file (RFC 7517), chosen by `kid` (env REWIND_JWKS_FILE).")
    var jwksFile: String?

    @Option(help: "A signed token's `iss` must be this (env REWIND_JWT_ISSUER). Without it any issuer is taken, and (iss, sub) still names one user.")
    var jwtIssuer: String?

    @Option(help: "A signed token's `aud` must name this (env REWIND_JWT_AUDIENCE).")
    var jwtAudience: String?

    @Option(help: "Seconds a signed token's `exp` may be ahead of now at most (env REWIND_JWT_MAX_LIFETIME; default 86400, one day).")
    var jwtMaxLifetime: Int?

    @Option(help: "Seconds of difference allowed between the app's clock and this server's for `exp`, `nbf` and `iat` (default 30).")
    var jwtClockSkew: Int = 30

    @Option(help: "Seconds before a signed token's `exp` that its session is told `token_expiring` (default 60); at `exp` without a `refresh` the session ends (`bye` token_expired).")
    var jwtExpiryWarning: Int = 60

    @Option(help: "Serve the HTTP API for applications' backends on HOST:PORT, e.g. 127.0.0.1:7879 (docs/api.md; keys: `rewind admin api-key create`). Never the public port; off without it (env REWIND_API).")
    var api: String? = env("REWIND_API")

    @Option(help: "Requests a second each API key may make (a burst of twice as many); past it 429 with Retry-After (default 100).")
    var apiRequestsPerSecond: Double = 100

    @Option(help: "Days a deleted document can be brought back through the API (POST /v1/docs/{doc}/undelete; default 30, as `rewind admin undelete`).")
    var deletedRetentionDays: Int = 30

    @Flag(inversion: .prefixedNo, help: "Deliver webhooks (`rewind admin webhook add`) from this instance; each endpoint is delivered by one instance at a time (default on).")
    var webhooks = true

    @Option(help: "Seconds a webhook post may take, connecting included, before it counts as failed (default 10).")
    var webhookTimeout: Double = 10

    @Option(help: "Posts under way at once per webhook endpoint, never two of one document (default 8).")
    var webhookConcurrency: Int = 8

    @Option(help: "Seconds an instance holds a webhook endpoint's lease; another instance takes over one that vanished after it (default 30, at least twice --webhook-timeout).")
    var webhookLease: Int = 30

    @Option(help: "Seconds before a failed webhook post is first tried again; each later wait doubles, up to an hour, with jitter (default 2).")
    var webhookRetryBase: Double = 2

    @Option(help: "Seconds an entry may keep failing before its endpoint is disabled (default 86400, a day; `rewind admin webhook replay` starts it again).")
    var webhookGiveUpAfter: Double = 86_400

    @Option(help: .hidden)
    var faultUnappliableVersion: Int64?

    // Benchmarks only (scripts/bench/commit and replay --compare-unsealed): what sealing costs.
    @Flag(help: .hidden)
    var unsealedForBenchmarks = false

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String = env("REWIND_LOG_LEVEL") ?? "info"

    func validate() throws {
        guard Self.splitAddress(listen) != nil else { throw ValidationError("--listen must be HOST:PORT, e.g. 127.0.0.1:7878") }
        if let metrics, Self.splitAddress(metrics) == nil { throw ValidationError("--metrics must be HOST:PORT, e.g. 127.0.0.1:9464") }
        if let api, Self.splitAddress(api) == nil { throw ValidationError("--api must be HOST:PORT, e.g. 127.0.0.1:7879") }
        if let api, api == listen, Self.splitAddress(api)?.1 != 0 { throw ValidationError("--api must not be the public port (--listen)") }
        guard apiRequestsPerSecond > 0 else { throw ValidationError("--api-requests-per-second must be more than 0") }
        guard webhookTimeout > 0, webhookRetryBase > 0, webhookRetryBase <= 3_600, webhookGiveUpAfter > 0, webhookGiveUpAfter <= 2_592_000 else {
            throw ValidationError("--webhook-timeout and --webhook-retry-base (at most 3600) and --webhook-give-up-after (at most 2592000, 30 days) must be more than 0")
        }
        guard (1...64).contains(webhookConcurrency) else { throw ValidationError("--webhook-concurrency must be 1 to 64") }
        guard Double(webhookLease) >= 2 * webhookTimeout, webhookLease <= 3_600 else {
            throw ValidationError("--webhook-lease must be at least twice --webhook-timeout, and at most 3600")
        }
        guard deletedRetentionDays >= 0 else { throw ValidationError("--deleted-retention-days must be 0 or more") }
        guard typingWindow >= 0, typingWindow <= 60_000 else { throw ValidationError("--typing-window must be 0 to 60000 ms") }
        guard snapshotEvery >= 0 else { throw ValidationError("--snapshot-every must be 0 (never) or more") }
        guard snapshotBytesPerEvent >= 0 else { throw ValidationError("--snapshot-bytes-per-event must be 0 (never skip) or more") }
        guard undoLevels >= 0 else { throw ValidationError("--undo-levels must be 0 (unlimited) or more") }
        guard promptTtl >= 10, promptTtl <= 86_400 else { throw ValidationError("--prompt-ttl must be 10 to 86400 seconds") }
        guard presenceMoves == "push" || presenceMoves == "quiet" else { throw ValidationError("--presence-moves must be push or quiet") }
        guard Logger.Level(rawValue: logLevel) != nil else { throw ValidationError("unknown --log-level \(logLevel)") }
        guard (1...64).contains(writers) else { throw ValidationError("--writers must be 1 to 64") }
        guard (1...16).contains(batchesInFlight) else { throw ValidationError("--batches-in-flight must be 1 to 16") }
        guard dbTimeout > 0 else { throw ValidationError("--db-timeout must be positive") }
        guard idleTimeout > 0, handshakeTimeout > 0, maxPartialBytes > 0, maxOutputBytes > 0, maxConnections > 0, slowTimeout > 0, maxConnectionsPerUser > 0,
              maxHandshakesPerAddress > 0, maxHellosInFlight > 0, requestsPerSecond > 0, closeGrace > 0 else { throw ValidationError("limits must be positive") }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel)!
        LoggingSystem.bootstrap { label in
            var h = StreamLogHandler.standardError(label: label)
            h.logLevel = level
            return h
        }
        var config = ServerConfig()
        (config.host, config.port) = Self.splitAddress(listen)!
        // Checked now, so that a name that does not resolve stops the start
        // with a clear message; resolved again before each connection.
        do { _ = try ConnInfo.resolvingHost(database); config.conninfo = database } catch {
            var message = Array("rewind-server: \(error.message)\n".utf8)
            _ = message.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
            throw ExitCode(3)
        }
        // Options win over the environment (an Optional option cannot have a default).
        let masterKeyFile = self.masterKeyFile ?? env("REWIND_MASTER_KEY_FILE")
        let shortcuts = self.shortcuts ?? env("REWIND_SHORTCUTS")
        let allowedOrigins = self.allowedOrigins ?? env("REWIND_ALLOWED_ORIGINS")
        let webDir = self.webDir ?? env("REWIND_WEB_DIR")
        guard let masterKeyFile else {
            var message = Array("rewind-server: no master key: give --master-key-file FILE (or REWIND_MASTER_KEY_FILE); `rewind admin master-key create FILE` makes one\n".utf8)
            _ = message.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
            throw ExitCode(2)
        }
        do { config.masterKey = try MasterKey.read(masterKeyFile) } catch {
            var message = Array("rewind-server: \(error.message)\n".utf8)
            _ = message.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
            throw ExitCode(2)
        }
        config.writers = writers
        config.batchesInFlight = batchesInFlight
        config.metricsAddress = metrics.flatMap(Self.splitAddress)
        config.apiAddress = api.flatMap(Self.splitAddress)
        config.apiRequestsPerSecond = apiRequestsPerSecond
        config.deletedRetentionDays = deletedRetentionDays
        config.webhooks.enabled = webhooks
        config.webhooks.timeoutMs = UInt64(webhookTimeout * 1000)
        config.webhooks.concurrency = webhookConcurrency
        config.webhooks.leaseSeconds = webhookLease
        config.webhooks.retry = RetrySchedule(baseMs: UInt64(webhookRetryBase * 1000), capMs: 3_600_000)
        config.webhooks.giveUpAfterMs = UInt64(webhookGiveUpAfter * 1000)
        config.databaseTimeouts.connectMs = UInt64(dbTimeout) * 1000
        config.databaseTimeouts.statementMs = UInt64(dbTimeout) * 1000
        config.databaseTimeouts.answerMs = UInt64(dbTimeout) * 1000 + 2_000
        config.faultUnappliableVersion = faultUnappliableVersion
        config.sealsContent = !unsealedForBenchmarks
        config.idleTimeoutMs = UInt64(idleTimeout) * 1000
        config.handshakeTimeoutMs = UInt64(handshakeTimeout) * 1000
        config.maxPartialBytes = maxPartialBytes
        config.maxOutputBytes = maxOutputBytes
        config.maxConnections = maxConnections
        config.slowTimeoutMs = UInt64(slowTimeout) * 1000
        config.closeGraceMs = UInt64(closeGrace) * 1000
        config.maxConnectionsPerUser = maxConnectionsPerUser
        config.maxHandshakesPerAddress = maxHandshakesPerAddress
        config.maxHellosInFlight = maxHellosInFlight
        config.proxyProtocolFrom = Set(proxyProtocolFrom.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty })
        config.requestsPerSecond = Double(requestsPerSecond)
        config.requestBurst = 2 * Double(requestsPerSecond)
        config.typingWindowMs = typingWindow
        config.undoLevels = undoLevels
        config.promptTTLSeconds = promptTtl
        config.snapshotEvery = snapshotEvery
        config.snapshotBytesPerEvent = snapshotBytesPerEvent
        config.pushMovedPresence = presenceMoves == "push"
        config.allowedOrigins = WebRoute.Origins(allowedOrigins)
        config.publicOrigins = WebRoute.publicOrigins(self.publicOrigin ?? env("REWIND_PUBLIC_ORIGIN"))
        config.webDirectory = webDir
        do throws(RewindError) {
            if let file = jwtSecretFile ?? env("REWIND_JWT_SECRET_FILE") {
                guard var secret = readTextFile(file) else { throw RewindError(.notFound, "--jwt-secret-file: cannot read \(file)") }
                if secret.hasSuffix("\r\n") { secret.removeLast(1) } else if secret.hasSuffix("\n") { secret.removeLast() }
                guard secret.utf8.count >= 32 else {
                    throw RewindError(.badRequest, "--jwt-secret-file: \(file) holds \(secret.utf8.count) bytes; HS256 needs a secret of at least 32 (RFC 7518), e.g. `openssl rand -base64 48 > \(file)`")
                }
                config.tokenSecret = secret
            }
            if let file = jwksFile ?? env("REWIND_JWKS_FILE") {
                guard let text = readTextFile(file) else { throw RewindError(.notFound, "--jwks-file: cannot read \(file)") }
                config.tokenKeys = text
                config.tokenKeysFile = file
            }
            config.tokenPolicy = TokenPolicy(issuer: jwtIssuer ?? env("REWIND_JWT_ISSUER"), audience: jwtAudience ?? env("REWIND_JWT_AUDIENCE"),
                                             maxLifetime: Double(jwtMaxLifetime ?? env("REWIND_JWT_MAX_LIFETIME").flatMap { Int($0) } ?? 86_400),
                                             skew: Double(jwtClockSkew))
            config.tokenExpiryWarning = Double(jwtExpiryWarning)
        } catch {
            var message = Array("rewind-server: \(error.message)\n".utf8)
            _ = message.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
            throw ExitCode(2)
        }
        if let shortcuts {
            do throws(RewindError) {
                guard let text = readTextFile(shortcuts) else { throw RewindError(.notFound, "cannot read \(shortcuts)") }
                let json: JSON
                do { json = try JSONParser.parse(text, maxDepth: 16) } catch { throw RewindError(.badRequest, "not JSON: \(error.message) at byte \(error.offset)") }
                config.shortcuts = try Shortcuts.parseStatic(json)
            } catch {
                var message = Array("rewind-server: --shortcuts \(shortcuts): \(error.message)\n".utf8)
                _ = message.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
                throw ExitCode(2)
            }
        }
        let logger = Logger(label: "rewind")
        // Read now, not at the first hello: a server installed without its resources folder stops here, saying where it looked.
        logger.info("titles and prompts", metadata: ["locales": "\(Titles.locales.joined(separator: " "))"])
        let allocator = Allocator.describe()
        if allocator.servesMalloc {
            logger.info("memory allocator", metadata: ["malloc": "\(allocator.text)"])
        } else {
            logger.warning("jemalloc is linked but another malloc serves the process (an LD_PRELOAD, or a link order with libc first): the server runs, with more time in allocation",
                           metadata: ["malloc": "\(allocator.text)"])
        }
        let server = Server(config: config, logger: logger)
        do {
            try server.run(onMetricsListening: { port in
                // Before the listening line (the metrics endpoint does not wait for PostgreSQL).
                print("rewind-server metrics on \(config.metricsAddress!.host):\(port)")
                fflush(nil)
            }, onAPIListening: { port in
                // Before the listening line, with it.
                print("rewind-server api on \(config.apiAddress!.host):\(port)")
                fflush(nil)
            }) { port in
                // A line on stdout that scripts and tests can wait for.
                print("rewind-server listening on \(config.host):\(port)")
                fflush(nil)
            }
        } catch {
            // Not a usage problem: say what went wrong, without the usage text.
            var message = Array("rewind-server: \(error)\n".utf8)
            _ = message.withUnsafeMutableBytes { write(2, $0.baseAddress, $0.count) }
            throw ExitCode.failure
        }
    }

    static func splitAddress(_ s: String) -> (String, Int)? {
        guard let colon = s.lastIndex(of: ":"), let port = Int(s[s.index(after: colon)...]), (0...65535).contains(port) else { return nil }
        var host = String(s[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
    }
}

func env(_ name: String) -> String? {
    guard let p = getenv(name) else { return nil }
    let s = String(decoding: UnsafeRawBufferPointer(start: p, count: strlen(p)), as: UTF8.self)
    return s.isEmpty ? nil : s
}

RewindServerCommand.main()
