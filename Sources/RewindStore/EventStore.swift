import Logging
import RewindCore
import RewindLoop

/// The server's view of PostgreSQL: appends with group commit, reads, accounts.
///
/// Appends queue up during a loop turn and go out together, just before the
/// loop sleeps, as one pipeline unit: one round trip and one commit (one fsync)
/// for all of them. At most one batch is in flight; while its commit runs the
/// next batch grows, so commits per second stay bounded by fsync latency while
/// transactions per second grow with load. Each row reports its own outcome
/// (`rewind_append`), so one refused row never fails the others.
public final class EventStore {
    public enum AppendOutcome {
        case committed
        /// The transaction was already in the log at this version (another server got it).
        case duplicate(version: Int64)
        /// The transaction id was already used with different content.
        case txConflict(version: Int64)
        /// Another writer changed the document first; `head` is the log's head.
        case clash(head: Int64)
        case noDocument
        case failed(RewindError)
    }

    private struct PendingAppend {
        let statement: PipelineConnection.Statement
        let done: (AppendOutcome) -> Void
    }

    public let connection: PipelineConnection
    private let logger: Logger
    private var queued: [PendingAppend] = []
    private var batchInFlight = false
    private var beforeSleep: BeforeSleep?
    public var maxBatch = 1_000

    public init(loop: EventLoop, conninfo: String, logger: Logger) {
        self.logger = logger
        connection = PipelineConnection(loop: loop, conninfo: conninfo, logger: logger)
        beforeSleep = BeforeSleep(loop: loop) { [unowned self] in self.sendBatch() }
    }

    public func start() { connection.start() }

    public func stop() {
        beforeSleep?.close()
        beforeSleep = nil
        connection.stop()
    }

    public var isAvailable: Bool { connection.isReady }

    /// Appends still waiting for their commit.
    public var appendsOutstanding: Int { queued.count + (batchInFlight ? 1 : 0) }

    // MARK: Appends

    /// Queues a log entry for the next commit: an event (whose predecessor in
    /// the document is `prevID`) or a group mark, written by a server that has
    /// seen `marks` marks of the document.
    public func append(_ entry: LogEntry, doc: String, after prevID: String?, marks: Int64, _ done: @escaping (AppendOutcome) -> Void) {
        guard connection.isReady else {
            done(.failed(.storage("not connected to PostgreSQL")))
            return
        }
        let statement: PipelineConnection.Statement
        switch entry {
        case let .event(e): statement = EventRows.append(e, prevID: prevID, marks: marks)
        case let .mark(m): statement = MarkRows.append(m, doc: doc)
        }
        queued.append(PendingAppend(statement: statement, done: done))
    }

    private func sendBatch() {
        guard !batchInFlight, !queued.isEmpty else { return }
        let batch = Array(queued.prefix(maxBatch))
        queued.removeFirst(batch.count)
        batchInFlight = true
        connection.send(batch.map(\.statement)) { [unowned self] result in
            switch result {
            case let .failure(e):
                self.batchInFlight = false
                for p in batch { p.done(.failed(e)) }
            case let .success(outcomes):
                if outcomes.contains(where: { if case .rows = $0 { return false }; return true }) {
                    // A statement failed in a way rewind_append does not report (a
                    // bug or a constraint): the batch was aborted as a whole, so
                    // retry each row on its own to keep the others' commits.
                    self.logger.warning("append batch aborted; retrying \(batch.count) rows one by one")
                    self.retryOneByOne(batch[...])
                } else {
                    self.batchInFlight = false
                    for (p, o) in zip(batch, outcomes) { p.done(Self.outcome(o)) }
                }
            }
        }
    }

    private func retryOneByOne(_ rest: ArraySlice<PendingAppend>) {
        guard let p = rest.first else {
            batchInFlight = false
            return
        }
        connection.send([p.statement]) { [unowned self] result in
            switch result {
            case let .failure(e): p.done(.failed(e))
            case let .success(outcomes): p.done(Self.outcome(outcomes[0]))
            }
            self.retryOneByOne(rest.dropFirst())
        }
    }

    private static func outcome(_ o: PipelineConnection.Outcome) -> AppendOutcome {
        switch o {
        case let .rows(rows):
            let version = rows.int(0, 1) ?? 0
            switch rows[0, 0] {
            case "ok": return .committed
            case "duplicate": return .duplicate(version: version)
            case "tx_conflict": return .txConflict(version: version)
            case "clash": return .clash(head: version)
            case "no_document": return .noDocument
            default: return .failed(RewindError(.internal, "unexpected append status \(rows[0, 0] ?? "null")"))
            }
        case let .failed(f): return .failed(RewindError(.internal, "append failed: \(f)"))
        case .aborted: return .failed(RewindError(.internal, "append aborted"))
        }
    }

    // MARK: Reads and accounts

    /// Events of `doc` after `after` (and up to `to`), oldest first, at most `limit`.
    public func events(doc: String, after: Int64, to: Int64? = nil, limit: Int, _ done: @escaping (Result<[Event], RewindError>) -> Void) {
        query(EventRows.range(doc: doc, after: after, to: to, limit: limit)) { result in
            done(result.flatMap { rows in Result { () throws(RewindError) in try EventRows.decode(doc: doc, rows) } })
        }
    }

