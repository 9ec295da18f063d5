import Logging
import RewindCore
import RewindLoop

/// The server's view of PostgreSQL: appends with group commit, reads, accounts.
///
/// **Appends** go through `writers` connections, each owning a share of the
/// documents (by a hash of the document id), so a lock wait or a slow batch
/// on one never stalls documents of another, and PostgreSQL works on several
/// cores. On each writer, appends queue up during a loop turn and go out
/// together just before the loop sleeps, as one statement (`LogRows.append`:
/// the rows of all its documents as arrays, each document's head claimed
/// with a compare-and-set) in one transaction: one round trip and one commit
/// for all of them. Up to `maxBatchesInFlight` batches are in flight per
/// writer, pipelined on its connection: PostgreSQL starts the next as soon as
/// the previous has committed, instead of after its answer has come back and
/// the next has been sent (a busy document, whose terminals wait for their
/// acks, was bound by that round trip). A batch is sent while another is in
/// flight only when it holds entries of a document that one holds too: for
/// documents of their own, more and smaller batches cost PostgreSQL more than
/// the wait saves (commit benchmark: −7 % at 50 terminals, −11 % at 500).
/// And only once it holds as many entries as the last batch sent: it waits
/// in PostgreSQL for that one's commit anyway, so going early with the first
/// few entries gains nothing, and the terminals whose acks come after it
/// would then wait for a third commit of their own (one busy document, 50
/// terminals: its terminals went round in three groups of ~16 entries a
/// commit; now two of ~24). What waited for a batch in flight is sent as
/// soon as that batch is answered, before its appends are told (not at the
/// end of that turn).
/// Each batch of a document claims the head the batch before it leaves, so
/// if one does not commit, the ones behind it cannot either. While batches are in flight the next one grows,
/// so commits per second stay bounded by fsync while transactions per second
/// grow with load. A document whose head moved (another instance wrote
/// first) affects only its own entries.
///
/// **Reads** (catch-up, heads, accounts, roles) use a connection of their own,
/// so they never wait behind a commit.
public final class EventStore {
    public enum AppendOutcome {
        case committed
        /// The transaction was already in the log at this version (another server got it).
        case duplicate(version: Int64)
        /// The transaction id was already used with different content (`digest`: the log's).
        case txConflict(version: Int64, digest: String)
        /// Another writer changed the document first; `head` is the log's head (seq).
        case clash(head: Int64)
        case noDocument
        case failed(RewindError)
    }

    struct PendingAppend {
        /// Moved into its batch's statement when the batch is built (nil from then on).
        var row: LogRow?
        /// What answering it reads of the row, kept apart: reading the row's
        /// fields through a copy of it retained and released each of its strings.
        let doc: String
        let seq: Int64
        let isEvent: Bool
        let txDigest: String?
        /// The hash of the entry it follows.
        let after: [UInt8]
        let checkDuplicates: Bool
        let done: (AppendOutcome) -> Void

        init(row: consuming LogRow, after: [UInt8], checkDuplicates: Bool, done: @escaping (AppendOutcome) -> Void) {
            doc = row.doc; seq = row.seq; isEvent = row.entry == "event"; txDigest = row.txDigest
            self.row = row; self.after = after; self.checkDuplicates = checkDuplicates; self.done = done
        }
    }

    /// One writer connection and the appends waiting for it.
    final class Writer {
        let connection: PipelineConnection
        var queued: [PendingAppend] = []
        var batchesInFlight = 0
        /// Documents with entries in a batch in flight, and in how many.
        var docsInFlight: [String: Int] = [:]
        /// Something queued follows entries of its document that are in flight.
        var queuedBehindInFlight = false
        /// Entries of the last batch sent: a batch sent behind one in flight is at least as big.
        var lastBatchEntries = 0
        /// The editors this writer noted in the last 5 seconds (schema/025).
        var editorNotes = EditorNotes()
        init(_ c: PipelineConnection) { connection = c }
    }

    /// The statements each writer prepares and sends its batches with: for a
    /// batch that notes editors (`LogRows.appendSQL`) or none
    /// (`appendWithoutNotesSQL`; `rewind admin statement`, for scripts/bench/pgwork).
    public static func appendStatement(noting: Bool) -> String { noting ? LogRows.appendSQL : LogRows.appendWithoutNotesSQL }

