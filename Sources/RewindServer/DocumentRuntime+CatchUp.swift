import RewindCore
import RewindStore

/// How a `DocumentRuntime` comes to know its document and keeps up with the
/// log: the first load (from the newest snapshot and the log's tail), the
/// groups left open by instances that are gone, and what other writers
/// append (the `rewind_log` notices). Commands wait here (`whenReady`) until
/// the runtime has read the log up to its head.
extension DocumentRuntime {
    // MARK: Readiness and catch-up

    /// Runs `body` once the runtime has read the log up to its head (at once
    /// if it has), after those that asked before it.
    func whenReady(_ body: @escaping (RewindError?) -> Void) {
        if runsAtOnce { body(nil); return }
        whenReadyQueue.append(body)
        if state == .stale { catchUp() }
    }

    /// Like `whenReady`, but first asks the log for its head, so that entries
    /// another server appended are read before `body` runs (used by `open`).
    /// The connection asking waits for the answer (its mailbox), so nothing
    /// of its own can run before it here.
    func whenCurrent(_ body: @escaping (RewindError?) -> Void) {
        guard state == .ready && whenReadyQueue.isEmpty else { return whenReady(body) }
        store.head(doc: id) { [self] result in
            switch result {
            case let .failure(e): body(e)
            case .success(nil): body(.notFound("no document \"\(self.id)\""))
            case let .success(head?):
                if self.isBehind(head) && self.state == .ready && self.pending.isEmpty { self.state = .stale }
                self.whenReady(body)
            }
        }
    }

    private func isBehind(_ head: EventStore.Head) -> Bool { head.seq > committed.seq }

    func catchUp() {
        state = .catchingUp
        if committed.cipher == nil && config.sealsContent { return loadKey() }
        if !loadedOnce && committed.seq == 0 && config.snapshotEvery > 0 {
            return loadSnapshot()
        }
        readHead()
    }

    /// The document's data key, before anything of its log is read: the
    /// ledger seals what it appends with it, and reads open what the log holds.
    private func loadKey() {
        store.documentKey(doc: id) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case .success(.noDocument), .success(.purged): self.catchUpFailed(.notFound("no document \"\(self.id)\""))
            case let .success(.key(cipher)):
                self.committed.cipher = cipher
                self.speculative.cipher = cipher
                self.catchUp()
            }
        }
    }

    /// First load: start from the newest snapshot, reading only the tail of
    /// the log it needs; on any trouble, replay the whole log instead.
    private func loadSnapshot() {
        store.latestSnapshot(doc: id) { [self] result in
            guard case let .success(snapshot?) = result else {
                if case let .failure(e) = result { self.logger.warning("snapshot unreadable; replaying the log", metadata: ["doc": "\(self.id)", "error": "\(e)"]) }
                return self.readHead()
            }
            let start: Int64
            do { start = try DocumentLedger.tailStart(snapshot: snapshot.state, limits: self.config.limits) } catch {
                self.logger.warning("snapshot unusable; replaying the log", metadata: ["doc": "\(self.id)", "error": "\(error)"])
                return self.readHead()
            }
            self.store.tail(doc: self.id, fromVersion: start, toSeq: snapshot.seq) { result in
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
            var ledger = try DocumentLedger(doc: id, snapshot: snapshot.state, tail: tail, limits: config.limits)
            guard ledger.seq == snapshot.seq else { throw RewindError(.internal, "snapshot header and body disagree") }
            ledger.cipher = committed.cipher
            committed = ledger
            // Trusted from the tail's first entry up (its hashes link to the snapshot's, and on to the head as read next).
            if let first = tail.first {
                anchors = ChainAnchors(first: first.seq, hash: first.hash)
                for e in tail.dropFirst() { anchors.note(seq: e.seq, hash: e.hash) }
            }
            snapshotVersion = ledger.version
            let events = tail.compactMap { if case let .event(e) = $0 { return e }; return nil }
            recent = events.suffix(config.recentEvents).map { (version: $0.version, bytes: $0.wireBytes) }
            logger.debug("loaded from snapshot", metadata: ["doc": "\(id)", "seq": "\(snapshot.seq)", "tail": "\(tail.count)"])
        } catch {
            logger.warning("snapshot does not restore; replaying the log", metadata: ["doc": "\(id)", "error": "\(error)"])
        }
        readHead()
    }

    private func readHead() {
        store.head(doc: id) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case .success(nil): self.catchUpFailed(.notFound("no document \"\(id)\""))
            case let .success(head?):
                if let why = self.diverged(from: head) { return self.stop(diverged: why) }
                self.readLog(upTo: head)
            }
        }
    }

    /// Why the log no longer holds what this server saw committed, or nil.
    /// It can only be shorter, or different at the same position, if
    /// PostgreSQL lost committed transactions: a failover to a standby that
    /// had not received them (asynchronous replication), or a restore from a
    /// backup. Serving on from memory would hand out versions the log no
    /// longer has, and every append would clash with a head it can never
    /// reach.
    private func diverged(from head: EventStore.Head) -> String? {
        if head.seq < committed.seq {
            return "the log ends at entry \(head.seq) (version \(head.version)), before entry \(committed.seq) (version \(committed.version)) that this server saw committed"
        }
        if head.seq == committed.seq, committed.seq > 0, let h = head.hash, h != committed.headHash {
            return "the log's entry \(head.seq) is not the one this server saw committed"
        }
        return nil
    }

    private func readLog(upTo head: EventStore.Head) {
        guard isBehind(head) else { return caughtUp() }
        store.entries(doc: id, afterSeq: committed.seq, toSeq: head.seq, limit: 5_000) { [self] result in
            switch result {
            case let .failure(e): self.catchUpFailed(e)
            case let .success(entries):
                do throws(RewindError) {
                    for e in entries { try self.commit(e, trusted: false) }
                } catch {
                    self.logger.critical("log does not replay", metadata: ["doc": "\(self.id)", "error": "\(error)"])
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
            // Read far past its newest snapshot (imported, written by an
            // instance with snapshots off, an older release): take one now,
            // so the next first open reads only the tail.
            let every = Int64(config.snapshotEvery)
            if every > 0 && committed.version - snapshotVersion >= every { saveSnapshot() }
            // Waiters run once the groups left open are closed (SPEC section 4).
            onEffect(.firstLoaded)
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
        let heldHere = firstLoad ? [] : groupsHeldHere()
        let candidates = committed.history.open.keys.filter { !heldHere.contains($0) }.sorted()
        guard !candidates.isEmpty else {
            if firstLoad { state = .ready }
            return then()
        }
        store.orphanedGroups(doc: id, groups: candidates) { [self] result in
            if firstLoad { self.state = .ready } else if self.state != .ready || self.halted { return then() }
            guard case let .success(orphans) = result else {
                if case let .failure(e) = result {
                    self.logger.warning("could not tell which open groups are orphaned; leaving them open",
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
            self.logger.info("closing groups left open by instances that are gone", metadata: ["doc": "\(self.id)", "groups": "\(closes.count)"])
            var left = closes.count
            for m in closes {
                // Straight to `process`: `run` would queue behind the waiters.
                self.process(Job(command: .mark(m), replies: [{ _ in
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
        let heldHere = groupsHeldHere()
        return open.keys.contains { !heldHere.contains($0) }
    }

    // MARK: Other instances' commits


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
    func followLog() {
        guard !halted, pending.isEmpty, whenReadyQueue.isEmpty else { return }
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
        onEffect(.mayBeIdle)
    }
}
