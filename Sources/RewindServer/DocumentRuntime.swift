import Logging
import RewindCore
import RewindLoop
import RewindStore

/// One document as the server serves it: the committed ledger, the ledger
/// with commands still being committed on top (`speculative`), and the
/// terminals that have it open.
///
/// A command (a submit, an undo or redo, a group mark) runs on the
/// speculative ledger at once, so the next one can be checked against it
/// without waiting for the commit; the log entries it produced then go to the
/// store's next group commit. Only when an entry is confirmed is it applied to
/// the committed ledger and broadcast, and only when the command's last entry
/// is confirmed is it acknowledged. If an append does not commit (storage
/// down, another server wrote first), everything speculative is dropped
/// (`speculative = committed`, a cheap copy-on-write assignment), the log is
/// read to catch up, and commands that can be retried run again.
final class DocumentRuntime {
    enum Command {
        case submit(DocumentLedger.Submission)
        /// Undo or redo; `closing` are the terminal's open groups, closed first.
        case revert(DocumentLedger.RevertRequest, closing: [GroupClose])
        case mark(MarkRequest)
    }

    struct GroupClose {
        var group: String
        var userID: Int64
        var client: String
        var action: String?
        var selection: Selection?
    }

    struct MarkRequest {
        var kind: GroupMark.Kind
        var userID: Int64
        var client: String
        var group: String?
        var scope: Key?
        var action: String?
        var selection: Selection?
        var tx: String?
    }

    enum Outcome {
        case version(Int64)
        case revert(DocumentLedger.RevertResult)
        /// A mark was recorded (or there was nothing to record).
        case marked
    }

    typealias Reply = (Result<Outcome, RewindError>) -> Void

    struct Request {
        var command: Command
        var replies: [Reply]
        var attempts = 0
    }

    private struct Pending {
        let entry: LogEntry
        /// Set on the command's last entry: answered when that commits.
        var request: Request?
        var outcome: Outcome
    }

    private enum State { case stale, catchingUp, ready }

    let id: String
    private unowned let server: Server
    private(set) var committed: DocumentLedger
    private var speculative: DocumentLedger
    private var committedHeadID: String?
    private var speculativeHeadID: String?
    private var state = State.stale
    private var loadedOnce = false
    private var pending: [Pending] = []
    private var whenReadyQueue: [(RewindError?) -> Void] = []
    private var generation = 0

    private(set) var subscribers: [Int: Connection] = [:]
    /// Focus and selection of the terminals with a first responder here, by connection id.
    var presence: [Int: Presence] = [:]
    /// Terminals whose presence an edit moved this loop turn: pushed once, before the loop sleeps.
    var movedPresence: Set<Int> = []
    /// Wire form of the newest committed events, oldest first, for catch-up from memory.
    private(set) var recent: [(version: Int64, json: JSON)] = []

    init(id: String, server: Server) {
        self.id = id
        self.server = server
        committed = DocumentLedger(doc: id, limits: server.config.limits, undoLevels: server.config.undoLevels)
        speculative = committed
    }

    var isIdle: Bool { subscribers.isEmpty && pending.isEmpty && whenReadyQueue.isEmpty && state != .catchingUp && opensInFlight == 0 }
    /// `open`s under way on any connection (they subscribe when done).
    var opensInFlight = 0
    var hasPending: Bool { !pending.isEmpty }
    /// The speculative history: what the next command will see.
    var history: UndoHistory { speculative.history }
    /// The speculative ledger: the committed state plus the commands still
    /// being committed. Requests that read the document (focus, the chain,
    /// hit-testing) see it, so they see what the same terminal sent before them.
    var current: DocumentLedger { speculative }

    func subscribe(_ c: Connection) { subscribers[c.id] = c }
    func unsubscribe(_ c: Connection) { subscribers[c.id] = nil }

    // MARK: Readiness and catch-up

    /// Runs `body` once the runtime has read the log up to its head (at once if it has).
    ///
    /// Waiters run in the order they asked, so requests of one connection keep
    /// the order they were sent in; one that asks again from inside a waiter
    /// (an undo handler that then runs its command) goes at once.
    func whenReady(_ body: @escaping (RewindError?) -> Void) {
        if state == .ready && whenReadyQueue.isEmpty && headChecks == 0 { body(nil); return }
        whenReadyQueue.append(body)
        if state == .stale { catchUp() }
    }