    /// The catalog's reads: accounts, tokens, placements (and `home`'s documents).
    public var connection: PipelineConnection { shards.home.connection }
    /// Every shard this instance reaches, and where the documents it served live (`EventStore+Shards`).
    let shards: ShardDirectory
    /// Every writer of every shard.
    private var writers: [Writer] { shards.allWriters }
    let logger: Logger
    let loop: EventLoop
    let timeouts: PipelineConnection.Timeouts
    let writersPerShard: Int
    private var beforeSleep: BeforeSleep?
    /// The shards other than `home` (name → conninfo) changed: the server listens on each (`reloadShards`).
    public var onShardsChanged: ([String: String]) -> Void = { _ in }
    /// A shard became servable (checked once connected): its documents may be behind.
    public var onShardReady: (String) -> Void = { _ in }
    /// Entries per batch statement at most.
    public var maxBatch = 2_000
    /// Batches sent and not yet answered, per writer, at most.
    public var maxBatchesInFlight = 2
    /// The data keys of loaded documents, and the master key that unwraps them.
    public let keys: DocumentKeys

    /// Who sends the writers' batches at the end of each loop turn: the store
    /// itself (its own `BeforeSleep`), or its caller, which calls `sendBatches`
    /// as one phase of its own end of turn (the server: `Server.endTurn`).
    public enum EndOfTurn { case ownHook, byCaller }

    public init(loop: EventLoop, conninfo: String, writers: Int = 2, timeouts: PipelineConnection.Timeouts = .init(),
                masterKey: MasterKey, logger: Logger, endOfTurn: EndOfTurn = .ownHook) {
        self.logger = logger
        keys = DocumentKeys(master: masterKey)
        clock = loop
        self.loop = loop
        self.timeouts = timeouts
        writersPerShard = max(1, writers)
        shards = ShardDirectory(home: ShardLink(name: ShardDirectory.home, conninfo: conninfo, loop: loop, writers: writers,
                                                timeouts: timeouts, logger: logger))
        if endOfTurn == .ownHook {
            beforeSleep = BeforeSleep(loop: loop) { [unowned self] in self.sendBatches() }
        }
    }

    /// Each writer sends what is queued for it (one batch statement each, up to
    /// `maxBatchesInFlight`): at the end of a loop turn, so that every append
    /// made during the turn joins one batch.
    public func sendBatches() {
        for w in writers { sendBatch(w) }
    }

    /// Runs each time every connection is ready (at start, and after any of them came back).
    public var onReady: () -> Void = {}
    /// Runs when PostgreSQL answers a writer's batch: its entries and the
    /// time from sending it to the answer (the commit's round trip; metrics).
    public var onBatchAnswered: (_ entries: Int, _ nanoseconds: UInt64) -> Void = { _, _ in }

    public func start() {
        let home = shards.home
        for c in home.connections {
            c.onReady = { [unowned self] in
                guard self.isAvailable else { return }
                if let since = self.downSince { self.downMs += self.clock.now - since }
                self.downSince = nil
                self.everAvailable = true
                self.onReady()
            }
            // One connection found its server no longer the primary: the others are asked at once.
            c.onLeftPrimary = { for other in home.connections where other !== c { other.checkPrimaryNow() } }
            c.onLost = { [unowned self] in
                guard self.everAvailable, self.downSince == nil else { return }
                self.downSince = self.clock.now
                self.outages += 1
            }
            c.start()
        }
    }

    // MARK: Outages (metrics)

    private let clock: EventLoop
    private var everAvailable = false
    private var downSince: UInt64?
    private var downMs: UInt64 = 0
    /// Times the store lost PostgreSQL after having had it (a failover, a restart, a network cut).
    public private(set) var outages = 0
    /// Time without a usable primary since the store first had one, in seconds.
    public var unavailableSeconds: Double { Double(downMs + (downSince.map { clock.now - $0 } ?? 0)) / 1000 }
    /// Connections dropped because their server was not (or no longer) a writable primary.
    public var leftReadOnly: Int { shards.all.flatMap(\.connections).reduce(0) { $0 + $1.leftReadOnly } }

