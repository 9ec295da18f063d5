import Glibc
import Logging
import RewindCore
import RewindLoop
import RewindStore

/// The Rewind server: one libuv loop that accepts terminals, speaks the wire
/// protocol, and drives PostgreSQL through the store on the same loop.
///
/// A `submit` travels: `Connection` (bytes → frames) → `Server.handle`
/// (frames → requests, with the `Session` its hello made: `Handlers.swift`) →
/// `DocumentRequests.submit` → `DocumentRuntime.run` (core: rebase, apply,
/// event) → `EventStore.append` (sent at the end of the loop turn:
/// `EndOfTurn.swift`) → `DocumentRuntime.appendDone` (broadcast, then reply);
/// docs/architecture.md walks it row by row.
///
/// It wires collaborators that each own their state and are given, when
/// made, the others they use (none reaches a sibling through the server):
/// the connections (`Sessions`), the loaded documents (`Documents`), roles
/// (`AccessControl`), other instances (`Cluster`), prompts, presence,
/// admission, metrics, and one request type per subsystem. What remains
/// here is the lifecycle and what a connection's or a document's coming
/// and going means for the rest.
public final class Server {
    public let config: ServerConfig
    let loop: EventLoop
    let logger: Logger
    let serverName = "rewind/0.1"
    /// Milliseconds by the loop's clock, which a test can move on (`advanceClock`).
    let clock: ServerClock
    /// The web editor's files (`GET /`, `GET /<module>.js`), read at start.
    let webFiles: WebFiles
    /// `--metrics`: what is counted (nil without it: nothing is).
    let metrics: ServerMetrics?
    let store: EventStore
    /// PostgreSQL's notices to this server (role changes, revoked tokens).
    let notifications: Notifications
    /// A listener on each shard other than `home` (the catalog's is `notifications`).
    let shardListeners: ShardListeners

    // The collaborators, each owning its state, made in this order in `init`
    // and given, when made, the others they use (none reaches a sibling
    // through the server); what they tell the server is wired after (`wire`).
    /// The connections, their sessions and their turns on the loop (`Sessions.swift`).
    let sessions = Sessions()
    /// The documents loaded here (`Documents.swift`).
    let documents: Documents
    /// The undo group each terminal holds open per document (`Undo/OpenGroups.swift`).
    let openGroups = OpenGroups()
    /// News to and from the other instances on the database (`Cluster/Cluster.swift`).
    let cluster: Cluster
    /// Each connected user's quick actions (`QuickActions/QuickActions.swift`).
    let quickActions: QuickActions
    /// Roles per document (`Access/AccessControl.swift`).
    let access: AccessControl
    /// Admission (`Admission.swift`): connections per user and in all, handshakes and failed hellos per address.
    let admission: AdmissionGate
    /// Hellos being checked at once (`HelloGate.swift`).
    let helloGate: HelloGate
    /// `share` and `delete_doc` (`Access/SharingRequests.swift`).
    let sharing: SharingRequests
    let library: LibraryRequests
    /// Prompts presented or waiting on some terminal, who holds which, and their answers (`Prompts/PromptCenter.swift`).
    let prompts: PromptCenter
    /// Each terminal's `prompt_state`, and the ones this turn's edits may have changed (`Prompts/PromptStates.swift`).
    let promptStates: PromptStates
    /// Presence pushed to terminals and other instances (`Chain/PresenceRelay.swift`).
    let presence: PresenceRelay
    /// `create_doc`, `open`, `submit`, and running a request in a document's order (`DocumentRequests.swift`).
    let documentRequests: DocumentRequests
    /// Groups, undo and redo, history (`Undo/UndoRequests.swift`).
    let undo: UndoRequests
    /// `perform`, `gesture`, `validate`: the responder chain (`Chain/ChainRequests.swift`).
    let chain: ChainRequests
    /// `motion` (shake to undo, `Prompts/ShakeRequests.swift`).
    let shake: ShakeRequests
    /// `scrub`, `peek`, `pop`, `preview_action`: documents as they were (`QuickActions/PastStates.swift`).
    let pastStates: PastStates
    /// `shortcut` and launch shortcuts (`QuickActions/ShortcutRequests.swift`).
    let shortcuts: ShortcutRequests
    /// `focus`, `blur`, `select`, `hit_test` (`Chain/FocusRequests.swift`).
    let focusRequests: FocusRequests
    /// What every connection reads (`ConnectionHost.swift`).
    /// Made on first use: it holds the server itself.
    private lazy var connectionSettings = ConnectionSettings(host: self, config: config, logger: logger, metrics: metrics, webFiles: webFiles)
    /// Signed tokens from the app (`Identity/TokenVerifier.swift`), when configured; made by `start`.
    var tokens: TokenVerifier?
    /// When the JWKS file was last read for an unknown `kid` (ms by `now`): at most once a minute.
    var tokenKeysReadAt: UInt64?
    /// The sessions that began with a signed token, and when it expires (`Identity/SignedSessions.swift`).
    let signedSessions = SignedSessions()

