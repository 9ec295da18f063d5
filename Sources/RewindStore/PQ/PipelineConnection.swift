import CLibPQ
import Logging
import RewindCore
import RewindLoop

/// One libpq connection in pipeline mode, driven by the libuv loop.
///
/// Work is sent in *units*: a few statements followed by one Sync. Everything
/// up to a Sync is one implicit transaction, so a unit of many appends is one
/// commit (group commit). Units are answered in the order they were sent.
/// When the connection drops, every unit in flight fails with `unavailable`
/// and the connection comes back by itself.
public final class PipelineConnection {
    public struct Statement: Sendable {
        public var sql: String
        public var params: [Param]
        /// The name of a statement prepared on every (re)connect (`prepare`):
        /// sent without its text, planned once per connection, not per call.
        public var prepared: String?
        /// Answered with the result itself (`Outcome.result`), to be read in
        /// place — on the thread pool, for a large read — rather than made
        /// into `Rows` of text here, on the loop.
        var inPlace = false
        /// A parameter in text form (what `psql` would show), or in PostgreSQL's
        /// binary form (arrays of a batch: no escaping, no parsing).
        public enum Param: Sendable {
            case text(String?)
            case binary([UInt8])
        }
        public init(_ sql: String, _ params: [String?] = []) { self.sql = sql; self.params = params.map { .text($0) } }
        public init(_ sql: String, values: [Param]) { self.sql = sql; self.params = values }
    }

    /// How long to wait for PostgreSQL before giving up on the connection.
    public struct Timeouts: Sendable {
        /// Connecting (libpq's `connect_timeout` when the conninfo sets it).
        public var connectMs: UInt64 = 10_000
        /// The oldest unit in flight going unanswered: the connection is then
        /// treated as lost (requests fail `unavailable`) and made again.
        public var answerMs: UInt64 = 15_000
        /// `statement_timeout` of the session (PostgreSQL cancels longer statements).
        public var statementMs: UInt64 = 10_000
        public init() {}
    }

    /// Per statement: its rows, or why it failed (`aborted` after an earlier failure in the unit).
    public enum Outcome {
        case rows(Rows)
        /// A statement's rows as libpq gave them (`Statement.inPlace`).
        case result(ResultRows)
        case failed(SQLFailure)
        case aborted
    }

    private struct Unit {
        var count: Int
        var sentAt: UInt64
        /// Indexes of the statements answered in place.
        var inPlace: Set<Int> = []
        var outcomes: [Outcome] = []
        var completion: (Result<[Outcome], RewindError>) -> Void
    }

    private enum State { case idle, connecting, ready }

    private let loop: EventLoop
    private let conninfo: String
    private let logger: Logger
    private var conn: OpaquePointer?
    private var watcher: FDWatcher?
    private var state = State.idle
    private var inflight: [Unit] = []
    private var inflightHead = 0
    private var resultPending = false
    private let retryTimer: Timer
    private var retryDelay: UInt64 = 100
    private var stopped = false
    private let timeouts: Timeouts
    private let connectTimer: Timer
    private let answerTimer: Timer

    /// Called each time the connection becomes ready (first time and after reconnects).
    public var onReady: () -> Void = {}
    /// Called when an established connection is lost.
    public var onLost: () -> Void = {}
    /// Called for each notification (`LISTEN`): channel and payload.
    public var onNotify: (String, String) -> Void = { _, _ in }

    /// Only a writable primary will do (the server's connections): libpq is
    /// asked for one (`target_session_attrs=read-write` unless the conninfo
    /// says otherwise), a statement refused as read-only (SQLSTATE 25006)
    /// drops the connection, and every 2 s the server is asked whether it is
    /// still one (a primary demoted after a failover keeps its sessions, but
    /// no longer receives writes or sends the new primary's notifications).
    private let requiresPrimary: Bool
    private var primaryCheckTick = 0
    /// Connections dropped because the server was not (or no longer) a writable primary.
    public private(set) var leftReadOnly = 0

