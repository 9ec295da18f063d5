/// Undo, redo and group marks on the ledger: the same deterministic path for
/// live serving and replay (a revert becomes an ordinary event; a mark is
/// recorded by `UndoHistory.record`).
extension DocumentLedger {
    public struct RevertRequest: Sendable {
        public var kind: EventKind  // .undo or .redo
        public var userID: Int64
        public var userName: String
        public var client: String
        public var scope: Key?
        public var policy: ConflictPolicy
        /// The terminal's retry key; without one the event id stands in.
        public var tx: String?
        public var eventID: String
        public var time: Int64
        /// The group a prompt offered to undo (or redo): if another is on top
        /// now, the answer is `conflict` rather than reverting something else.
        public var expectedGroup: String?

        public init(kind: EventKind, userID: Int64, userName: String, client: String, scope: Key?, policy: ConflictPolicy,
                    tx: String?, eventID: String, time: Int64)
        {
            self.kind = kind; self.userID = userID; self.userName = userName; self.client = client; self.scope = scope
            self.policy = policy; self.tx = tx; self.eventID = eventID; self.time = time
        }

        var digest: String {
            Fingerprint.hex(JSONWriter.encode(.obj([("revert", .string(kind.rawValue)), ("scope", scope.map { .string($0.string) })])))
        }
    }

    public struct RevertResult: Sendable {
        /// The new event, already applied; nil when the same `tx` was already recorded.
        public var event: Event?
        public var version: Int64
        public var action: String?
        /// The selection to restore (transformed through later text edits).
        public var selection: Selection?
        public var skipped: [Conflict]
        public var conflicts: [Conflict]
    }

    /// An undo or redo under `prompt` that would change what others did
    /// since: nothing was applied; the user is asked (Undo Anyway / Cancel).
    public struct RevertQuestion: Sendable {
        public var group: String
        public var action: String?
        public var conflicts: [Conflict]
    }

    /// What an undo or redo came to: done, or a question for the user.
    public enum RevertOutcome: Sendable {
        case reverted(RevertResult)
        case needsAnswer(RevertQuestion)
    }

    /// Undoes the user's newest group in the scope (or redoes the newest
    /// undone one); under `prompt`, conflicts are `conflict` errors (an API
    /// caller's answer; the server asks with `revertOrAsk`).
    public mutating func revert(_ r: RevertRequest) throws(RewindError) -> RevertResult {
        switch try revertOrAsk(r) {
        case let .reverted(result): return result
        case let .needsAnswer(q):
            throw RewindError(.conflict, "this changes what others did since; answer with on_conflict \"skip\" or \"force\"",
                              details: ["conflicts": .array(q.conflicts.map { $0.json(userName: { self.userNames[$0] }) }),
                                        "group": .string(q.group), "action": q.action.map { .string($0) } ?? .null])
        }
    }

    /// `revert`, with a conflict under `prompt` as an answer, not an error: nothing is applied then.
    public mutating func revertOrAsk(_ r: RevertRequest) throws(RewindError) -> RevertOutcome {
        precondition(r.kind == .undo || r.kind == .redo)
        let digest = r.digest
        if let tx = r.tx, let seen = transaction(user: r.userID, tx: tx) {
            guard seen.digest == digest else {
                throw .conflict("transaction \"\(tx)\" was already used with different content", details: ["version": .int(seen.version)])
            }
            return .reverted(RevertResult(event: nil, version: seen.version, action: nil, selection: nil, skipped: [], conflicts: []))
        }
        let verb = r.kind == .undo ? "undo" : "redo"
        guard let group = r.kind == .undo ? history.topUndo(user: r.userID, scope: r.scope) : history.topRedo(user: r.userID, scope: r.scope) else {
            throw .notFound("nothing to \(verb)" + (r.scope.map { " in scope \"\($0)\"" } ?? ""))
        }
        if let expected = r.expectedGroup, expected != group.key.id {
            throw .conflict("the group this prompt offered to \(verb) is no longer on top of the stack",
                            details: ["group": .string(expected), "top": .string(group.key.id)])
        }
        if let from = history.olderLogNeeded(for: group) {
            // Reverting without the group's events would log an undo that changes nothing.
            throw RewindError(.internal, "the log from version \(from) is not loaded (olderLogNeeded, restoreOlderLog)")
        }
        let revert = try history.revert(group, on: document, user: r.userID, policy: r.policy, limits: limits)
        if r.policy == .prompt && !revert.conflicts.isEmpty {
            return .needsAnswer(RevertQuestion(group: group.key.id, action: group.action, conflicts: revert.conflicts))
        }
        let event = Event(doc: doc, version: version + 1, id: r.eventID, tx: r.tx ?? r.eventID, txDigest: digest, userID: r.userID,
                          userName: r.userName, client: r.client, group: group.key.id, kind: r.kind, action: group.action,
                          base: version, ops: revert.applied.ops, inverse: revert.applied.inverse, refers: group.key.id,
                          time: r.time, meta: EventMeta(scope: r.scope, reverted: group.effect))
        document = revert.document
        var e = event
        record(e)
        let selection = restoredSelection(group, kind: r.kind)
        if selection != nil {
            // Recorded with the event so that the log says what was handed back.
            e.meta.selection = selection
        }
        seal(&e)
        return .reverted(RevertResult(event: e, version: e.version, action: group.action, selection: selection,
                                      skipped: revert.skipped, conflicts: revert.conflicts))
    }