    private var listener: TCPListener?
    private var metricsEndpoint: MetricsEndpoint?
    /// `--api`: the HTTP API for applications' backends (`API/`).
    private(set) var api: ServerAPI?
    /// This instance's share of webhook deliveries (nil: `--no-webhooks`, or not serving yet).
    private(set) var webhooks: WebhookDelivery?
    /// The end of every loop turn, in its phases (`EndOfTurn.swift`).
    private var endOfTurn: BeforeSleep?
    /// The order `endTurn` runs its phases in (a test changes it to show why it is this one).
    var endOfTurnOrder = EndOfTurnPhase.allCases
    private var sweeper: Timer?
    private var signals: [SignalWatcher] = []
    private(set) var shuttingDown = false
    /// Until PostgreSQL answers, at most `startupWaitMs`; then the listener opens anyway.
    private var startupWait: Timer?
    /// Running from `shutdown` until the last commits are answered, at most `shutdownGraceMs`.
    private var shutdownGrace: Timer?
    /// When stored prompts were last checked for expiry (`sweep`, every 30 s).
    private var lastPromptSweep: UInt64 = 0

    /// Milliseconds by the loop's clock: what timeouts and rate limits read,
    /// so that a server test can make time pass without waiting for it.
    var now: UInt64 { clock.now }
    /// Moves `now` on by `ms` (tests; the next sweep sees it).
    func advanceClock(by ms: UInt64) { clock.advance += ms }

    public init(config: ServerConfig, logger: Logger) {
        self.config = config
        self.logger = logger
        webFiles = WebFiles(directory: config.webDirectory)
        let loop = EventLoop()
        self.loop = loop
        let clock = ServerClock(loop: loop)
        self.clock = clock
        guard let masterKey = config.masterKey else { preconditionFailure("ServerConfig.masterKey is required (--master-key-file)") }
        // The server runs the end of the loop turn, the store's batches in it (`endTurn`).
        let store = EventStore(loop: loop, conninfo: config.conninfo, writers: config.writers, timeouts: config.databaseTimeouts,
                               masterKey: masterKey, logger: logger, endOfTurn: .byCaller)
        store.maxBatchesInFlight = config.batchesInFlight
        self.store = store
        // An instance id for liveness and groups (`Notifications`): random, positive.
        let instance = Int32.random(in: 1...Int32.max)
        let notifications = Notifications(loop: loop, conninfo: config.conninfo,
                                          channels: ["rewind_access", "rewind_log", "rewind_presence", "rewind_editors", "rewind_prompts"],
                                          instance: instance, timeouts: config.databaseTimeouts, logger: logger)
        self.notifications = notifications
        shardListeners = ShardListeners(loop: loop, instance: instance, timeouts: config.databaseTimeouts, logger: logger)
        let metrics = config.metricsAddress == nil ? nil : ServerMetrics(version: serverName)
        self.metrics = metrics
        if let metrics {
            store.onBatchAnswered = { entries, nanoseconds in metrics.batchAnswered(entries: entries, nanoseconds: nanoseconds) }
        }

        let documents = Documents { id in DocumentRuntime(id: id, store: store, config: config, logger: logger, loop: loop) }
        self.documents = documents
        cluster = Cluster(notifications: notifications, loop: loop, logger: logger, instance: instance,
                          loaded: { documents.all }, existing: { documents[$0] })
        quickActions = QuickActions(store: store, loop: loop, logger: logger, staticItems: config.shortcuts)
        access = AccessControl(store: store, logger: logger, isListening: { notifications.isListening },
                               served: { doc in
                                   let d = documents[doc]
                                   return (d != nil, !(d?.subscribers.isEmpty ?? true))
                               })
        admission = AdmissionGate(config: config, logger: logger, sessions: sessions, clock: { clock.now })
        helloGate = HelloGate(limit: config.maxHellosInFlight)
        sharing = SharingRequests(store: store, access: access, config: config, logger: logger, clock: { clock.now })
        library = LibraryRequests(store: store, config: config, logger: logger)
        prompts = PromptCenter(sessions: sessions, store: store, logger: logger, instance: instance,
                               ttl: config.promptTTLSeconds, clock: { clock.now })
        promptStates = PromptStates(prompts: prompts, access: access, documents: documents)
        presence = PresenceRelay(cluster: cluster, promptStates: promptStates)
        documentRequests = DocumentRequests(config: config, store: store, documents: documents, presence: presence,
                                            promptStates: promptStates, openGroups: openGroups, instance: Int64(instance))
        undo = UndoRequests(config: config, documents: documents, documentRequests: documentRequests, access: access,
                            presence: presence, prompts: prompts, metrics: metrics, groups: openGroups)
        chain = ChainRequests(limits: config.limits, access: access, undo: undo, documentRequests: documentRequests, presence: presence)
        shake = ShakeRequests(prompts: prompts, access: access, undo: undo, documentRequests: documentRequests)
        pastStates = PastStates(config: config, store: store, documents: documents, documentRequests: documentRequests,
                                access: access, presence: presence, sharing: sharing)
        shortcuts = ShortcutRequests(store: store)
        focusRequests = FocusRequests(presence: presence, limits: config.limits)
        wire()
    }