    public init(loop: EventLoop, conninfo: String, timeouts: Timeouts = Timeouts(), requiresPrimary: Bool = false, logger: Logger) {
        self.loop = loop
        self.requiresPrimary = requiresPrimary
        self.conninfo = requiresPrimary ? ConnInfo.requiringPrimary(conninfo) : conninfo
        self.logger = logger
        var t = timeouts
        if let s = ConnInfo.value("connect_timeout", in: conninfo), let n = UInt64(s), n > 0 { t.connectMs = n * 1000 }
        self.timeouts = t
        retryTimer = Timer(loop: loop)
        connectTimer = Timer(loop: loop)
        answerTimer = Timer(loop: loop)
        answerTimer.unref()
    }

    public var isReady: Bool { state == .ready }

    /// Times this connection was made again after an established one was lost (metrics).
    public private(set) var reconnects = 0
    private var wasReady = false
    /// Why the last attempt to connect failed, or the connection was lost (nil once ready again).
    public private(set) var lastFailure: String?

    private var preparedStatements: [(name: String, sql: String)] = []
    /// `SET` statements run on every (re)connect, before anything else.
    private var sessionSettings: [String] = []

    /// Runs `sql` (a `SET …`) on this connection now and after every reconnect.
    public func setting(_ sql: String) { sessionSettings.append(sql) }

    /// Prepares `sql` as `name` on this connection, now and after every
    /// reconnect; statements with `prepared: name` then skip parsing and planning.
    public func prepare(_ name: String, _ sql: String) { preparedStatements.append((name, sql)) }

    public func start() { connect() }

    public func stop() {
        stopped = true
        retryTimer.close()
        connectTimer.close()
        answerTimer.close()
        teardown(reason: "server shutting down")
    }

    /// Sends `statements` as one unit (one transaction). `completion` runs once.
    public func send(_ statements: [Statement], completion: @escaping (Result<[Outcome], RewindError>) -> Void) {
        guard state == .ready, let conn else {
            completion(.failure(.storage("not connected to PostgreSQL")))
            return
        }
        for s in statements {
            let ok = PQ.withParams(s.params) { values, lengths, formats in
                if let name = s.prepared { return PQsendQueryPrepared(conn, name, Int32(s.params.count), values, lengths, formats, 0) }
                return PQsendQueryParams(conn, s.sql, Int32(s.params.count), nil, values, lengths, formats, 0)
            }
            if ok == 0 {
                completion(.failure(.storage(PQ.string(PQerrorMessage(conn)).trimmingSpace)))
                lost()
                return
            }
        }
        guard PQpipelineSync(conn) == 1 else {
            completion(.failure(.storage(PQ.string(PQerrorMessage(conn)).trimmingSpace)))
            lost()
            return
        }
        let inPlace = Set(statements.indices.filter { statements[$0].inPlace })
        inflight.append(Unit(count: statements.count, sentAt: loop.now, inPlace: inPlace, completion: completion))
        flush()
    }

    public var unitsInFlight: Int { inflight.count - inflightHead }

    // MARK: Connecting

    private func connect() {
        guard !stopped, state == .idle else { return }
        state = .connecting
        // Host names are resolved on libuv's thread pool, again for each
        // connect (libpq would do it on this thread, and only once we pass
        // it addresses does it not).
        guard ConnInfo.namesHosts(conninfo) else { return start(conninfo) }
        let info = conninfo
        BackgroundWork.run(on: loop, { () -> Result<String, RewindError> in
            do throws(RewindError) { return .success(try ConnInfo.resolvingHost(info)) } catch { return .failure(error) }
        }, done: { [weak self] result in
            guard let self, !self.stopped, self.state == .connecting else { return }
            switch result {
            case let .success(resolved): self.start(resolved)
            case let .failure(e): self.retryLater(e.message)
            }
        })
    }

    private func start(_ conninfo: String) {
        guard let c = PQconnectStart(conninfo) else {
            retryLater("cannot start a connection (out of memory)")
            return
        }
        guard PQstatus(c) != CONNECTION_BAD else {
            // libpq's own words: the socket missing, the host unknown, a bad conninfo.
            let why = PQ.string(PQerrorMessage(c)).trimmingSpace
            PQfinish(c)
            retryLater(why.isEmpty ? "cannot start a connection" : why)
            return
        }
        conn = c
        watchConnect(PGRES_POLLING_WRITING)
        // The non-blocking connect does not honour connect_timeout by itself.
        connectTimer.start(after: timeouts.connectMs) { [unowned self] in
            if self.state == .connecting { self.retryLater("no connection within \(self.timeouts.connectMs / 1000) s") }
        }
    }