    /// Events and group marks of `doc` after version `afterVersion` and mark
    /// `afterMark`, up to version `to`, merged in log order (at most `limit` events).
    public func entries(doc: String, afterVersion: Int64, afterMark: Int64, to: Int64, limit: Int,
                        _ done: @escaping (Result<[LogEntry], RewindError>) -> Void)
    {
        events(doc: doc, after: afterVersion, to: to, limit: limit) { [self] result in
            switch result {
            case let .failure(e): done(.failure(e))
            case let .success(events):
                let upTo = events.last?.version ?? afterVersion
                self.query(MarkRows.range(doc: doc, after: afterMark, toVersion: upTo, limit: 100_000)) { result in
                    done(result.flatMap { rows in
                        Result { () throws(RewindError) in LogEntry.merge(events, try MarkRows.decode(doc: doc, rows)) }
                    })
                }
            }
        }
    }

    /// The version and content digest of a user's transaction in `doc`, if the log has it.
    public func transaction(doc: String, user: Int64, tx: String, _ done: @escaping (Result<(version: Int64, digest: String)?, RewindError>) -> Void) {
        query(.init("SELECT version, tx_digest FROM events WHERE doc = $1 AND user_id = $2 AND tx = $3", [doc, String(user), tx])) { result in
            done(result.map { rows in
                guard rows.count == 1, let v = rows.int(0, 0), let d = rows[0, 1] else { return nil }
                return (version: v, digest: d)
            })
        }
    }

    // MARK: Snapshots

    public struct Snapshot {
        public var version: Int64
        public var marks: Int64
        public var state: JSON
    }

    /// Stores a snapshot (best effort: a failure is logged, nothing depends on it).
    public func saveSnapshot(doc: String, version: Int64, marks: Int64, state: JSON) {
        let text = JSONWriter.string(state)
        query(.init("INSERT INTO snapshots (doc, version, marks, state) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                    [doc, String(version), String(marks), text])) { [logger] result in
            if case let .failure(e) = result {
                logger.warning("snapshot not stored", metadata: ["doc": "\(doc)", "version": "\(version)", "error": "\(e)"])
            }
        }
    }

    /// The newest snapshot of `doc`, if any.
    public func latestSnapshot(doc: String, _ done: @escaping (Result<Snapshot?, RewindError>) -> Void) {
        query(.init("SELECT version, marks, state FROM snapshots WHERE doc = $1 ORDER BY version DESC, marks DESC LIMIT 1", [doc])) { result in
            done(result.flatMap { rows in
                guard rows.count == 1 else { return .success(nil) }
                guard let v = rows.int(0, 0), let m = rows.int(0, 1), let text = rows[0, 2] else {
                    return .failure(RewindError(.internal, "malformed snapshot row of \(doc)"))
                }
                do { return .success(Snapshot(version: v, marks: m, state: try JSONParser.parse(text, maxDepth: 256))) } catch {
                    return .failure(RewindError(.internal, "snapshot of \(doc) at \(v) does not parse: \(error)"))
                }
            })
        }
    }

    public struct Head: Sendable, Equatable {
        public var version: Int64
        public var marks: Int64
    }

    /// The head version and mark count of `doc`, or nil when there is no such document.
    public func head(doc: String, _ done: @escaping (Result<Head?, RewindError>) -> Void) {
        query(.init("SELECT head, marks FROM documents WHERE id = $1", [doc])) { result in
            done(result.map { rows in
                guard rows.count == 1, let v = rows.int(0, 0), let m = rows.int(0, 1) else { return nil }
                return Head(version: v, marks: m)
            })
        }
    }

    /// Creates a document owned by `owner`; false when the id is taken.
    public func createDocument(_ doc: String, title: String?, owner: Int64, _ done: @escaping (Result<Bool, RewindError>) -> Void) {
        query(.init("INSERT INTO documents (id, title, owner) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id",
                    [doc, title, String(owner)])) { result in
            done(result.map { $0.count == 1 })
        }
    }

    /// The owner and members of `doc`, or nil when there is no such document.
    public func access(doc: String, _ done: @escaping (Result<DocumentAccess?, RewindError>) -> Void) {
        var s = AccessRows.load
        s.params = [doc]
        query(s) { result in done(result.flatMap { rows in Result { () throws(RewindError) in try AccessRows.decode(rows) } }) }
    }

    /// Gives `user` (a name) `role` on `doc`, or takes it away (nil), as `by`.
    public func share(doc: String, user: String, role: Role?, by: Int64,
                      _ done: @escaping (Result<AccessRows.Shared, RewindError>) -> Void)
    {
        query(.init(AccessRows.share, AccessRows.shareParams(doc: doc, user: user, role: role, by: by))) { result in
            done(result.flatMap { rows in Result { () throws(RewindError) in try AccessRows.shared(rows, doc: doc, user: user, role: role) } })
        }
    }

    /// The user a token belongs to, or nil for an unknown token.
    public func authenticate(token: String, _ done: @escaping (Result<(id: Int64, name: String)?, RewindError>) -> Void) {
        query(.init(Accounts.authenticateSQL, [token])) { result in
            done(result.map { rows in
                guard rows.count == 1, let id = rows.int(0, 0), let name = rows[0, 1] else { return nil }
                return (id: id, name: name)
            })
        }
    }

    private func query(_ s: PipelineConnection.Statement, _ done: @escaping (Result<Rows, RewindError>) -> Void) {
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
