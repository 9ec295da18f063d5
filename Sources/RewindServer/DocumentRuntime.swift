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

    /// What a command came to, answered once its entries are committed.
    enum CommandResult {
        case version(Int64)
        case revert(DocumentLedger.RevertResult)
        /// An undo or redo under `prompt` that needs the user's answer first (its closing marks, if any, are committed).
        case needsAnswer(DocumentLedger.RevertQuestion)
        /// A mark was recorded (or there was nothing to record).
        case marked
    }

    typealias Reply = (Result<CommandResult, RewindError>) -> Void

    /// A command to run in the document's order, and who waits for its answer
    /// (the wire's request is `Request`; a handler turns one into a job).
    struct Job {
        var command: Command
        var replies: [Reply]
        var attempts = 0
        /// Runs when the command has run on the speculative ledger (or failed
        /// before it could): what came after it from the same terminal may
        /// run then. Called again on a retry: it must not mind.
        var onProcessed: (() -> Void)?
    }

    struct Pending {
        let entry: LogEntry
        /// The entry's position in the log (read without copying the entry).
        let seq: Int64
        /// Set on the command's last entry: answered when that commits.
        var request: Job?
        var outcome: CommandResult
        /// The store's answer, when it came before those of the entries ahead
        /// of this one: kept until they are settled (`appendDone`).
        var early: EventStore.AppendOutcome? = nil
        /// Sent with its transaction looked up in the log (`revertsByTx`).
        var lookedUp = false
    }

    enum State { case stale, catchingUp, ready }

    let id: String
    let store: EventStore
    let config: ServerConfig
    let logger: Logger
    let loop: EventLoop

    /// What a runtime needs done outside itself, carried out in one place
    /// (`Server.carryOut`): the runtime never reaches into the server.
    enum Effect {
        /// It may have nothing to do any more (it can be unloaded).
        case mayBeIdle
        /// It stopped (`halt`): its terminals are told `closed`, it is unloaded.
        case halted
        /// Something `prompt_state` shows may have changed for `user`'s terminals.
        case promptStateMayHaveChanged(user: Int64)
        /// An event committed (terminals have it): its author's prompt state, and others' carets moved through it.
        case committed(Event)
        /// Loaded for the first time: other instances are asked about its terminals there.
        case firstLoaded
    }
    /// Set once by whoever creates the runtime.
    var onEffect: (Effect) -> Void = { _ in }
    /// The ids of the groups this instance's terminals hold open here (`OpenGroups`), set with `onEffect`.
    var groupsHeldHere: () -> Set<String> = { [] }
    // (Set by this file and DocumentRuntime+CatchUp.swift only: the two halves of one type.)
    var committed: DocumentLedger
    var speculative: DocumentLedger
    var state = State.stale
    /// Stopped: a committed entry did not apply (`halt`); it answers nothing any more.
    private(set) var halted = false
    var loadedOnce = false
    private(set) var pending: [Pending] = []
    var whenReadyQueue: [(RewindError?) -> Void] = []
    private var generation = 0
    /// A transaction this document's ledgers did not know came back from the
    /// log: from now on every entry is looked up (`revertsByTx`).
    private var lookUpEveryTransaction = false

    private(set) var subscribers: [Int: Session] = [:]
    /// Focus and selection of the terminals here with a first responder, by connection id.
    var presence: PresenceBoard
    /// Terminals on other instances with presence here (`Cluster`), by instance and terminal.
    /// The head the newest `rewind_log` notice announced: entries up to it
    /// are read from the log once nothing of this instance's is in flight
    /// (its own appends' outcomes say whether the log moved under them).
    var noticedSeq: Int64 = 0
    /// Notices may have been missed (the listening connection came back): ask the log for its head.
    var headUnknown = false
    /// The version of the newest snapshot this runtime restored or took (0: none).
    var snapshotVersion: Int64 = 0
    /// Bytes of the newest snapshot this runtime stored (0: none yet): what the next must wait for (`snapshotIsDue`).
    var lastSnapshotBytes = 0
    /// Wire form of the newest committed events, oldest first, for catch-up from memory.
    var recent: [(version: Int64, bytes: [UInt8])] = []
    /// Hashes of the log this runtime checked itself: what entries read back later are checked against (`DocumentRuntime+History.swift`).
    var anchors = ChainAnchors.fromStart
    /// Callers waiting for the walk of the entries below the snapshot this runtime started from.
    var walkWaiting: [(RewindError?) -> Void] = []

    init(id: String, store: EventStore, config: ServerConfig, logger: Logger, loop: EventLoop) {
        self.id = id
        self.store = store
        self.config = config
        self.logger = logger
        self.loop = loop
        committed = DocumentLedger(doc: id, limits: config.limits, undoLevels: config.undoLevels)
        speculative = committed
        presence = PresenceBoard(announcesMovedCarets: config.pushMovedPresence)
    }

    var isIdle: Bool { subscribers.isEmpty && pending.isEmpty && whenReadyQueue.isEmpty && state != .catchingUp && opensInFlight == 0 && olderLogReads == 0 }
    /// `open`s under way on any connection (they subscribe when done).
    var opensInFlight = 0
    var hasPending: Bool { !pending.isEmpty }
    /// The speculative history: what the next command will see. (Read in
    /// place: a getter copied the history, retaining each of its tables, at
    /// every read — the prompt state read the ledger after every commit.)
    var history: UndoHistory { _read { yield speculative.history } }
    /// The committed history, read in place (what `prompt_state` shows after each commit).
    var committedHistory: UndoHistory { _read { yield committed.history } }
    /// The speculative ledger: the committed state plus the commands still
    /// being committed. Requests that read the document (focus, the chain,
    /// hit-testing) see it, so they see what the same terminal sent before them.
    var current: DocumentLedger { _read { yield speculative } }
    /// Loaded and following the log: `committed` is the head as this instance knows it.
    var isReady: Bool { state == .ready }
    /// `whenReady` would run its body at once: ready, and nothing queued before it.
    var runsAtOnce: Bool { state == .ready && whenReadyQueue.isEmpty }
    /// Undos and redos waiting for the log of a group older than what the
    /// ledgers hold (`DocumentRuntime+History.swift`).
    var olderLogReads = 0
    /// Users whose `prompt_state` this loop turn's commits may have changed
    /// (`PromptStates.checkDue`): kept here, emptied in place each turn.
    var promptChecksDue = Set<Int64>()

    func subscribe(_ c: Session) { subscribers[c.id] = c }
    func unsubscribe(_ c: Session) { subscribers[c.id] = nil }

    // MARK: Command → commit → broadcast → reply

    func run(_ request: Job) {
        guard !halted else { return fail(request, Self.haltedError(id)) }
        // Most often ready with nothing queued: run without the closure (and the copy of the request it captures).
        if runsAtOnce { return processWithOlderLog(request) }
        whenReady { [self] error in
            if let error { return self.fail(request, error) }
            self.processWithOlderLog(request)
        }
    }

    /// Answers `request` with `error` without running it.
    func fail(_ request: Job, _ error: RewindError) {
        request.onProcessed?()
        request.replies.forEach { $0(.failure(error)) }
    }

    func process(_ request: Job) {
        // Once it has run (the terminal's next request, released by this, must see its effect).
        defer { request.onProcessed?() }
        let after = speculative.headHash
        var entries: [LogEntry] = []
        let outcome: CommandResult
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
                    outcome = .version(event.version)
                    entries.append(.event(consume event))  // moved: a copy retained each of its strings
                }
            case let .revert(r, closing):
                for c in closing where speculative.history.open[c.group] != nil {
                    entries.append(.mark(speculative.mark(.close, userID: c.userID, client: c.client, group: c.group,
                                                          action: c.action, selection: c.selection, id: UUID.random(),
                                                          time: wallClockMillis())))
                }
                switch try speculative.revertOrAsk(r) {
                case let .reverted(result):
                    if let e = result.event { entries.append(.event(e)) }
                    outcome = .revert(result)
                case let .needsAnswer(question):
                    outcome = .needsAnswer(question)
                }
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
            enqueue(consume entries, after: after, request: nil, outcome: .marked)
            return request.replies.forEach { $0(.failure(error)) }
        }
        if entries.isEmpty { return request.replies.forEach { $0(.success(outcome)) } }
        enqueue(consume entries, after: after, request: request, outcome: outcome)  // handed over: not copied to be reversed
    }

    /// A command's entries in order, each after the one before; `request`
    /// goes with the last. Each is moved out of the list (a copy retained every string of it).
    private func enqueue(_ entries: consuming [LogEntry], after: [UInt8], request: Job?, outcome: CommandResult) {
        let lookUp = !speculative.knowsAllTransactions && (lookUpEveryTransaction || request.map(Self.revertsByTx) ?? false)
        var prev = after
        entries.reverse()
        while let e = entries.popLast() {
            let hash = e.hash
            enqueue(e, after: prev, request: entries.isEmpty ? request : nil, outcome: outcome, lookUp: lookUp)
            prev = hash
        }
    }

    /// Whether the log must be asked if a command's entries repeat a
    /// transaction this ledger no longer knows (asked only of a ledger that
    /// has forgotten some). Not for a submit: a ledger keeps the ids of at
    /// least the last `maxRebaseDistance` versions, and a submit's base is at
    /// most that far behind, so the original of a retry sent with the same
    /// base is one it knows. An undo or redo retried by its `tx` has no base
    /// to bound its age, so it is looked up. Anything the ledgers miss (a
    /// retry sent with a newer base) is refused by the log's unique index and
    /// the store asks again, looking it up (`EventStore.send`); after one such
    /// miss every entry of the document is looked up (`lookUpEveryTransaction`),
    /// so a terminal repeating old transaction ids on purpose costs other
    /// documents one refused batch, not one per request. Decided from the
    /// command, not the entries: a busy document's submits pay nothing for it.
    private static func revertsByTx(_ r: Job) -> Bool {
        if case let .revert(revert, _) = r.command { return revert.tx != nil }
        return false
    }

    /// A submit far behind the head on a ledger restored from a snapshot may
    /// be the retry of a transaction older than what the ledger keeps: the
    /// log answers for it.
    private func lookUpOldTransaction(_ s: DocumentLedger.Submission, _ request: Job, otherwise error: RewindError) {
        store.transaction(doc: id, user: s.userID, tx: s.tx) { result in
            switch result {
            case let .success(seen?) where seen.digest == self.committed.fingerprint(s):
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
    private func enqueue(_ entry: consuming LogEntry, after: [UInt8], request: Job?, outcome: CommandResult, lookUp: Bool) {
        let generation = self.generation
        let seq = entry.seq
        let row = entry.row(doc: id)
        // Pending before the store has it: an append that fails at once answers (`appendDone`) before returning.
        pending.append(Pending(entry: entry, seq: seq, request: request, outcome: outcome, lookedUp: lookUp))  // its last use: moved in
        store.append(row, after: after, checkDuplicates: lookUp) { [self] result in
            self.appendDone(seq, generation: generation, result)
        }
    }

    /// The log already holds the transaction of entry `seq`, one these
    /// ledgers had forgotten: both know it again, so running the request
    /// again answers it from memory. A repeat found only because the log's
    /// unique index refused it (not looked up first) makes every later entry
    /// of the document looked up (`revertsByTx`).
    private func learnRepeat(_ seq: Int64, _ result: EventStore.AppendOutcome) {
        let version: Int64, stored: String?
        switch result {
        case let .duplicate(v): version = v; stored = nil
        case let .txConflict(v, digest): version = v; stored = digest
        default: return
        }
        guard let i = pending.firstIndex(where: { $0.seq == seq }), case let .event(e) = pending[i].entry else { return }
        let digest = stored ?? e.txDigest
        committed.remember(user: e.userID, tx: e.tx, version: version, digest: digest)
        speculative.remember(user: e.userID, tx: e.tx, version: version, digest: digest)
        if !pending[i].lookedUp { lookUpEveryTransaction = true }
    }

    private func appendDone(_ seq: Int64, generation: Int, _ result: EventStore.AppendOutcome) {
        // Outcomes of entries dropped by an earlier failure no longer matter:
        // they were built on an entry that never committed, so they cannot have.
        guard generation == self.generation, !pending.isEmpty else { return }
        learnRepeat(seq, result)
        guard pending[0].seq == seq else {
            // Answered before an entry ahead of it: the batch holding that one
            // was refused and is being sent again, after this one's batch ran
            // (and failed its claim, which expected the entry ahead). Settled
            // in order, once the ones ahead are.
            if let i = pending.firstIndex(where: { $0.seq == seq }) { pending[i].early = result }
            return
        }
        if case .committed = result {
            // Moved out (a copy retained every string of the entry, and released
            // them after); `removeFirst` copies, `removeLast` moves: most often it is the only one.
            let first = pending.count == 1 ? pending.removeLast() : pending.removeFirst()
            do { try commit(first.entry, trusted: true) } catch {
                return halt(error, with: first.request)
            }
            first.request?.replies.forEach { $0(.success(first.outcome)) }
            if pending.isEmpty { followLog() }
            if let next = pending.first, let early = next.early { appendDone(next.seq, generation: generation, early) }
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
            logger.warning("append failed", metadata: ["doc": "\(id)", "error": "\(error)"])
            for r in dropped { r.replies.forEach { $0(.failure(error)) } }
        default:
            // Another writer got there first: catch up from the log and run the
            // same requests again (a duplicate then answers with its version).
            // A transaction the log knows and this ledger had forgotten is
            // known to it now (`learnRepeat`): run again, it is answered as
            // any repeat is (a submit's first version, an undo's result, or
            // `conflict` for other content), after the entries ahead of it.
            logger.info("append clashed; catching up and retrying", metadata: ["doc": "\(id)", "outcome": "\(result)"])
            for var r in dropped {
                r.attempts += 1
                if r.attempts > Self.maxAttempts {
                    r.replies.forEach { $0(.failure(RewindError(.unavailable, "document \(id) is contended; retry"))) }
                } else {
                    run(r)
                }
            }
        }
        if whenReadyQueue.isEmpty { onEffect(.mayBeIdle) }
    }

    /// A committed entry does not apply to the committed ledger: this server
    /// and the log disagree about the document (a bug, or a log changed under
    /// it). Acknowledging on would hand out versions it cannot serve, so the
    /// document stops: what waits for it is answered `internal`, its
    /// terminals are told `closed`, and it is unloaded; the next `open` reads
    /// it from the log again.
    /// The log was changed under this server (an entry read back does not
    /// chain): the document stops as for an entry that does not apply.
    func stop(tampered error: RewindError) {
        guard !halted else { return }
        halt(error, with: nil, why: "the log was changed after it was written")
    }

    /// The log lost entries this server saw committed (`diverged(from:)`):
    /// the document is stopped and unloaded, so that the next `open` serves
    /// what the log holds now; what waits for it is answered `unavailable`
    /// (sending it again is safe: it runs on the log as it is).
    func stop(diverged why: String) {
        guard !halted else { return }
        logger.error("the log lost committed entries of \(id): \(why); PostgreSQL lost acknowledged transactions (failed over to a standby that had not received them, or restored from a backup): reading it again from the log",
                            metadata: ["doc": "\(id)"])
        let e = RewindError(.unavailable, "document \"\(id)\" is being read again: the database lost some of its latest versions (a failover); open it again")
        halt(e, with: nil, why: "the log lost committed entries", failure: e)
    }

    /// `failure`: what waiters are answered (default: `haltedError`, internal).
    private func halt(_ error: RewindError, with first: Job?, why: String = "a committed entry does not apply",
                      failure: RewindError? = nil) {
        logger.error("document stopped: \(why)", metadata: ["doc": "\(id)", "error": "\(error)"])
        halted = true
        generation += 1
        let failure = failure ?? Self.haltedError(id, error)
        var requests = pending.compactMap(\.request)
        if let first { requests.insert(first, at: 0) }
        pending = []
        for r in requests { r.replies.forEach { $0(.failure(failure)) } }
        let waiting = whenReadyQueue
        whenReadyQueue = []
        for w in waiting { w(failure) }
        onEffect(.halted)
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
    func commit(_ entry: LogEntry, trusted: Bool) throws(RewindError) {
        if trusted, let v = config.faultUnappliableVersion, case let .event(e) = entry, e.version == v {
            throw RewindError(.internal, "injected fault: event \(v) does not apply (--fault-unappliable-version)")
        }
        try committed.replay(entry, verify: !trusted)
        anchors.note(seq: committed.seq, hash: committed.headHash)
        switch entry {
        case let .mark(m):
            onEffect(.promptStateMayHaveChanged(user: m.userID))
        case let .event(event):
            let wire = event.wireBytes
            recent.append((version: event.version, bytes: wire))
            if recent.count > 2 * config.recentEvents { recent.removeFirst(recent.count - config.recentEvents) }
            if config.snapshotEvery > 0, event.version % Int64(config.snapshotEvery) == 0, state == .ready {
                if snapshotIsDue(at: event.version) { saveSnapshot() } else { compactLedgers() }
            }
            guard !subscribers.isEmpty else { return }
            // Encoded once; the same bytes go to every terminal.
            let bytes = SharedBytes(Push.events(doc: id, [wire]))
            for c in subscribers.values { c.push(bytes) }
            onEffect(.committed(event))
        }
    }

    /// Encodes a snapshot of the committed ledger off the loop (a large
    /// document would stall every terminal), then stores it. The ledger is
    /// a value: later commits do not change the copy being encoded, which
    /// holds only what a snapshot needs (`forSnapshot`: sharing the rest
    /// with the live ledger made its next commit copy it).
    func saveSnapshot() {
        let ledger = committed.forSnapshot
        snapshotVersion = ledger.version
        compactLedgers()
        let (doc, store, cipher) = (id, store, committed.cipher)
        BackgroundWork.run(on: loop, {
            let plain = JSONWriter.string(ledger.snapshotJSON)
            var text = cipher.map { $0.sealSnapshot(plain) } ?? plain
            return (text, text.withUTF8 { SHA256.hash(UnsafeRawBufferPointer($0)) })
        }) { [weak self] snapshot in
            self?.lastSnapshotBytes = snapshot.0.utf8.count
            store.saveSnapshot(doc: doc, version: ledger.version, seq: ledger.seq, hash: ledger.headHash,
                               text: snapshot.0, digest: snapshot.1)
        }
    }

    /// Whether a snapshot asked for at `version` is stored: not before the
    /// events since the last one stored have paid for its size at
    /// `snapshotBytesPerEvent` (see `ServerConfig`).
    func snapshotIsDue(at version: Int64) -> Bool {
        let perEvent = config.snapshotBytesPerEvent
        guard perEvent > 0, lastSnapshotBytes > 0 else { return true }
        return version - snapshotVersion >= Int64(lastSnapshotBytes / perEvent)
    }

    /// What a snapshot's turn also bounds, done even when the snapshot is skipped.
    func compactLedgers() {
        committed.compactHistory()
        // The speculative history too: nothing else compacts it, and it
        // is replaced by the committed one only after a clash (without
        // this a document held every event's ops since it was loaded).
        speculative.compactHistory()
        // Bounded memory for a document served for ever: old transaction ids are the log's to answer.
        committed.forgetOldTransactions()
        speculative.forgetOldTransactions()
    }

    /// A user erased: the ledgers name them by their pseudonym, and the
    /// encoded events (which carry the old name) are read again from the log when asked for.
    func userRenamed(_ user: Int64, to name: String) {
        committed.rename(user: user, to: name)
        speculative.rename(user: user, to: name)
        recent.removeAll()
    }

    /// Committed events after `since` held in memory, or nil if some are older than that.
    func recentEvents(after since: Int64) -> [[UInt8]]? {
        if since >= committed.version { return [] }
        guard let oldest = recent.first?.version, oldest <= since + 1 else { return nil }
        return recent.drop(while: { $0.version <= since }).map(\.bytes)
    }
}
