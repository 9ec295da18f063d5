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
    private var state = State.stale
    /// Stopped: a committed entry did not apply (`halt`); it answers nothing any more.
    private(set) var halted = false
    private var loadedOnce = false
    private var pending: [Pending] = []
    private var whenReadyQueue: [(RewindError?) -> Void] = []
    private var generation = 0

    private(set) var subscribers: [Int: Connection] = [:]
    /// Focus and selection of the terminals with a first responder here, by connection id.
    var presence: [Int: Presence] = [:]
    /// Terminals whose presence an edit moved this loop turn: pushed once, before the loop sleeps.
    var movedPresence: Set<Int> = []
    /// Terminals on other instances with presence here (`Cluster`), by instance and terminal.
    var remotePresence: [String: RemoteTerminal] = [:]
    /// Wire form of the newest committed events, oldest first, for catch-up from memory.
    private(set) var recent: [(version: Int64, bytes: [UInt8])] = []

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
    /// Loaded and following the log: `committed` is the head as this instance knows it.
    var isReady: Bool { state == .ready }

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
            if self.state == .stale {
                self.catchUp()
            } else if self.state == .ready && self.headChecks == 0 {
                self.releaseWaiters()
                self.followLog()
            }
        }
    }
    /// Head queries of `whenCurrent` under way: while one is out, others wait behind it.
    private var headChecks = 0

    private func isBehind(_ head: EventStore.Head) -> Bool { head.seq > committed.seq }

    private func catchUp() {
        state = .catchingUp
        if !loadedOnce && committed.seq == 0 && server.config.snapshotEvery > 0 {
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
            self.server.store.tail(doc: self.id, fromVersion: start, toSeq: snapshot.seq) { result in
                switch result {
                case let .failure(e): self.catchUpFailed(e)
                case let .success(tail): self.restore(snapshot, tail)
                }
            }
        }
    }

    /// The ledger from a snapshot, if the log's chain vouches for it; else the log is replayed.
    private func restore(_ snapshot: EventStore.Snapshot, _ tail: [LogEntry]) {
        do {
            let ledger = try DocumentLedger(doc: id, snapshot: snapshot.state, tail: tail, limits: server.config.limits)
            guard ledger.seq == snapshot.seq else { throw RewindError(.internal, "snapshot header and body disagree") }
            committed = ledger
            let events = tail.compactMap { if case let .event(e) = $0 { return e }; return nil }
            recent = events.suffix(server.config.recentEvents).map { (version: $0.version, bytes: $0.wireBytes) }
            server.logger.debug("loaded from snapshot", metadata: ["doc": "\(id)", "seq": "\(snapshot.seq)", "tail": "\(tail.count)"])
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
        server.store.entries(doc: id, afterSeq: committed.seq, toSeq: head.seq, limit: 5_000) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case let .success(entries):
                do throws(RewindError) {
                    for e in entries { try self.commit(e, trusted: false) }
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
        if !loadedOnce {
            loadedOnce = true
            // Waiters run once the groups left open are closed (SPEC section 4).
            server.cluster.ask(self)
            return closeOrphanedGroups(firstLoad: true) { [self] in
                self.releaseWaiters()
                self.followLog()
            }
        }
        state = .ready
        releaseWaiters()
        followLog()
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
    /// open in the log: they are closed before anyone is served (SPEC
    /// section 4) — but only those whose instance is gone: a group a terminal
    /// on another live instance holds open stays open (`EventStore.orphanedGroups`).
    ///
    /// `firstLoad`: the document was just read (state `catchingUp`, made
    /// `ready` here before the closes run). Otherwise (the periodic sweep,
    /// after an instance died) groups this instance's terminals hold are
    /// skipped, and nothing is done if the document is busy catching up.
    /// `then` runs once the closes are committed, or at once.
    func closeOrphanedGroups(firstLoad: Bool, then: @escaping () -> Void = {}) {
        let heldHere = firstLoad ? [] : Set(subscribers.values.compactMap { $0.groups[id]?.id })
        let candidates = committed.history.open.keys.filter { !heldHere.contains($0) }.sorted()
        guard !candidates.isEmpty else {
            if firstLoad { state = .ready }
            return then()
        }
        server.store.orphanedGroups(doc: id, groups: candidates) { [self] result in
            if firstLoad { self.state = .ready } else if self.state != .ready || self.halted { return then() }
            guard case let .success(orphans) = result else {
                if case let .failure(e) = result {
                    self.server.logger.warning("could not tell which open groups are orphaned; leaving them open",
                                               metadata: ["doc": "\(self.id)", "error": "\(e)"])
                }
                return then()
            }
            // What is still open now (the sweep's document may have moved meanwhile).
            let h = self.speculative.history
            let closes: [MarkRequest] = orphans.sorted().compactMap { group in
                guard let scopes = h.open[group], let g = scopes.lazy.compactMap({ h.groups[.init(id: group, scope: $0)] }).first else { return nil }
                return MarkRequest(kind: .close, userID: g.user, client: g.client, group: group)
            }
            guard !closes.isEmpty else { return then() }
            self.server.logger.info("closing groups left open by instances that are gone", metadata: ["doc": "\(self.id)", "groups": "\(closes.count)"])
            var left = closes.count
            for m in closes {
                // Straight to `process`: `run` would queue behind the waiters.
                self.process(Request(command: .mark(m), replies: [{ _ in
                    left -= 1
                    if left == 0 { then() }
                }]))
            }
        }
    }

    /// Groups are open in the log that no terminal here holds: another
    /// instance's terminals', or left by one that is gone (the sweep checks).
    var holdsGroupsOfOthers: Bool {
        let open = committed.history.open
        guard state == .ready, !open.isEmpty else { return false }
        let heldHere = Set(subscribers.values.compactMap { $0.groups[id]?.id })
        return open.keys.contains { !heldHere.contains($0) }
    }

    // MARK: Other instances' commits

    /// The head the newest `rewind_log` notice announced: entries up to it
    /// are read from the log once nothing of this instance's is in flight
    /// (its own appends' outcomes say whether the log moved under them).
    private var noticedSeq: Int64 = 0
    /// Notices may have been missed (the listening connection came back): ask the log for its head.
    private var headUnknown = false

    /// A writer (another instance, this one, an operator's import) moved the head to `seq`.
    /// Notices may come late, coalesced or out of order: only "the log reaches at least `seq`" is taken from one.
    /// A document nobody here has open does not follow (its next `open` reads the head anyway).
    func logMoved(to seq: Int64) {
        guard loadedOnce, !halted, seq > committed.seq else { return }
        noticedSeq = max(noticedSeq, seq)
        if !subscribers.isEmpty || opensInFlight > 0 { followLog() }
    }

    /// Notices may have been lost: read the head and catch up from it.
    func logMayHaveMoved() {
        guard loadedOnce, !halted else { return }
        headUnknown = true
        followLog()
    }

    /// Reads what the notices announced, in order, through the same
    /// `commit` as this instance's own entries (so the terminals here get
    /// them as pushes), when no command of ours is in flight.
    private func followLog() {
        guard !halted, pending.isEmpty, headChecks == 0, whenReadyQueue.isEmpty else { return }
        if state == .stale && (headUnknown || noticedSeq > committed.seq) {
            headUnknown = false
            return catchUp()
        }
        guard state == .ready else { return }
        if headUnknown {
            headUnknown = false
            state = .catchingUp
            return readHead()
        }
        guard noticedSeq > committed.seq else { return }
        state = .catchingUp
        readLog(upTo: EventStore.Head(version: 0, seq: noticedSeq))
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
        guard !halted else { return request.replies.forEach { $0(.failure(Self.haltedError(id))) } }
        whenReady { [self] error in
            if let error { return request.replies.forEach { $0(.failure(error)) } }
            self.process(request)
        }
    }

    private func process(_ request: Request) {
        let after = speculative.headHash
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
            var prev = after
            for e in entries {
                enqueue(e, after: prev, request: nil, outcome: .marked)
                prev = e.hash
            }
            return request.replies.forEach { $0(.failure(error)) }
        }
        if entries.isEmpty { return request.replies.forEach { $0(.success(outcome)) } }
        var prev = after
        for (i, e) in entries.enumerated() {
            enqueue(e, after: prev, request: i == entries.count - 1 ? request : nil, outcome: outcome)
            prev = e.hash
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

    /// Hands a sealed entry to the store, which commits it only on top of
    /// the entry whose hash is `after` (what it was computed against).
    private func enqueue(_ entry: LogEntry, after: [UInt8], request: Request?, outcome: Outcome) {
        pending.append(Pending(entry: entry, request: request, outcome: outcome))
        let generation = self.generation
        let seq = entry.seq
        server.store.append(entry, doc: id, after: after, checkDuplicates: !speculative.knowsAllTransactions) { [self] result in
            self.appendDone(seq, generation: generation, result)
        }
    }

    private func appendDone(_ seq: Int64, generation: Int, _ result: EventStore.AppendOutcome) {
        // Outcomes of entries dropped by an earlier failure no longer matter:
        // they were built on an entry that never committed, so they cannot have.
        guard generation == self.generation, let first = pending.first, first.entry.seq == seq else { return }
        if case .committed = result {
            pending.removeFirst()
            do { try commit(first.entry, trusted: true) } catch {
                return halt(error, with: first.request)
            }
            first.request?.replies.forEach { $0(.success(first.outcome)) }
            if pending.isEmpty { followLog() }
            return
        }
        // Drop everything speculative; it was computed on top of this entry.
        self.generation += 1
        let dropped = pending.compactMap(\.request)
        pending = []
        speculative = committed
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
                if r.attempts > Self.maxAttempts {
                    r.replies.forEach { $0(.failure(RewindError(.unavailable, "document \(id) is contended; retry"))) }
                } else {
                    run(r)
                }
            }
        }
        if whenReadyQueue.isEmpty { server.documentMayBeIdle(self) }
    }

    /// A committed entry does not apply to the committed ledger: this server
    /// and the log disagree about the document (a bug, or a log changed under
    /// it). Acknowledging on would hand out versions it cannot serve, so the
    /// document stops: what waits for it is answered `internal`, its
    /// terminals are told `closed`, and it is unloaded; the next `open` reads
    /// it from the log again.
    private func halt(_ error: RewindError, with first: Request?) {
        server.logger.error("document stopped: a committed entry does not apply", metadata: ["doc": "\(id)", "error": "\(error)"])
        halted = true
        generation += 1
        let failure = Self.haltedError(id, error)
        var requests = pending.compactMap(\.request)
        if let first { requests.insert(first, at: 0) }
        pending = []
        for r in requests { r.replies.forEach { $0(.failure(failure)) } }
        let waiting = whenReadyQueue
        whenReadyQueue = []
        for w in waiting { w(failure) }
        server.documentHalted(self)
    }

    /// Tries of one command when other instances keep committing first: each
    /// clash means one of them made progress, so this only bounds unfairness.
    static let maxAttempts = 10

    static func haltedError(_ doc: String, _ cause: RewindError? = nil) -> RewindError {
        RewindError(.internal, "document \"\(doc)\" was stopped: this server and its log disagree"
                        + (cause.map { " (\($0.message))" } ?? "") + "; open it again, and please report this")
    }

    /// Applies a committed entry and tells every terminal with the document
    /// open. `trusted`: the entry is one this server sealed (its hash was
    /// computed, not read), else its hash is checked against the chain.
    private func commit(_ entry: LogEntry, trusted: Bool) throws(RewindError) {
        if trusted, let v = server.config.faultUnappliableVersion, case let .event(e) = entry, e.version == v {
            throw RewindError(.internal, "injected fault: event \(v) does not apply (--fault-unappliable-version)")
        }
        try committed.replay(entry, verify: !trusted)
        switch entry {
        case let .mark(m):
            server.promptStateMayHaveChanged(self, user: m.userID)
        case let .event(event):
            let wire = event.wireBytes
            recent.append((version: event.version, bytes: wire))
            if recent.count > 2 * server.config.recentEvents { recent.removeFirst(recent.count - server.config.recentEvents) }
            if server.config.snapshotEvery > 0, event.version % Int64(server.config.snapshotEvery) == 0, state == .ready {
                saveSnapshot()
            }
            guard !subscribers.isEmpty else { return }
            // Encoded once; the same bytes go to every terminal.
            let bytes = SharedBytes(Message.eventsPush(doc: id, [wire]))
            for c in subscribers.values { c.push(bytes) }
            server.promptStateMayHaveChanged(self, user: event.userID)
            server.presenceAfter(self, event)
        }
    }

    /// Encodes a snapshot of the committed ledger off the loop (a large
    /// document would stall every terminal), then stores it. The ledger is
    /// a value: later commits do not change the copy being encoded, which
    /// holds only what a snapshot needs (`forSnapshot`: sharing the rest
    /// with the live ledger made its next commit copy it).
    private func saveSnapshot() {
        let ledger = committed.forSnapshot
        committed.compactHistory()
        let (doc, store) = (id, server.store)
        BackgroundWork.run(on: server.loop, {
            let text = JSONWriter.string(ledger.snapshotJSON)
            return (text, SHA256.hash(Array(text.utf8)))
        }) { snapshot in
            store.saveSnapshot(doc: doc, version: ledger.version, seq: ledger.seq, hash: ledger.headHash,
                               text: snapshot.0, digest: snapshot.1)
        }
    }

    /// Committed events after `since` held in memory, or nil if some are older than that.
    func recentEvents(after since: Int64) -> [[UInt8]]? {
        if since >= committed.version { return [] }
        guard let oldest = recent.first?.version, oldest <= since + 1 else { return nil }
        return recent.drop(while: { $0.version <= since }).map(\.bytes)
    }
}