    /// The first version of the log that `r` (an undo or redo) would read and
    /// this ledger does not hold — a group older than the tail it was
    /// restored with — or nil. The shell reads those events and hands them
    /// to `restoreOlderLog` before the revert runs.
    public func olderLogNeeded(for r: RevertRequest) -> Int64? {
        let group = r.kind == .undo ? history.topUndo(user: r.userID, scope: r.scope) : history.topRedo(user: r.userID, scope: r.scope)
        return group.flatMap(history.olderLogNeeded(for:))
    }

    /// The events from the version `olderLogNeeded` named up to the first
    /// one this ledger holds, oldest first (see `UndoHistory.restoreOlderLog`).
    public mutating func restoreOlderLog(_ events: [Event]) throws(RewindError) {
        try history.restoreOlderLog(events)
    }

    /// The same, made ready once for both of a document's ledgers (`UndoHistory.OlderLog`).
    public mutating func restoreOlderLog(_ older: UndoHistory.OlderLog) throws(RewindError) {
        try history.restoreOlderLog(older)
    }

    /// The selection before the group (for undo) or after it (for redo), as
    /// the terminal had it — moved only through the text edits *others* made
    /// in its node since, never through the group's own edits or its earlier
    /// undos and redos (a range the group deleted would collapse to a caret).
    ///
    /// The selection is in the coordinates of the text before the group (undo)
    /// or after it (redo); a later edit is in those of the text it was made
    /// on. `back` holds the text ops that take the text at each step back to
    /// the selection's coordinates (the group's own changes, reverted); each
    /// later edit by others is transformed through them before it moves the
    /// selection, and they through it.
    func restoredSelection(_ g: UndoHistory.Group, kind: EventKind) -> Selection? {
        let undo = kind == .undo
        guard var s = undo ? g.selectionBefore : g.selectionAfter else { return nil }
        let from = undo ? (g.edits.first ?? 1) - 1 : g.lastEdit
        var ours = Set(g.edits)
        var back: [Op] = []
        for v in history.touches(of: s.node, after: from) {
            guard let e = history.logged(v) else { continue }
            let inNode = { (ops: [Op]) in ops.filter { $0.node == s.node && $0.isText } }
            if ours.contains(v) || (!e.reverted.isEmpty && e.reverted.allSatisfy(ours.contains)) {
                ours.insert(v)  // the group's edit, or its undo or redo (this one included)
                back = inNode(e.inverse) + back
                continue
            }
            let others = inNode(e.ops)
            guard !others.isEmpty else { continue }
            let (backAfter, othersHere) = back.isEmpty ? ([], others) : TextTransform.transform(back, others)
            back = backAfter
            for op in othersHere { s = s.mapped(through: op, gravity: undo ? .left : .right) }
        }
        return s
    }

    public mutating func mark(_ kind: GroupMark.Kind, userID: Int64, client: String, group: String? = nil, scope: Key? = nil,
                              action: String? = nil, selection: Selection? = nil, tx: String? = nil, id: String,
                              time: Int64) -> GroupMark
    {
        let m = GroupMark(n: history.markCount + 1, afterVersion: version, id: id, userID: userID, client: client, kind: kind,
                          group: group, scope: scope, action: action, selection: selection, tx: tx, time: time)
        history.record(m)
        var sealed = m
        seal(&sealed)
        return sealed
    }

    /// The mark already recorded for this `tx` of this user, if any.
    public func markTransaction(user: Int64, tx: String) -> Int64? {
        history.markTransactions[TxKey(user: user, tx: Key(tx))]
    }
}
