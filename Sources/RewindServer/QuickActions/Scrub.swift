import RewindCore
import RewindStore

/// A terminal scrubbing through a document's history (SPEC section 8,
/// PROTOCOL.md "Quick actions and previews"): a private state at a version,
/// moved event by event — forward through events' ops, backward through their
/// exact inverses — from wherever is cheapest: where the last step left it,
/// the empty document at version 0, the head the scrub began on, or the
/// newest snapshot at or below the target. A step costs the events between
/// two positions of the finger (at most a snapshot interval), not a replay.
final class ScrubSession {
    let doc: String
    /// The head when the scrub began: progress 1 is this version, and a commit
    /// is computed against this state (then rebased, as a late submit is).
    let baseVersion: Int64
    let baseDocument: Document
    private(set) var version: Int64
    private(set) var document: Document
    /// Ops and inverses of events read so far, by version.
    private var changes: [Int64: (ops: [Op], inverse: [Op])] = [:]
    /// Versions with a snapshot (read once, at the first step).
    var snapshots: [Int64]?

    /// What reading and parsing a snapshot costs, counted in events read from the log.
    static let snapshotCost: Int64 = 200
    /// Events held at most; past it they are let go and read again when needed.
    static let maxHeld = 20_000

    enum Start: Equatable {
        case here, empty, base
        case snapshot(Int64)
    }

    init(doc: String, head: DocumentLedger) {
        self.doc = doc
        baseVersion = head.version
        baseDocument = head.document
        version = head.version
        document = head.document
    }

    /// Where to move to `target` from, cheapest first by events to read.
    func cheapestStart(to target: Int64) -> Start {
        var best = (Start.here, cost(from: version, to: target))
        func consider(_ s: Start, _ c: Int64) { if c < best.1 { best = (s, c) } }
        consider(.empty, cost(from: 0, to: target))
        consider(.base, cost(from: baseVersion, to: target))
        if let s = snapshots?.last(where: { $0 <= target }) { consider(.snapshot(s), Self.snapshotCost + cost(from: s, to: target)) }
        return best.0
    }

    /// Events between two versions, those not held counting fully (they are read from the log).
    private func cost(from a: Int64, to b: Int64) -> Int64 {
        let lo = min(a, b) + 1, hi = max(a, b)
        guard lo <= hi else { return 0 }
        guard hi - lo < 5_000 else { return hi - lo + 1 }
        var c: Int64 = 0
        for v in lo...hi where changes[v] == nil { c += 1 }
        return c + (hi - lo + 1) / 50
    }

    /// Starts again from a known state.
    func restart(at v: Int64, _ d: Document) {
        version = v
        document = d
    }

    /// Versions between here and `target` whose changes are not held yet.
    func missing(to target: Int64) -> ClosedRange<Int64>? {
        if changes.count > Self.maxHeld { changes = [:] }
        let lo = min(version, target) + 1, hi = max(version, target)
        guard lo <= hi else { return nil }
        guard let first = (lo...hi).first(where: { changes[$0] == nil }),
              let last = (lo...hi).reversed().first(where: { changes[$0] == nil })
        else { return nil }
        return first...last
    }

    func hold(_ v: Int64, ops: [Op], inverse: [Op]) { changes[v] = (ops, inverse) }

    /// Moves the private state to `target`; every change it crosses must be held.
    func move(to target: Int64) throws(RewindError) {
        while version > target {
            guard let c = changes[version] else { throw RewindError(.internal, "scrub: event \(version) not read") }
            _ = try document.apply(c.inverse, limits: .unbounded)
            version -= 1
        }
        while version < target {
            guard let c = changes[version + 1] else { throw RewindError(.internal, "scrub: event \(version + 1) not read") }
            _ = try document.apply(c.ops, limits: .unbounded)
            version += 1
        }
    }
}

extension PastStates {
    func scrub(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        guard let progress = r.body["progress"]?.doubleValue, progress.isFinite, (0...1).contains(progress) else {
            throw .badRequest("scrub: `progress` must be a number from 0 to 1")
        }
        inOrder(c) { [self] done in
            self.documentRequests.whenOpen(c, d) { error in
                if let error { c.fail(r, error); return done() }
                if c.scrub?.doc != d.id { c.scrub = ScrubSession(doc: d.id, head: d.committed) }  // one document at a time
                let session = c.scrub!
                let target = Int64((progress * Double(session.baseVersion)).rounded())
                self.start(session, d, to: target, c) { error in
                    if let error { c.fail(r, error); return done() }
                    self.readChanges(session, d, to: target, c) { error in
                        defer { done() }
                        if let error { return c.fail(r, error) }  // before the session: an error (tampering found) may have cancelled it
                        guard !c.isClosed, c.scrub === session else { return c.fail(r, .badRequest("scrub: the scrub was cancelled")) }
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
    private func start(_ session: ScrubSession, _ d: DocumentRuntime, to target: Int64, _ c: Connection,
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
    private func readChanges(_ session: ScrubSession, _ d: DocumentRuntime, to target: Int64, _ c: Connection,
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
    func scrubCommit(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let tx = try r.optionalString("tx", maxBytes: config.limits.maxNameBytes) ?? UUID.random()
        inOrder(c) { [self] done in
            self.documentRequests.whenOpen(c, d) { error in
                defer { done() }  // the restore is queued on the document: later requests come after it
                if let error { return c.fail(r, error) }
                guard let session = c.scrub, session.doc == d.id else {
                    return c.fail(r, .badRequest("scrub_commit: no scrub of \"\(d.id)\" under way (send scrub first)"))
                }
                c.scrub = nil
                self.commitRestore(of: d, base: session.baseVersion, from: session.baseDocument, to: session.document,
                                   restoring: session.version, tx: tx, answering: r, c)
            }
        }
    }

    func scrubCancel(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        inOrder(c) { [self] done in
            self.documentRequests.whenOpen(c, d) { error in
                defer { done() }
                if let error { return c.fail(r, error) }
                if c.scrub?.doc == d.id { c.scrub = nil }
                c.reply(Message.reply(r.id, [("doc", .string(d.id))]))
            }
        }
    }

    /// Runs `body` once the connection's earlier edits are answered (a scrub
    /// or a peek pasted behind submits sees them); the connection's later
    /// frames wait until `body` calls `done` — a scrub's steps, its commit
    /// and its cancel each see the one before finished.
    func inOrder(_ c: Connection, _ body: @escaping (_ done: @escaping () -> Void) -> Void) {
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
                       answering r: Request, _ c: Connection)
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