    /// What the collaborators tell the server, and what the server does about it.
    private func wire() {
        wireStoredPrompts()
        documents.onMade = { [unowned self] d in
            d.onEffect = { [unowned self, unowned d] effect in self.carryOut(effect, for: d) }
            d.groupsHeldHere = { [unowned self, unowned d] in self.openGroups.ids(in: d.id) }
        }
        documents.onUnloaded = { [unowned self] d in
            self.prompts.forget(doc: d.id)
            self.store.keys.forget(d.id)
            self.store.forgetPlacement(d.id)
        }
        documents.onSettled = { [unowned self] in if self.shuttingDown { self.finishShutdownIfDone() } }
        access.notBefore = { [unowned self] since, body in
            let floor = AccessControl.notFoundFloorMs * 1_000_000
            // Checked again when the timer fires: libuv counts from the loop's cached
            // time, which may lag, and a timer due in 5 ms once ran after 4.7 (CI).
            func runAtTheFloor() {
                let elapsed = monotonicNanos() - since
                guard elapsed < floor else { return body() }
                let t = Timer(loop: self.loop)
                t.start(after: (floor - elapsed + 999_999) / 1_000_000) {
                    t.close()
                    runAtTheFloor()
                }
            }
            runAtTheFloor()
        }
        access.granted = { [unowned self] session, doc in self.signedSessions.grantedRole(session, on: doc) }
        access.onEffect = { [unowned self] effect in
            switch effect {
            case let .accessChanged(doc, roles): self.accessChanged(doc, roles)
            case let .quickActionsMayHaveChanged(doc): self.quickActions.accessChanged(doc: doc)
            case let .tokensRevoked(user): self.tokensRevoked(user: user)
            case let .tokensDenied(issuer, subject, tokenID): self.tokensDenied(issuer: issuer, subject: subject, tokenID: tokenID)
            case let .userErased(user, pseudonym): self.userErased(user, pseudonym: pseudonym)
            case let .renamed(doc): self.renamed(doc)
            }
        }
        prompts.onPresentedChanged = { [unowned self] c in
            for doc in c.openDocuments {
                if let d = self.documents[doc] { self.promptStates.push(d, to: c) }
            }
        }
        shortcuts.dispatch = { [unowned self] r, c throws(RewindError) in try self.dispatch(r, from: c.connection, c) }
        shortcuts.creationRefusal = { [unowned self] doc, c in self.creationRefusal(doc, c) }
        documentRequests.creationRefusal = { [unowned self] doc, c in self.creationRefusal(doc, c) }
        cluster.onEffect = { [unowned self] effect in
            switch effect {
            case let .editorsNotice(payload): self.quickActions.notice(payload)
            case let .accessNotice(payload): if !self.shardNotice(payload) { self.access.notice(payload) }
            case let .promptEnded(payload): self.prompts.storedPromptNotice(payload)
            case .resync:
                self.access.resync()
                self.quickActions.resync()
                self.prompts.resync()
            case let .announce(effects, d): self.presence.announce(effects, in: d)
            case let .tookOver(user, client, at):
                // An older session only: notices of two quick reconnects may cross (hosts' clocks are assumed close).
                if let old = self.sessions.client(user: user, client: client), old.helloAt <= at {
                    old.close(reason: "replaced", retry: false, message: "another connection took over client \"\(client)\" (on another server instance)")
                }
            }
        }
    }