    public func stop() {
        beforeSleep?.close()
        beforeSleep = nil
        for link in shards.all { for c in link.connections { c.stop() } }
    }

    /// The catalog (`home`) is reachable: accounts, tokens and placements can be read. A
    /// shard that is not makes only its own documents `unavailable` (`EventStore+Shards`).
    public var isAvailable: Bool { shards.home.connections.allSatisfy(\.isReady) }

    /// Why the store is not available (nil when it is): the first connection's
    /// last failure, as libpq said it.
    public var unavailableReason: String? {
        guard !isAvailable else { return nil }
        let down = shards.home.connections.first { !$0.isReady }!
        return down.lastFailure ?? "connecting to PostgreSQL"
    }

    /// Connections (reads and writers, of every shard) made again after one was lost.
    public var reconnects: Int { shards.all.flatMap(\.connections).reduce(0) { $0 + $1.reconnects } }

    /// A trivial query on the read connection (`SELECT 1`): nil when PostgreSQL answered it.
    public func ping(_ done: @escaping (RewindError?) -> Void) {
        query(.init("SELECT 1")) { result in
            if case let .failure(e) = result { done(e) } else { done(nil) }
        }
    }

    /// Batches sent and not yet answered, over all writers.
    public var batchesInFlight: Int { writers.reduce(0) { $0 + $1.batchesInFlight } }

    /// Appends still waiting for their commit.
    public var appendsOutstanding: Int { writers.reduce(0) { $0 + $1.queued.count + $1.batchesInFlight } }

    // MARK: Appends

    /// Queues a sealed log entry of `doc`, which follows the entry whose hash
    /// is `after`, for the next commit of its writer.
    /// `checkDuplicates`: the caller's ledger may not know every old
    /// transaction of the document (restored from a snapshot), so the
    /// statement also looks its transaction up in the log.
    public func append(_ entry: LogEntry, doc: String, after: [UInt8], checkDuplicates: Bool, _ done: @escaping (AppendOutcome) -> Void) {
        append(entry.row(doc: doc), after: after, checkDuplicates: checkDuplicates, done)
    }

    /// The same, for an entry already in its stored form.
    /// On a shard other than `home`, the first append of a user there waits
    /// for the user's account to be copied into it (`appendOnShard`).
    public func append(_ row: consuming LogRow, after: [UInt8], checkDuplicates: Bool, _ done: @escaping (AppendOutcome) -> Void) {
        guard shards.isSharded else {
            return queue(row, on: shards.home, after: after, checkDuplicates: checkDuplicates, done)
        }
        appendOnShard(row, after: after, checkDuplicates: checkDuplicates, done)
    }

    /// Hands an append to the writer of its document on `link`, for the writer's next batch.
    func queue(_ row: consuming LogRow, on link: ShardLink, after: [UInt8], checkDuplicates: Bool, _ done: @escaping (AppendOutcome) -> Void) {
        let w = link.writer(for: row.doc)
        guard w.connection.isReady else {
            done(.failed(link.isHome ? .storage("not connected to PostgreSQL") : Self.unreachable(link, w.connection.lastFailure)))
            return
        }
        if !w.queuedBehindInFlight && w.batchesInFlight > 0 && w.docsInFlight[row.doc] != nil { w.queuedBehindInFlight = true }
        w.queued.append(PendingAppend(row: consume row, after: after, checkDuplicates: checkDuplicates, done: done))
    }

    private func sendBatch(_ w: Writer) {
        guard !w.queued.isEmpty,
              w.batchesInFlight == 0
                || (w.batchesInFlight < maxBatchesInFlight && w.queuedBehindInFlight && w.queued.count >= w.lastBatchEntries) else { return }
        var taken: [PendingAppend]
        if w.queued.count <= maxBatch {
            // Handed over whole (copying each entry retained its row's every string).
            taken = w.queued
            w.queued = []
            w.queued.reserveCapacity(taken.count)
        } else {
            taken = Array(w.queued.prefix(maxBatch))
            w.queued.removeFirst(taken.count)
        }
        if w.queued.isEmpty { w.queuedBehindInFlight = false }
        w.batchesInFlight += 1
        w.lastBatchEntries = taken.count
        let claims = Self.claims(&taken, noting: &w.editorNotes)
        let batch = taken  // the appends to answer; their rows are in `claims` now
        for c in claims { w.docsInFlight[c.doc, default: 0] += 1 }
        func answered() {
            w.batchesInFlight -= 1
            for c in claims {
                if let n = w.docsInFlight[c.doc], n > 1 { w.docsInFlight[c.doc] = n - 1 } else { w.docsInFlight[c.doc] = nil }
            }
        }
        send(w, batch, claims, then: answered)
    }