    /// Like `whenReady`, but first asks the log for its head, so that entries
    /// another server appended are read before `body` runs (used by `open`).
    /// Requests made meanwhile wait behind it: a `focus` pipelined behind an
    /// `open` runs after that open has subscribed the terminal.
    func whenCurrent(_ body: @escaping (RewindError?) -> Void) {
        guard state == .ready && whenReadyQueue.isEmpty && headChecks == 0 else { return whenReady(body) }
        headChecks += 1
        server.store.head(doc: id) { [self] result in
            self.headChecks -= 1
            switch result {
            case let .failure(e): body(e)
            case .success(nil): body(.notFound("no document \"\(self.id)\""))
            case let .success(head?):
                if self.isBehind(head) && self.state == .ready && self.pending.isEmpty { self.state = .stale }
                self.whenReadyQueue.insert(body, at: 0)  // ahead of what queued behind it
            }
            if self.state == .stale { self.catchUp() } else if self.state == .ready && self.headChecks == 0 { self.releaseWaiters() }
        }
    }
    /// Head queries of `whenCurrent` under way: while one is out, others wait behind it.
    private var headChecks = 0

    private func isBehind(_ head: EventStore.Head) -> Bool {
        head.version > committed.version || head.marks > committed.history.markCount
    }

    private func catchUp() {
        state = .catchingUp
        if !loadedOnce && committed.version == 0 && committed.history.markCount == 0 && server.config.snapshotEvery > 0 {
            return loadSnapshot()
        }
        readHead()
    }

    /// First load: start from the newest snapshot, reading only the tail of
    /// the log it needs; on any trouble, replay the whole log instead.
    private func loadSnapshot() {
        server.store.latestSnapshot(doc: id) { [self] result in
            guard case let .success(snapshot?) = result else {
                if case let .failure(e) = result { self.server.logger.warning("snapshot unreadable; replaying the log", metadata: ["doc": "\(self.id)", "error": "\(e)"]) }
                return self.readHead()
            }
            let start: Int64
            do { start = try DocumentLedger.tailStart(snapshot: snapshot.state, limits: self.server.config.limits) } catch {
                self.server.logger.warning("snapshot unusable; replaying the log", metadata: ["doc": "\(self.id)", "error": "\(error)"])
                return self.readHead()
            }
            self.readTail(snapshot, from: start, into: [])
        }
    }