    /// Connects to PostgreSQL, listens, and runs the loop until shutdown.
    ///
    /// Listening starts once the database answers (or after `startupWaitMs`
    /// without it, to serve `unavailable` rather than refuse connections), so
    /// a fresh server does not greet its first terminals with errors. The
    /// metrics endpoint (`--metrics`) listens at once: `/health` says why
    /// the database is not reachable meanwhile.
    public func run(onMetricsListening: ((Int) -> Void)? = nil, onAPIListening: ((Int) -> Void)? = nil, onListening: ((Int) -> Void)? = nil) throws {
        try start(onMetricsListening: onMetricsListening, onAPIListening: onAPIListening, onListening: onListening)
        loop.run()
        if let listenError { throw listenError }
        logger.info("stopped")
    }

    /// Why listening failed (`run` throws it once the loop has ended).
    private var listenError: Error?

    /// Everything `run` does before it runs the loop: a test steps the loop itself (`EventLoop.runOnce`).
    func start(onMetricsListening: ((Int) -> Void)? = nil, onAPIListening: ((Int) -> Void)? = nil, onListening: ((Int) -> Void)? = nil) throws {
        signal(SIGPIPE, SIG_IGN)
        if config.tokenSecret != nil || config.tokenKeys != nil {
            let verifier = try TokenVerifier(secret: config.tokenSecret, jwks: config.tokenKeys)
            tokens = verifier
            logger.info("signed tokens accepted", metadata: ["algorithms": "\(verifier.algorithms.sorted().joined(separator: ","))",
                                                             "keys": "\(verifier.kids.count)"])
        }
        if let address = config.metricsAddress {
            let health = HealthCheck(store: store, notifications: notifications, sessions: sessions, helloGate: helloGate, documents: documents, metrics: metrics,
                                     loop: loop, statementTimeoutMs: config.databaseTimeouts.statementMs,
                                     shuttingDown: { [unowned self] in self.shuttingDown })
            let endpoint = MetricsEndpoint(loop: loop, logger: logger, metricsText: health.metricsText, checkHealth: health.check)
            let port = try endpoint.start(host: address.host, port: address.port)
            metricsEndpoint = endpoint
            logger.info("metrics endpoint listening", metadata: ["address": "\(address.host):\(port)"])
            onMetricsListening?(port)
        }
        let wait = Timer(loop: loop)
        startupWait = wait
        let startListening = { [unowned self] in
            guard self.listener == nil, !self.shuttingDown else { return }
            wait.close()
            do {
                if let address = self.config.apiAddress {
                    let api = ServerAPI(loop: self.loop, logger: self.logger, limits: self.config.apiLimits, clock: { [unowned self] in self.now })
                    api.handle = { [unowned self] r, key, done in self.answerAPI(r, key: key, done) }
                    api.lookUpKey = { [unowned self] token, done in self.store.apiKey(token, done) }
                    api.onAnswered = { [unowned self] status in self.metrics?.apiAnswered(status) }
                    let port = try api.start(host: address.host, port: address.port)
                    self.api = api
                    self.logger.info("API listening", metadata: ["address": "\(address.host):\(port)"])
                    onAPIListening?(port)
                }
                if self.config.webhooks.enabled {
                    let delivery = WebhookDelivery(settings: self.config.webhooks, conninfo: self.config.conninfo,
                                                   content: DocumentKeys(master: self.store.keys.master), loop: self.loop,
                                                   logger: self.logger, clock: { [unowned self] in self.now })
                    delivery.onPosted = { [unowned self] ok in self.metrics?.webhookPosted(ok) }
                    delivery.start()
                    self.webhooks = delivery
                }
                let listener = TCPListener(loop: self.loop)
                listener.onAcceptError = { [unowned self] code in self.admission.acceptFailed(code) }
                try listener.listen(host: self.config.host, port: self.config.port, making: { [unowned self] loop in self.makeConnection(loop) }) { [unowned self] c in self.accept(c) }
                self.listener = listener
                self.logger.info("listening", metadata: ["address": "\(self.config.host):\(listener.port)"])
                onListening?(listener.port)
            } catch {
                self.listenError = error
                self.shutdown()
            }
        }
        var schemaChecked = false, masterKeyChecked = false, shardsRead = false
        store.onReady = { [unowned self] in
            // Once, before serving: the database's schema must be this release's
            // (a server upgraded without `rewind admin migrate` would otherwise
            // wait for tables that are not there, saying PostgreSQL is unreachable).
            guard schemaChecked else {
                return self.store.appliedMigration { [unowned self] result in
                    switch result {
                    case let .failure(e) where e.code == .internal:
                        // PostgreSQL refused the read itself (a role without SELECT on
                        // schema_migrations): a guard, not a reason not to serve.
                        self.logger.warning("cannot read the schema's version; serving without checking it", metadata: ["error": "\(e.message)"])
                    case .failure:
                        return  // PostgreSQL went away: the next onReady asks again
                    case let .success(applied):
                        if let refusal = Migrations.refusal(applied: applied) {
                            self.logger.critical("database schema behind this release; not serving", metadata: ["error": "\(refusal.message)"])
                            self.listenError = refusal
                            return self.shutdown()
                        }
                    }
                    // A log restored into another cluster: new positions would fall below old ones (schema/021).
                    self.store.logPositionsNeedRepair { [unowned self] result in
                        if case .success(true) = result {
                            let refusal = RewindError(.unavailable, "the log's positions are ahead of this PostgreSQL cluster's transaction ids (a database restored into another cluster?): run `rewind admin migrate`, which raises them, then start again")
                            self.logger.critical("log positions ahead of the cluster; not serving", metadata: ["error": "\(refusal.message)"])
                            self.listenError = refusal
                            return self.shutdown()
                        }
                        schemaChecked = true
                        self.store.onReady()
                    }
                    return
                }
            }
            // Once, before serving: the database's data keys must be wrapped with our master key.
            guard masterKeyChecked else {
                return self.store.claimMasterKey { [unowned self] error in
                    if let error, error.code == .forbidden {
                        self.logger.critical("wrong master key; not serving", metadata: ["error": "\(error.message)"])
                        self.listenError = error
                        return self.shutdown()
                    }
                    guard error == nil else { return }  // PostgreSQL went away: the next onReady asks again
                    masterKeyChecked = true
                    self.store.onReady()
                }
            }
            // Once, before serving: the shards other than `home` and where new documents go (schema/028).
            guard shardsRead else {
                return self.store.reloadShards { [unowned self] error in
                    guard error == nil else { return }  // PostgreSQL went away: the next onReady reads them
                    self.store.awaitShards(withinMs: self.config.startupWaitMs) { [unowned self] in
                        shardsRead = true
                        self.store.onReady()
                    }
                }
            }
            startListening()
            // Back after losing PostgreSQL: a catch-up that failed meanwhile left documents behind.
            for d in self.documents.all { d.logMayHaveMoved() }
        }
        wireShards()
        wait.start(after: config.startupWaitMs) { [unowned self] in
            self.logger.warning("PostgreSQL not reachable yet; listening anyway (requests get `unavailable` until it is)")
            startListening()
        }
        admission.fitDescriptorLimit()
        notifications.onNotice = { [unowned self] channel, payload in self.cluster.notice(channel: channel, payload: payload) }
        notifications.onListening = { [unowned self] in
            self.store.forgetPlacements()  // a move's notices may have been missed meanwhile
            self.cluster.listening()
        }
        store.start()
        notifications.start()
        sessions.start(loop: loop)
        endOfTurn = startEndOfTurn()
        let sweeper = Timer(loop: loop)
        sweeper.start(after: 1_000, repeat: 1_000) { [unowned self] in self.sweep() }
        sweeper.unref()
        self.sweeper = sweeper
        if config.tokenKeysFile != nil {
            signals.append(SignalWatcher(loop: loop, signal: SIGHUP) { [unowned self] _ in
                self.readTokenKeysAgain(why: "SIGHUP")
            })
        }
        for sig in [SIGINT, SIGTERM] {
            signals.append(SignalWatcher(loop: loop, signal: sig) { [unowned self] s in
                self.logger.info("signal \(s): shutting down")
                self.shutdown()
            })
        }
    }