    /// Sends one batch and answers its appends. A batch refused by the
    /// unique indexes on `(doc, user_id, tx)` — a transaction the ledgers
    /// did not know was already in the log — goes again, whole, with every
    /// transaction looked up (the repeat is then answered as one, and the
    /// rest commits); a batch refused otherwise (a bug, or a constraint the
    /// claim did not foresee) is retried one document at a time, so the
    /// others commit.
    private func send(_ w: Writer, _ batch: [PendingAppend], _ claims: [LogRows.Claim], then answered: @escaping () -> Void) {
        let sentAt = monotonicNanos()
        w.connection.send([LogRows.append(claims)]) { [unowned self] result in
            switch result {
            case let .failure(e):
                answered()
                for p in batch { p.done(.failed(e)) }
            case let .success(outcomes):
                self.onBatchAnswered(batch.count, monotonicNanos() - sentAt)
                guard case let .rows(rows)? = outcomes.first else {
                    if case let .failed(f)? = outcomes.first, LogRows.refusedARepeatedTransaction(f), claims.contains(where: { !$0.checkDuplicates }) {
                        self.repeatsLookedUp += 1
                        self.logger.info("append batch repeated a transaction already in the log; sending it again with transactions looked up",
                                         metadata: ["documents": "\(claims.count)", "error": "\(f)"])
                        return self.send(w, batch, claims.map { var c = $0; c.checkDuplicates = true; return c }, then: answered)
                    }
                    self.logger.warning("append batch refused; retrying its \(claims.count) documents one by one",
                                        metadata: ["error": "\(outcomes.first.map { "\($0)" } ?? "none")"])
                    return self.retrySplit(w, batch, claims, then: answered)
                }
                answered()
                // What waited for this answer goes before the answer is told:
                // telling a busy document's terminals (committing, pushing) is
                // ~1.4 ms of the loop's time for ~25 entries, and PostgreSQL,
                // which runs a document's batches one after the other, sat idle
                // through it (one document, 50 terminals: +22 %, issue 44).
                if !w.queued.isEmpty { self.sendBatch(w) }
                Self.answer(batch, LogRows.outcome(rows))
            }
        }
    }

    /// Batches the unique indexes refused for a transaction already in the
    /// log, sent again with transactions looked up (metrics, tests).
    public private(set) var repeatsLookedUp = 0

    /// One unit (one transaction) per document, all sent at once: each of
    /// the batch's claims (which hold its rows) with the appends of its document.
    private func retrySplit(_ w: Writer, _ batch: [PendingAppend], _ claims: [LogRows.Claim], then answered: @escaping () -> Void) {
        var byDoc: [String: [PendingAppend]] = [:]
        for p in batch { byDoc[p.doc, default: []].append(p) }
        var left = claims.count
        for claim in claims {
            appendAlone(w, claim, byDoc[claim.doc]!) {
                left -= 1
                if left == 0 { answered() }
            }
        }
    }

    /// One document's part of a refused batch, in a transaction of its own
    /// (and once more with its transactions looked up, if the unique indexes refused it).
    private func appendAlone(_ w: Writer, _ claim: LogRows.Claim, _ part: [PendingAppend], then finished: @escaping () -> Void) {
        let doc = claim.doc
        w.connection.send([LogRows.append([claim])]) { [unowned self] result in
            switch result {
            case let .failure(e): for p in part { p.done(.failed(e)) }
            case let .success(outcomes):
                if case let .rows(rows)? = outcomes.first {
                    Self.answer(part, LogRows.outcome(rows))
                } else if case let .failed(f)? = outcomes.first, LogRows.refusedARepeatedTransaction(f), !claim.checkDuplicates {
                    var checked = claim
                    checked.checkDuplicates = true
                    return self.appendAlone(w, checked, part, then: finished)
                } else {
                    let why = outcomes.first.map { "\($0)" } ?? "no result"
                    self.logger.error("append refused by the database", metadata: ["doc": "\(doc)", "error": "\(why)"])
                    for p in part { p.done(.failed(RewindError(.internal, "the database refused an append to \(doc): \(why)"))) }
                }
            }
            finished()
        }
    }