    private func readTail(_ snapshot: EventStore.Snapshot, from start: Int64, into tail: [Event]) {
        let after = (tail.last?.version ?? start - 1)
        guard after < snapshot.version else { return restore(snapshot, tail) }
        server.store.events(doc: id, after: after, to: snapshot.version, limit: 5_000) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case let .success(events):
                if events.isEmpty { return self.catchUpFailed(RewindError(.internal, "log of \(self.id) ends before its snapshot")) }
                self.readTail(snapshot, from: start, into: tail + events)
            }
        }
    }

    private func restore(_ snapshot: EventStore.Snapshot, _ tail: [Event]) {
        do {
            let ledger = try DocumentLedger(doc: id, snapshot: snapshot.state, tail: tail, limits: server.config.limits)
            guard ledger.history.markCount == snapshot.marks, ledger.version == snapshot.version else {
                throw RewindError(.internal, "snapshot header and body disagree")
            }
            committed = ledger
            committedHeadID = tail.last?.id
            recent = tail.suffix(server.config.recentEvents).map { (version: $0.version, json: $0.json) }
            server.logger.debug("loaded from snapshot", metadata: ["doc": "\(id)", "version": "\(snapshot.version)", "tail": "\(tail.count)"])
        } catch {
            server.logger.warning("snapshot does not restore; replaying the log", metadata: ["doc": "\(id)", "error": "\(error)"])
        }
        readHead()
    }

    private func readHead() {
        server.store.head(doc: id) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case .success(nil): self.catchUpFailed(.notFound("no document \"\(id)\""))
            case let .success(head?): self.readLog(upTo: head)
            }
        }
    }

    private func readLog(upTo head: EventStore.Head) {
        guard isBehind(head) else { return caughtUp() }
        server.store.entries(doc: id, afterVersion: committed.version, afterMark: committed.history.markCount,
                             to: head.version, limit: 5_000) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case let .success(entries):
                do throws(RewindError) {
                    for e in entries { try self.commit(e) }
                } catch {
                    self.server.logger.critical("log does not replay", metadata: ["doc": "\(self.id)", "error": "\(error)"])
                    return self.catchUpFailed(error)
                }
                if entries.isEmpty { return self.catchUpFailed(RewindError(.internal, "log of \(self.id) ends before its head \(head)")) }
                self.readLog(upTo: head)
            }
        }
    }

    private func caughtUp() {
        speculative = committed
        speculativeHeadID = committedHeadID
        state = .ready
        if !loadedOnce {
            loadedOnce = true
            if closeGroupsLeftOpen() { return }  // waiters run once those marks are in
        }
        releaseWaiters()
    }

    /// Runs the waiters in order; one that asks `whenReady` again runs at once.
    private func releaseWaiters() {
        let waiting = whenReadyQueue
        whenReadyQueue = []
        for w in waiting { w(nil) }
        // A waiter's append failed at once (storage down) and left the state
        // stale: anything queued since must not sit without a catch-up.
        if state == .stale && !whenReadyQueue.isEmpty { catchUp() }
    }

    /// A server that stopped without closing its terminals' groups left them
    /// open in the log; on loading the document, close them before anyone is
    /// served (SPEC section 4). False when there were none.
    private func closeGroupsLeftOpen() -> Bool {
        let h = committed.history
        let closes: [MarkRequest] = h.open.keys.sorted().compactMap { group in
            guard let g = h.open[group]!.lazy.compactMap({ h.groups[.init(id: group, scope: $0)] }).first else { return nil }
            return MarkRequest(kind: .close, userID: g.user, client: g.client, group: group)
        }
        guard !closes.isEmpty else { return false }
        server.logger.info("closing groups left open", metadata: ["doc": "\(id)", "groups": "\(closes.count)"])
        var left = closes.count
        for m in closes {
            // Straight to `process`: `run` would queue behind the waiters.
            process(Request(command: .mark(m), replies: [{ [self] _ in
                left -= 1
                if left == 0 { self.releaseWaiters() }
            }]))
        }
        return true
    }

    private func catchUpFailed(_ e: RewindError) {
        state = .stale
        let waiting = whenReadyQueue
        whenReadyQueue = []
        for w in waiting { w(e) }
        server.documentMayBeIdle(self)
    }

    // MARK: Command → commit → broadcast → reply

    func run(_ request: Request) {
        whenReady { [self] error in
            if let error { return request.replies.forEach { $0(.failure(error)) } }
            self.process(request)
        }
    }

    private func process(_ request: Request) {
        var entries: [LogEntry] = []
        let outcome: Outcome
        do {
            switch request.command {
            case let .submit(s):
                switch try speculative.append(s) {
                case let .duplicate(version):
                    if let i = pending.firstIndex(where: { if case let .event(e) = $0.entry { return e.version == version }; return false }),
                       pending[i].request != nil
                    {
                        pending[i].request!.replies += request.replies  // answered when the original commits
                    } else {
                        request.replies.forEach { $0(.success(.version(version))) }
                    }
                    return
                case let .appended(event):
                    entries.append(.event(event))
                    outcome = .version(event.version)
                }
            case let .revert(r, closing):
                for c in closing where speculative.history.open[c.group] != nil {
                    entries.append(.mark(speculative.mark(.close, userID: c.userID, client: c.client, group: c.group,
                                                          action: c.action, selection: c.selection, id: UUID.random(),
                                                          time: wallClockMillis())))
                }
                let result = try speculative.revert(r)
                if let e = result.event { entries.append(.event(e)) }
                outcome = .revert(result)
            case let .mark(m):
                if let tx = m.tx, speculative.markTransaction(user: m.userID, tx: tx) != nil {
                    return request.replies.forEach { $0(.success(.marked)) }
                }
                if m.kind == .close, speculative.history.open[m.group ?? ""] == nil {
                    return request.replies.forEach { $0(.success(.marked)) }  // an empty group vanishes
                }
                entries.append(.mark(speculative.mark(m.kind, userID: m.userID, client: m.client, group: m.group, scope: m.scope,
                                                      action: m.action, selection: m.selection, tx: m.tx, id: UUID.random(),
                                                      time: wallClockMillis())))
                outcome = .marked
            }
        } catch let error where error.code == .version && !speculative.knowsAllTransactions {
            if case let .submit(s) = request.command { return lookUpOldTransaction(s, request, otherwise: error) }
            return request.replies.forEach { $0(.failure(error)) }
        } catch {
            // Marks recorded before a failing revert must not stay speculative
            // without being stored: store them (they are complete on their own).
            for e in entries { enqueue(e, request: nil, outcome: .marked) }
            return request.replies.forEach { $0(.failure(error)) }
        }
        if entries.isEmpty { return request.replies.forEach { $0(.success(outcome)) } }
        for (i, e) in entries.enumerated() {
            enqueue(e, request: i == entries.count - 1 ? request : nil, outcome: outcome)
        }
    }

    /// A submit far behind the head on a ledger restored from a snapshot may
    /// be the retry of a transaction older than what the ledger keeps: the
    /// log answers for it.
    private func lookUpOldTransaction(_ s: DocumentLedger.Submission, _ request: Request, otherwise error: RewindError) {
        server.store.transaction(doc: id, user: s.userID, tx: s.tx) { result in
            switch result {
            case let .success(seen?) where seen.digest == s.digest:
                request.replies.forEach { $0(.success(.version(seen.version))) }
            case let .success(seen?):
                request.replies.forEach {
                    $0(.failure(.conflict("transaction \"\(s.tx)\" was already used with different content", details: ["version": .int(seen.version)])))
                }
            case .success(nil): request.replies.forEach { $0(.failure(error)) }
            case let .failure(e): request.replies.forEach { $0(.failure(e)) }
            }
        }
    }

    private func enqueue(_ entry: LogEntry, request: Request?, outcome: Outcome) {
        var prev = speculativeHeadID
        var marks = speculative.history.markCount
        switch entry {
        case let .event(e):
            speculativeHeadID = e.id
        case let .mark(m):
            prev = nil
            marks = m.n - 1
        }
        pending.append(Pending(entry: entry, request: request, outcome: outcome))
        let generation = self.generation
        let version: Int64
        switch entry { case let .event(e): version = e.version; case let .mark(m): version = -m.n }
        server.store.append(entry, doc: id, after: prev, marks: marks) { [self] result in
            self.appendDone(version, generation: generation, result)
        }
    }

    private func appendDone(_ key: Int64, generation: Int, _ result: EventStore.AppendOutcome) {
        // Outcomes of entries dropped by an earlier failure no longer matter:
        // they were built on an entry that never committed, so they cannot have.
        guard generation == self.generation, let first = pending.first, Self.key(first.entry) == key else { return }
        if case .committed = result {
            pending.removeFirst()
            do { try commit(first.entry) } catch {
                server.logger.critical("committed entry does not replay", metadata: ["doc": "\(id)", "error": "\(error)"])
            }
            first.request?.replies.forEach { $0(.success(first.outcome)) }
            return
        }
        // Drop everything speculative; it was computed on top of this entry.
        self.generation += 1
        let dropped = pending.compactMap(\.request)
        pending = []
        speculative = committed
        speculativeHeadID = committedHeadID
        state = .stale
        switch result {
        case let .failed(error):
            server.logger.warning("append failed", metadata: ["doc": "\(id)", "error": "\(error)"])
            for r in dropped { r.replies.forEach { $0(.failure(error)) } }
        default:
            // Another writer got there first: catch up from the log and run the
            // same requests again (a duplicate then answers with its version).
            // A transaction the log knows and this ledger did not (older than
            // a snapshot's tail) is answered from the log's outcome.
            var retry = dropped[...]
            if first.request != nil, case let .event(e) = first.entry {
                switch result {
                case let .duplicate(version):
                    retry = retry.dropFirst()
                    first.request!.replies.forEach { $0(.success(.version(version))) }
                case let .txConflict(version):
                    retry = retry.dropFirst()
                    first.request!.replies.forEach {
                        $0(.failure(.conflict("transaction \"\(e.tx)\" was already used with different content", details: ["version": .int(version)])))
                    }
                default: break
                }
            }
            server.logger.info("append clashed; catching up and retrying", metadata: ["doc": "\(id)", "outcome": "\(result)"])
            for var r in retry {
                r.attempts += 1
                if r.attempts > 3 {
                    r.replies.forEach { $0(.failure(RewindError(.unavailable, "document \(id) is contended; retry"))) }
                } else {
                    run(r)
                }
            }
        }
        if whenReadyQueue.isEmpty { server.documentMayBeIdle(self) }
    }

    private static func key(_ entry: LogEntry) -> Int64 {
        switch entry { case let .event(e): return e.version; case let .mark(m): return -m.n }
    }

    /// Applies a committed entry and tells every terminal with the document open.
    private func commit(_ entry: LogEntry) throws(RewindError) {
        try committed.replay(entry)
        switch entry {
        case let .mark(m):
            server.promptStateMayHaveChanged(self, user: m.userID)
        case let .event(event):
            committedHeadID = event.id
            let json = event.json
            recent.append((version: event.version, json: json))
            if recent.count > 2 * server.config.recentEvents { recent.removeFirst(recent.count - server.config.recentEvents) }
            if server.config.snapshotEvery > 0, event.version % Int64(server.config.snapshotEvery) == 0, state == .ready {
                server.store.saveSnapshot(doc: id, version: event.version, marks: committed.history.markCount, state: committed.snapshotJSON)
                committed.compactHistory()
            }
            guard !subscribers.isEmpty else { return }
            // Encoded once; the same bytes go to every terminal.
            let bytes = SharedBytes(Message.line(.obj([("push", "events"), ("doc", .string(id)), ("events", .array([json]))])))
            for c in subscribers.values { c.push(bytes) }
            server.promptStateMayHaveChanged(self, user: event.userID)
            server.presenceAfter(self, event)
        }
    }

    /// Committed events after `since` held in memory, or nil if some are older than that.
    func recentEvents(after since: Int64) -> [JSON]? {
        if since >= committed.version { return [] }
        guard let oldest = recent.first?.version, oldest <= since + 1 else { return nil }
        return recent.drop(while: { $0.version <= since }).map(\.json)
    }
}