    // MARK: Connections

    /// A terminal's connection and its socket, one allocation (`TCPSocket`), before it is accepted.
    private func makeConnection(_ loop: EventLoop) -> Connection {
        Connection(id: sessions.newID(), loop: loop, settings: connectionSettings)
    }

    private func accept(_ c: Connection) {
        c.accepted()
        if shuttingDown {
            c.close(reason: "shutdown", retry: true, message: "server shutting down")
            return
        }
        guard admission.hasRoom(for: c) else { return }
        if config.proxyProtocolFrom.contains(c.address) {
            c.expectProxyHeader()  // admitted once the header names the client
        } else {
            admission.admitHandshake(c)  // or refused, and told once its first bytes are read
        }
        sessions.add(c)
        c.start()
    }

    /// A trusted balancer's PROXY header was read: the client it names is admitted (or refused) now.
    func proxyHeaderRead(_ c: Connection) { admission.admitHandshake(c) }

    /// Forgets a connection, and the session made on it: its documents, its
    /// client id, and what each subsystem kept for the terminal. Called once per connection.
    func connectionEnded(_ c: Connection, reason: String) {
        guard let session = sessions.remove(c) else { return }
        if !c.isClosed { c.endNow() }
        admission.ended(c, session)
        partialLineChanged(c, to: 0)
        if let s = session {
            quickActions.left(s)
            prompts.cancel(of: s, doc: nil)  // what it showed is cancelled (SPEC section 6)
            // A disconnect closes the terminal's open groups; no ghosts: the others see it leave at once.
            for doc in s.openDocuments { leaveDocument(s, doc, cancellingPrompts: false) }
            pastStates.left(s, doc: nil)
            promptStates.left(s, doc: nil)
            chain.left(s)
        }
        logger.debug("connection ended", metadata: ["conn": "\(session?.label ?? c.label)", "reason": "\(reason)"])
        if let s = session { signedSessions.left(s.id) }  // after the log: its label names the handle the table keeps
        if shuttingDown { finishShutdownIfDone() }
    }