    private func watchConnect(_ want: PostgresPollingStatusType) {
        guard let conn else { return }
        let fd = PQsocket(conn)
        if watcher?.fd != fd {
            // The socket can change between steps (next host, SSL fallback).
            watcher?.close()
            watcher = FDWatcher(loop: loop, fd: fd)
        }
        let events: FDWatcher.Events = want == PGRES_POLLING_READING ? .readable : .writable
        watcher?.watch(events) { [unowned self] _, _ in self.connectStep() }
    }

    private func connectStep() {
        guard let conn else { return }
        switch PQconnectPoll(conn) {
        case PGRES_POLLING_OK:
            PQsetnonblocking(conn, 1)
            guard PQenterPipelineMode(conn) == 1 else { retryLater("cannot enter pipeline mode"); return }
            connectTimer.stop()
            state = .ready
            retryDelay = 100
            if wasReady { reconnects += 1 }
            wasReady = true
            lastFailure = nil
            logger.info("connected to PostgreSQL")
            watch(writable: false)
            // PostgreSQL cancels a statement that runs too long; a server that
            // does not answer at all is caught by `answerTimer`.
            send([Statement("SET statement_timeout = \(timeouts.statementMs)")] + sessionSettings.map { Statement($0) }) { [logger] result in
                if case let .failure(e) = result { logger.warning("could not set the session's settings: \(e)") }
            }
            sendPrepares()
            answerTimer.start(after: 1_000, repeat: 1_000) { [unowned self] in self.checkAnswers() }
            onReady()
        case PGRES_POLLING_FAILED:
            retryLater(PQ.string(PQerrorMessage(conn)).trimmingSpace)
        case let want:
            watchConnect(want)
        }
    }

    private func retryLater(_ why: String) {
        logger.warning("PostgreSQL connection failed: \(why); retrying in \(retryDelay) ms")
        lastFailure = why
        teardown(reason: why)
        guard !stopped else { return }
        retryTimer.start(after: retryDelay) { [unowned self] in self.connect() }
        retryDelay = min(retryDelay * 2, 2_000)
    }

    private func sendPrepares() {
        guard let conn, !preparedStatements.isEmpty else { return }
        for p in preparedStatements where PQsendPrepare(conn, p.name, p.sql, 0, nil) == 0 {
            logger.error("cannot prepare \(p.name): \(PQ.string(PQerrorMessage(conn)).trimmingSpace)")
        }
        guard PQpipelineSync(conn) == 1 else { return lost() }
        inflight.append(Unit(count: preparedStatements.count, sentAt: loop.now) { [logger] result in
            guard case let .success(outcomes) = result else { return }
            for case let .failed(f) in outcomes { logger.error("preparing a statement failed: \(f)") }
        })
        flush()
    }

    /// The oldest unit in flight went unanswered too long: PostgreSQL (or the
    /// network to it) is stuck. Give up on this connection and make another.
    private func checkAnswers() {
        if requiresPrimary, state == .ready {
            primaryCheckTick += 1
            if primaryCheckTick % 2 == 0 { checkPrimary() }
        }
        guard state == .ready, inflightHead < inflight.count else { return }
        let waited = loop.now - inflight[inflightHead].sentAt
        if waited > timeouts.answerMs {
            logger.warning("PostgreSQL has not answered for \(waited) ms; reconnecting")
            lost(because: "no answer within \(timeouts.answerMs / 1000) s")
        }
    }

    /// Called when this connection left a server that was not a writable
    /// primary: its siblings may be on that server too (`checkPrimaryNow`).
    public var onLeftPrimary: () -> Void = {}

    /// Asks now (not at the next 2 s tick) whether the server is still a writable primary.
    public func checkPrimaryNow() {
        if requiresPrimary, state == .ready { checkPrimary() }
    }

    /// What this connection read came from a server that is not a writable
    /// primary (a stale answer): leave it for the primary.
    public func notPrimary(_ why: String) { leftPrimary(why) }