    // MARK: Reads

    /// Events of `doc` after version `after` (and up to `to`), oldest first, at most `limit`.
    public func events(doc: String, after: Int64, to: Int64? = nil, limit: Int, _ done: @escaping (Result<[Event], RewindError>) -> Void) {
        entries(LogRows.events(doc: doc, after: after, to: to, limit: limit), doc: doc) { result in
            done(result.map { $0.compactMap { if case let .event(e) = $0 { return e }; return nil } })
        }
    }

    /// Entries of `doc` (events and marks) with `afterSeq < seq <= toSeq`, in order, at most `limit`.
    public func entries(doc: String, afterSeq: Int64, toSeq: Int64, limit: Int, _ done: @escaping (Result<[LogEntry], RewindError>) -> Void) {
        entries(LogRows.range(doc: doc, afterSeq: afterSeq, toSeq: toSeq, limit: limit), doc: doc, done)
    }

    /// The same, put through `then` (checks, what the caller makes of them),
    /// all on the loop's thread pool when there are more than
    /// `EventStore.decodedOnLoop` entries: an old undo group's read is ~100,000
    /// entries, a second of opening, parsing and hashing that held up every
    /// terminal of the server. The rows and entries are let go there too.
    public func entriesOffLoop<T: Sendable>(doc: String, afterSeq: Int64, toSeq: Int64, limit: Int,
                                            then: @escaping @Sendable ([LogEntry]) throws(RewindError) -> T,
                                            _ done: @escaping (Result<T, RewindError>) -> Void)
    {
        let statement = LogRows.range(doc: doc, afterSeq: afterSeq, toSeq: toSeq, limit: limit)
        guard limit > Self.decodedOnLoop else {
            return entries(statement, doc: doc) { result in done(result.flatMap { e in Result { () throws(RewindError) in try then(e) } }) }
        }
        var inPlace = statement
        inPlace.inPlace = true  // not even made into text on the loop: read where it is decoded
        send(inPlace, doc: doc) { [clock, keys] result in
            let rows: ResultRows
            switch result {
            case let .failure(e): return done(.failure(e))
            case let .success(outcomes):
                switch outcomes.first {
                case let .result(r)?: rows = r
                case let .failed(f)?: return done(.failure(RewindError(.internal, "query failed: \(f)")))
                default: return done(.failure(RewindError(.internal, "query aborted")))
                }
            }
            let cipher = keys.cached(doc), held = Handoff(rows)
            BackgroundWork.run(on: clock, {
                Result { () throws(RewindError) in
                    var noLinks: LogRows.Links?
                    return try then(try LogRows.decode(doc: doc, held.take(), cipher: cipher, links: &noLinks))
                }
            }, done: done)
        }
    }

    /// Entries a read decodes on the loop itself: about half a millisecond of
    /// work; more goes to the pool, whose hand-off costs tens of microseconds.
    public static let decodedOnLoop = 128

    /// Entries of `doc` with `afterSeq < seq <= toSeq` as stored (nothing
    /// parsed: for checking the hash chain), in order, at most `limit`.
    public func storedRows(doc: String, afterSeq: Int64, toSeq: Int64, limit: Int, _ done: @escaping (Result<[LogRow], RewindError>) -> Void) {
        query(doc: doc, LogRows.stored(doc: doc, afterSeq: afterSeq, toSeq: toSeq, limit: limit)) { result in
            done(result.flatMap { rows in Result { () throws(RewindError) in try LogRows.decodeStored(doc: doc, rows) } })
        }
    }