    /// `c` leaves `doc` (close, disconnect, access lost): its open group
    /// closes, its scrub there ends, its prompts about it are cancelled, its presence goes.
    func leaveDocument(_ c: Session, _ doc: String, cancellingPrompts: Bool = true) {
        guard c.openDocuments.remove(doc) != nil else { return }
        pastStates.left(c, doc: doc)
        undo.closeTerminalGroup(c, doc: doc)
        if cancellingPrompts { prompts.cancel(of: c, doc: doc) }
        promptStates.left(c, doc: doc)
        if let d = documents[doc] {
            presence.leave(d, c)
            d.unsubscribe(c)
            documents.mayBeIdle(d)
        }
    }

    /// `c` used its share of this turn: it goes on at the next, after the others.
    func continueNextTurn(_ c: Connection) { sessions.continueNextTurn(c) }

    /// Keeps the server-wide count of bytes held in incomplete lines; the
    /// connection that takes it past `--max-partial-bytes` is closed.
    func partialLineChanged(_ c: Connection, to bytes: Int) {
        if sessions.partialLineChanged(c, to: bytes, limit: config.maxPartialBytes) && !c.isClosed {
            logger.warning("too many bytes held in incomplete lines", metadata: ["conn": "\(c.label)", "held": "\(sessions.partialBytes)"])
            c.close(reason: "rate_limited", retry: true,
                    message: "the server holds too many incomplete lines; send whole lines, each ending in a newline")
        }
    }

    /// A connection became a WebSocket (`Connection+Web.swift`).
    func webSocketOpened(_ c: Connection) {
        logger.debug("websocket", metadata: ["conn": "\(c.label)"])
    }

    func closeAfterTurn(_ c: Connection) { sessions.closeAfterTurn(c) }

    func resetLater(_ socket: TCPSocket) { sessions.resetLater(socket, at: now + config.closeGraceMs) }