    private func checkPrimary() {
        send([Statement("SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'")]) { [weak self] result in
            guard let self, case let .success(outcomes) = result, case let .rows(r)? = outcomes.first, r[0, 0] == "t" else { return }
            self.leftPrimary("the server is no longer a writable primary (a failover?)")
        }
    }

    private func leftPrimary(_ why: String) {
        guard state == .ready else { return }
        leftReadOnly += 1
        logger.warning("\(why): reconnecting to find the primary")
        lost(because: why)
        onLeftPrimary()
    }

    private func teardown(reason: String) {
        connectTimer.stop()
        answerTimer.stop()
        watcher?.close()
        watcher = nil
        if let conn { PQfinish(conn) }
        conn = nil
        state = .idle
        resultPending = false
        let failed = inflight[inflightHead...]
        inflight = []
        inflightHead = 0
        for u in failed { u.completion(.failure(.storage("connection to PostgreSQL lost (\(reason))"))) }
    }

    private func lost(because given: String? = nil) {
        let why = given ?? conn.map { PQ.string(PQerrorMessage($0)).trimmingSpace } ?? "closed"
        let wasReady = state == .ready
        retryLater(why.isEmpty ? "connection closed" : why)
        if wasReady { onLost() }
    }

    // MARK: Sending and receiving

    private func watch(writable: Bool) {
        watcher?.watch(writable ? [.readable, .writable] : .readable) { [unowned self] events, status in
            self.ready(events, status)
        }
    }

    private func flush() {
        guard let conn else { return }
        switch PQflush(conn) {
        case 0: watch(writable: false)
        case 1: watch(writable: true)  // the server may refuse to read until we read its output
        default: lost()
        }
    }

    private func ready(_ events: FDWatcher.Events, _ status: Int32) {
        guard let conn else { return }
        if status < 0 { lost(); return }
        if events.contains(.writable) { flush() }
        if events.contains(.readable) {
            guard PQconsumeInput(conn) == 1 else { lost(); return }
            drainNotifications(conn)
            drainResults()
            // A notice behind a result in the same read is parsed only as the
            // results are taken: without this it would wait for the next read
            // (the next notice, or the keepalive 10 s later).
            if let conn = self.conn { drainNotifications(conn) }
        }
    }

    private func drainResults() {
        while let conn, state == .ready, PQisBusy(conn) == 0 {
            guard let r = PQgetResult(conn) else {
                if resultPending { resultPending = false; continue }
                break
            }
            var handedOver = false
            defer { if !handedOver { PQclear(r) } }
            let status = PQresultStatus(r)
            if status == PGRES_PIPELINE_SYNC {
                completeHead()
                continue
            }
            guard inflightHead < inflight.count else { continue }
            switch status {
            case PGRES_TUPLES_OK where inflight[inflightHead].inPlace.contains(inflight[inflightHead].outcomes.count):
                handedOver = true  // the result owns it now, and frees it
                inflight[inflightHead].outcomes.append(.result(ResultRows(r)))
            case PGRES_TUPLES_OK, PGRES_COMMAND_OK: inflight[inflightHead].outcomes.append(.rows(PQ.rows(r)))
            case PGRES_PIPELINE_ABORTED: inflight[inflightHead].outcomes.append(.aborted)
            default:
                let failure = PQ.failure(r, conn: conn)
                // Refused as read-only: nothing was written, and nothing will be on this server.
                if requiresPrimary && failure.sqlstate == "25006" {
                    return leftPrimary("the server refused a write as read-only (SQLSTATE 25006: a standby, or a demoted primary)")
                }
                inflight[inflightHead].outcomes.append(.failed(failure))
            }
            resultPending = true
        }
        if let conn, PQstatus(conn) == CONNECTION_BAD { lost() }
    }

    private func drainNotifications(_ conn: OpaquePointer) {
        while let n = PQnotifies(conn) {
            let channel = PQ.string(n.pointee.relname), payload = PQ.string(n.pointee.extra)
            PQfreemem(n)
            onNotify(channel, payload)
        }
    }

    private func completeHead() {
        guard inflightHead < inflight.count else { return }
        let unit = inflight[inflightHead]
        inflightHead += 1
        if inflightHead == inflight.count {
            inflight.removeAll(keepingCapacity: true)
            inflightHead = 0
        }
        unit.completion(.success(unit.outcomes))
    }
}