    /// The positions of the events at versions `first` and `last` (both must exist).
    public func seqs(doc: String, first: Int64, last: Int64, _ done: @escaping (Result<(first: Int64, last: Int64), RewindError>) -> Void) {
        query(doc: doc, LogRows.seqs(doc: doc, first: first, last: last)) { result in
            done(result.flatMap { rows in
                var found: [Int64: Int64] = [:]
                for i in 0..<rows.count { if let v = rows.int(i, 0), let s = rows.int(i, 1) { found[v] = s } }
                guard let a = found[first], let b = found[last] else {
                    return .failure(RewindError(.internal, "the log of \(doc) lacks event \(found[first] == nil ? first : last)"))
                }
                return .success((a, b))
            })
        }
    }

    /// The entries a snapshot at `toSeq` needs, from event `fromVersion`.
    public func tail(doc: String, fromVersion: Int64, toSeq: Int64, _ done: @escaping (Result<[LogEntry], RewindError>) -> Void) {
        entries(LogRows.tail(doc: doc, fromVersion: fromVersion, toSeq: toSeq), doc: doc, done)
    }

    private func entries(_ s: PipelineConnection.Statement, doc: String, _ done: @escaping (Result<[LogEntry], RewindError>) -> Void) {
        query(doc: doc, s) { result in
            done(result.flatMap { rows in Result { () throws(RewindError) in try LogRows.decode(doc: doc, rows, cipher: self.keys.cached(doc)) } })
        }
    }

    /// The version and content digest of a user's transaction in `doc`, if the log has it.
    public func transaction(doc: String, user: Int64, tx: String, _ done: @escaping (Result<(version: Int64, digest: String)?, RewindError>) -> Void) {
        query(doc: doc, .init("SELECT version, tx_digest FROM log WHERE doc = $1 AND user_id = $2 AND tx = $3 AND entry = 'event'",
                    [doc, String(user), tx])) { result in
            done(result.map { rows in
                guard rows.count == 1, let v = rows.int(0, 0), let d = rows[0, 1] else { return nil }
                return (version: v, digest: d)
            })
        }
    }

    /// Of `groups` (held open in `doc`), those whose terminal's instance is
    /// gone: the newest edit of each names the instance (`EventMeta.instance`);
    /// an instance is alive while it holds its liveness lock
    /// (`Notifications`). Edits from before instances were recorded count as gone.
    public func orphanedGroups(doc: String, groups: [String], _ done: @escaping (Result<[String], RewindError>) -> Void) {
        var names = BinaryArray(.text)
        for g in groups { names.append(g) }
        let q = PipelineConnection.Statement("""
            SELECT g.grp FROM (
                SELECT DISTINCT ON (grp) grp, (meta::jsonb ->> 'instance')::bigint AS instance
                FROM log WHERE doc = $1 AND entry = 'event' AND grp = ANY($2::text[])
                ORDER BY grp, seq DESC
            ) g
            WHERE g.instance IS NULL OR g.instance NOT IN (\(Notifications.liveSQL(classParam: "$3")))
            """, values: [.text(doc), .binary(names.finish()), .text(String(Notifications.lockClass))])
        query(doc: doc, q) { result in done(result.map { rows in (0..<rows.count).compactMap { rows[$0, 0] } }) }
    }

    // MARK: Snapshots

    public struct Snapshot {
        public var seq: Int64
        public var hash: [UInt8]
        public var state: JSON
    }

    /// Stores a snapshot taken at entry `seq` (whose hash is `hash`), already
    /// encoded off the loop; `digest` is SHA-256 of `text`. Best effort: a
    /// failure is logged, nothing depends on it.
    public func saveSnapshot(doc: String, version: Int64, seq: Int64, hash: [UInt8], text: String, digest: [UInt8]) {
        query(doc: doc, .init("INSERT INTO snapshots (doc, version, seq, hash, digest, state) VALUES ($1, $2, $3, decode($4, 'hex'), decode($5, 'hex'), $6) ON CONFLICT DO NOTHING",
                    [doc, String(version), String(seq), Hex.string(hash), Hex.string(digest), text])) { [logger] result in
            if case let .failure(e) = result {
                logger.warning("snapshot not stored", metadata: ["doc": "\(doc)", "seq": "\(seq)", "error": "\(e)"])
            }
        }
    }