    /// Closes connections that went silent or never said hello.
    func sweep() {
        let now = self.now
        sessions.resetOverdue(now: now)
        for c in sessions.all {
            if let r = c.refusal, now >= r.until {
                c.close(reason: r.reason, retry: true, message: r.message)  // said nothing: told in NDJSON
            } else if sessions.session(of: c) == nil && c.inbox.processing == 0 && now - c.lastHeard > config.handshakeTimeoutMs {
                // (A hello being answered stops the clock: the terminal has said it. In a storm of
                // thousands, the last hellos wait their turn (`HelloGate`) longer than the timeout.)
                c.close(reason: "handshake_timeout", retry: true, message: "no hello within \(config.handshakeTimeoutMs / 1000) s")
            } else if let since = c.partialSince, now - since > config.handshakeTimeoutMs {
                c.close(reason: "partial_line", retry: true,
                        message: "an incomplete line was held for more than \(config.handshakeTimeoutMs / 1000) s; end each line with a newline")
            } else if let since = c.overBoundSince, now - since > config.slowTimeoutMs {
                c.slow("output unread for \(config.slowTimeoutMs / 1000) s")
            } else if now - c.lastHeard > config.idleTimeoutMs {
                c.close(reason: "idle", retry: true, message: "no complete line for \(config.idleTimeoutMs / 1000) s; send ping every 15 s")
            } else if now - c.lastHeard > config.idleTimeoutMs / 3 {
                c.keepAlive()  // a WebSocket: pinged, and its pong counts as activity
            }
        }
        tokensSweep()
        api?.sweep()
        admission.sweep()
        cluster.sweep(now: now)
        if now - lastPromptSweep >= 30_000 {
            lastPromptSweep = now
            prompts.expire()
        }
    }

    // MARK: Documents

    /// What a document's runtime asks of the rest of the server (`DocumentRuntime.Effect`), done here.
    private func carryOut(_ effect: DocumentRuntime.Effect, for d: DocumentRuntime) {
        switch effect {
        case .mayBeIdle: documents.mayBeIdle(d)
        case .halted: documentHalted(d)
        case let .promptStateMayHaveChanged(user): promptStates.mayHaveChanged(d, user: user)
        case let .committed(event):
            promptStates.mayHaveChangedThisTurn(d, user: event.userID)
            presence.after(d, event)
        case .firstLoaded: cluster.ask(d)
        }
    }

    /// A document stopped (`DocumentRuntime.halt`): its terminals are told
    /// `closed` (reason `internal`) and it is unloaded; the next `open` reads
    /// it from the log again.
    func documentHalted(_ d: DocumentRuntime) {
        for c in Array(d.subscribers.values) {
            leaveDocument(c, d.id)
            c.push(SharedBytes(Push.closed(doc: d.id, reason: "internal")))
        }
        documents.unload(d)
    }

    // MARK: Shutdown

    /// Stops accepting, lets commits under way finish and be answered, says
    /// `bye` (retry: true) to everyone, and ends the loop.
    public func shutdown() {
        guard !shuttingDown else { return }
        shuttingDown = true
        listener?.close()
        listener = nil
        api?.stop()
        webhooks?.stop()
        for s in signals { s.close() }
        signals = []
        // Refused before serving (schema, master key) or stopped during the
        // wait: the wait would keep the loop, and the process, for the rest of it.
        startupWait?.close()
        startupWait = nil
        let grace = Timer(loop: loop)
        grace.start(after: config.shutdownGraceMs) { [unowned self] in
            self.logger.warning("shutdown grace period over; closing with commits still outstanding")
            self.finishShutdown()
        }
        grace.unref()
        shutdownGrace = grace
        finishShutdownIfDone()
    }

    private func finishShutdownIfDone() {
        guard shuttingDown, store.appendsOutstanding == 0, !documents.anyPending else { return }
        finishShutdown()
    }

    private var finished = false

    private func finishShutdown() {
        guard !finished else { return }
        finished = true
        shutdownGrace?.close()  // done: it would warn of commits outstanding that are not
        shutdownGrace = nil
        for c in sessions.all { c.close(reason: "shutdown", retry: true, message: "server shutting down; reconnect") }
        endTurn()
        endOfTurn?.close()
        sweeper?.close()
        sessions.stop()
        cluster.stop()
        notifications.stop()
        shardListeners.stop()
        store.stop()
        metricsEndpoint?.stop()
    }
}
