import RewindCore
import RewindStore

/// `scrub`, `scrub_commit`, `scrub_cancel` (`PastStates`, the session: `ScrubSession`).
extension PastStates {
    func scrub(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        guard let progress = r.body["progress"]?.doubleValue, progress.isFinite, (0...1).contains(progress) else {
            throw .badRequest("scrub: `progress` must be a number from 0 to 1")
        }
        inOrder(c) { [self] done in
            self.documentRequests.whenOpen(c, d) { error in
                if let error { c.fail(r, error); return done() }
                guard !c.isClosed else { return done() }
                if self.scrubs[c.id]?.doc != d.id { self.scrubs[c.id] = ScrubSession(doc: d.id, head: d.committed) }  // one document at a time
                let session = self.scrubs[c.id]!
                let target = Int64((progress * Double(session.baseVersion)).rounded())
                self.start(session, d, to: target, c) { error in
                    if let error { c.fail(r, error); return done() }
                    self.readChanges(session, d, to: target, c) { error in
                        defer { done() }
                        if let error { return c.fail(r, error) }  // before the session: an error (tampering found) may have cancelled it
                        guard !c.isClosed, self.scrubs[c.id] === session else { return c.fail(r, .badRequest("scrub: the scrub was cancelled")) }
                        do throws(RewindError) {
                            if let error { throw error }
                            try session.move(to: target)
                            self.documentRequests.reply(r, c, [("doc", .string(d.id)), ("version", .int(target))], state: session.document)
                        } catch { c.fail(r, error) }
                    }
                }
            }
        }
    }

    /// Puts `session` where moving to `target` costs least (`ScrubSession.cheapestStart`):
    /// reads the document's snapshot versions at the first step, and a snapshot when one is nearest.
    private func start(_ session: ScrubSession, _ d: DocumentRuntime, to target: Int64, _ c: Session,
                       _ done: @escaping (RewindError?) -> Void)
    {
        // (Inside `inOrder`: the connection's next frame waits for the whole step.)
        guard session.snapshots != nil else {
            return store.snapshotVersions(doc: d.id) { [self] result in
                session.snapshots = (try? result.get()) ?? []  // without: the log alone
                self.start(session, d, to: target, c, done)
            }
        }
        switch session.cheapestStart(to: target) {
        case .here: done(nil)
        case .empty: session.restart(at: 0, Document()); done(nil)
        case .base: session.restart(at: session.baseVersion, session.baseDocument); done(nil)
        case .snapshot:
            store.snapshotDocument(doc: d.id, atOrBelow: target) { result in
                switch result {
                case let .success(s?): session.restart(at: s.version, s.document)
                case .success(nil), .failure: session.snapshots = []  // unusable: walk instead
                }
                done(nil)
            }
        }
    }

    /// Makes sure `session` holds every event between its position and `target`:
    /// from the ledger's memory where it has them, else from the log (inside
    /// `inOrder`: the connection's later requests wait meanwhile).
    private func readChanges(_ session: ScrubSession, _ d: DocumentRuntime, to target: Int64, _ c: Session,
                             _ done: @escaping (RewindError?) -> Void)
    {
        guard let range = session.missing(to: target) else { return done(nil) }
        let h = d.committed.history
        var fromLog: ClosedRange<Int64>? = range
        for v in range.reversed() {
            guard let logged = h.logged(v) else { break }
            session.hold(v, ops: logged.ops, inverse: logged.inverse)
            fromLog = range.lowerBound <= v - 1 ? range.lowerBound...(v - 1) : nil
        }
        guard let need = fromLog else { return done(nil) }
        d.checkedEvents(after: need.lowerBound - 1, to: need.upperBound, limit: Int(need.count)) { result in
            switch result {
            case let .failure(e): done(e)
            case let .success(events):
                for e in events { session.hold(e.version, ops: e.ops, inverse: e.inverse) }
                done(events.count == need.count ? nil : RewindError(.internal, "scrub: the log of \(d.id) holds \(events.count) of \(need.count) events asked for"))
            }
        }
    }

    /// Appends one `restore` event whose ops turn the state the scrub began
    /// on into the scrubbed state (rebased through what others did since, as a
    /// late submit is): one undo group, "Restore Version".
    func scrubCommit(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let tx = try r.optionalString("tx", maxBytes: config.limits.maxNameBytes) ?? UUID.random()
        inOrder(c) { [self] done in
            self.documentRequests.whenOpen(c, d) { error in
                defer { done() }  // the restore is queued on the document: later requests come after it
                if let error { return c.fail(r, error) }
                guard let session = self.scrubs[c.id], session.doc == d.id else {
                    return c.fail(r, .badRequest("scrub_commit: no scrub of \"\(d.id)\" under way (send scrub first)"))
                }
                self.scrubs[c.id] = nil
                self.commitRestore(of: d, base: session.baseVersion, from: session.baseDocument, to: session.document,
                                   restoring: session.version, tx: tx, answering: r, c)
            }
        }
    }

    func scrubCancel(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        inOrder(c) { [self] done in
            self.documentRequests.whenOpen(c, d) { error in
                defer { done() }
                if let error { return c.fail(r, error) }
                if self.scrubs[c.id]?.doc == d.id { self.scrubs[c.id] = nil }
                c.reply(Message.reply(r.id, [("doc", .string(d.id))]))
            }
        }
    }

    /// Runs `body` once the connection's earlier edits are answered (a scrub
    /// or a peek pasted behind submits sees them); the connection's later
    /// frames wait until `body` calls `done` — a scrub's steps, its commit
    /// and its cancel each see the one before finished.
    func inOrder(_ c: Session, _ body: @escaping (_ done: @escaping () -> Void) -> Void) {
        let processing = c.processingGoesOn()
        c.afterOwnCommits { body { processing.end() } }
    }
}

extension PastStates {
    /// Appends one `restore` event whose ops turn `from` (the state at `base`)
    /// into `to` (the state at version `restoring`), rebased through what
    /// others did since `base` as a late submit is: one undo group, "Restore
    /// Version". Answers `r` with `{doc, version, restored, from}`.
    func commitRestore(of d: DocumentRuntime, base: Int64, from: Document, to: Document, restoring: Int64, tx: String,
                       answering r: Request, _ c: Session)
    {
        let ops = DocumentDiff.ops(from: from, to: to)
        guard !ops.isEmpty else {
            return c.reply(Message.reply(r.id, [("doc", .string(d.id)), ("version", .int(d.current.version)), ("restored", .bool(false)),
                                                ("from", .int(restoring))]))
        }
        var s = documentRequests.submission(c, doc: d.id, tx: tx, base: base, ops: ops, action: Titles.ServerAction.restore, selection: nil)
        s.kind = .restore
        s.openGroup = nil
        s.groupAction = nil
        s.selection = nil
        d.run(.init(command: .submit(s), replies: [c.committing { result in
            switch result {
            case let .success(.version(v)):
                c.reply(Message.reply(r.id, [("doc", .string(d.id)), ("version", .int(v)), ("restored", .bool(true)), ("from", .int(restoring))]))
            case .success: c.fail(r, RewindError(.internal, "a restore answered with something other than a version"))
            case let .failure(e): c.fail(r, e)
            }
        }]))
    }
}