    /// The newest snapshot of `doc`, if any, checked against its own digest
    /// (a snapshot edited in place is refused: the log is replayed instead).
    public func latestSnapshot(doc: String, _ done: @escaping (Result<Snapshot?, RewindError>) -> Void) {
        query(doc: doc, .init("SELECT seq, hash, digest, state FROM snapshots WHERE doc = $1 ORDER BY seq DESC LIMIT 1", [doc])) { result in
            done(result.flatMap { rows in
                guard rows.count == 1 else { return .success(nil) }
                guard let seq = rows.int(0, 0), let hash = rows[0, 1].flatMap(LogRows.bytea), let digest = rows[0, 2].flatMap(LogRows.bytea),
                      let text = rows[0, 3]
                else { return .failure(RewindError(.internal, "malformed snapshot row of \(doc)")) }
                guard LogRows.matches(text, digest: digest) else {
                    return .failure(RewindError(.internal, "snapshot of \(doc) at \(seq) does not match its digest (changed after it was stored)"))
                }
                do { return .success(Snapshot(seq: seq, hash: hash, state: try JSONParser.parse(try LogRows.openSnapshotBytes(text, doc: doc, cipher: self.keys.cached(doc)), maxDepth: 256))) } catch {
                    return .failure(RewindError(.internal, "snapshot of \(doc) at \(seq) does not parse: \(error)"))
                }
            })
        }
    }

    // MARK: Keys

    /// The key of `doc` (created the first time), kept while it is loaded (`keys.forget`).
    public func documentKey(doc: String, _ done: @escaping (Result<DocumentKeys.Lookup, RewindError>) -> Void) {
        func attempt(_ left: Int) {
            query(doc: doc, keys.fetchStatement(doc: doc)) { [keys] result in
                let rows: Rows
                switch result {
                case let .failure(e): return done(.failure(e))
                case let .success(r): rows = r
                }
                do throws(RewindError) {
                    if let found = try keys.lookup(doc: doc, rows) { return done(.success(found)) }
                } catch { return done(.failure(error)) }
                guard left > 0 else { return done(.failure(RewindError(.unavailable, "the key of \(doc) could not be read: try again"))) }
                attempt(left - 1)
            }
        }
        attempt(2)
    }

    /// The newest migration applied to the database (nil: it has no
    /// `schema_migrations`, so no Rewind schema), checked before serving it.
    public func appliedMigration(_ done: @escaping (Result<Int?, RewindError>) -> Void) {
        query(.init("SELECT to_regclass('schema_migrations') IS NOT NULL", [])) { [self] result in
            switch result {
            case let .failure(e): done(.failure(e))
            case let .success(rows) where rows.count == 1 && rows[0, 0] == "t":
                query(.init("SELECT max(version) FROM schema_migrations", [])) { result in
                    done(result.map { rows in rows.count == 1 ? rows[0, 0].flatMap { Int($0) } : nil })
                }
            case .success: done(.success(nil))
            }
        }
    }

    /// Claims the database for this server's master key on first use; an
    /// error when the database's data keys are wrapped with another key.
    public func claimMasterKey(_ done: @escaping (RewindError?) -> Void) {
        query(.init(DocumentKeys.claimMasterSQL, [keys.master.id])) { [keys] result in
            switch result {
            case let .failure(e): done(e)
            case let .success(rows): done(keys.claimAnswered(rows))
            }
        }
    }

    /// A statement on the catalog (`home`).
    func query(_ s: PipelineConnection.Statement, _ done: @escaping (Result<Rows, RewindError>) -> Void) {
        query(s, on: connection, done)
    }

    func query(_ s: PipelineConnection.Statement, on connection: PipelineConnection, _ done: @escaping (Result<Rows, RewindError>) -> Void) {
        connection.send([s]) { result in
            switch result {
            case let .failure(e): done(.failure(e))
            case let .success(outcomes):
                switch outcomes.first {
                case let .rows(rows)?: done(.success(rows))
                case let .failed(f)?: done(.failure(RewindError(.internal, "query failed: \(f)")))
                default: done(.failure(RewindError(.internal, "query aborted")))
                }
            }
        }
    }
}
