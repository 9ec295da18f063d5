import RewindCore
import RewindLoop

/// Undo requests of PROTOCOL.md: groups, action names, undo/redo, history;
/// and undo or redo for whatever else asks (`perform`, a gesture, a shake's prompt).
final class UndoRequests {
    private let config: ServerConfig
    private let documents: Documents
    private let documentRequests: DocumentRequests
    private let access: AccessControl
    private let presence: PresenceRelay
    private let prompts: PromptCenter
    private let metrics: ServerMetrics?
    /// The group each terminal holds open per document.
    private let groups: OpenGroups

    init(config: ServerConfig, documents: Documents, documentRequests: DocumentRequests, access: AccessControl,
         presence: PresenceRelay, prompts: PromptCenter, metrics: ServerMetrics?, groups: OpenGroups)
    {
        self.groups = groups
        self.config = config
        self.documents = documents
        self.documentRequests = documentRequests
        self.access = access
        self.presence = presence
        self.prompts = prompts
        self.metrics = metrics
    }

    /// The history a request works on (handlers run once the requests before
    /// them have, so a `focus` sent just before counts): `scope` null is the document's, a node
    /// id that node's; without `scope`, the terminal's focus decides.
    private func scope(_ r: Request, _ d: DocumentRuntime, _ c: Session) throws(RewindError) -> Key? {
        guard r.body["scope"] != nil else { return d.undoScope(of: c) }
        guard let s = try r.optionalString("scope", maxBytes: config.limits.maxNameBytes) else { return nil }
        let key = Key(s)
        guard let node = d.current.document[key] else { throw .notFound("scope: no node \"\(s)\"") }
        guard node.undoScope else { throw .badRequest("scope: node \"\(s)\" is not an undo scope (undoScope is false)") }
        return key
    }

    func beginGroup(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let action = try r.optionalString("action", maxBytes: config.limits.maxNameBytes)
        let selection = try Selection.parse(r.body["selection"])
        carryOut(try TerminalGroup.begin(&groups[d.id, c.id], id: UUID.random, action: action, selection: selection), r, c, d)
    }

    func endGroup(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let selection = try Selection.parse(r.body["selection"])
        carryOut(try TerminalGroup.end(&groups[d.id, c.id], selection: selection), r, c, d)
    }

    func setAction(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let action = try r.string("action", maxBytes: config.limits.maxNameBytes)
        carryOut(TerminalGroup.setAction(&groups[d.id, c.id], action), r, c, d)
    }

    /// What `TerminalGroup` decided, done: an answer, a close mark, or a rename of the newest group.
    private func carryOut(_ effect: TerminalGroup.Effect, _ r: Request, _ c: Session, _ d: DocumentRuntime) {
        switch effect {
        case let .level(level):
            c.reply(Message.reply(r.id, [("level", .int(Int64(level)))]))
        case let .close(g, selectionAfter):
            let mark = DocumentRuntime.MarkRequest(kind: .close, userID: c.user.id, client: c.client, group: g.id,
                                                   action: g.action, selection: selectionAfter)
            d.run(.init(command: .mark(mark), replies: [{ result in
                switch result {
                case .success: c.reply(Message.reply(r.id, [("level", 0)]))
                case let .failure(e): c.fail(r, e)
                }
            }]))
        case let .renameNewest(action):
            do throws(RewindError) { try renameNewestGroup(r, c, d, action: action) } catch { c.fail(r, error) }
        }
    }

    private func renameNewestGroup(_ r: Request, _ c: Session, _ d: DocumentRuntime, action: String) throws(RewindError) {
        let user = c.user
        let scope = try scope(r, d, c)
        guard let top = d.history.topUndo(user: user.id, scope: scope) else { throw .notFound("set_action: no group to name") }
        let mark = DocumentRuntime.MarkRequest(kind: .rename, userID: user.id, client: c.client, group: top.key.id,
                                               scope: scope, action: action)
        d.run(.init(command: .mark(mark), replies: [{ result in
            switch result {
            case .success: c.reply(Message.reply(r.id, [("level", 0), ("group", .string(top.key.id))]))
            case let .failure(e): c.fail(r, e)
            }
        }]))
    }

    func revert(_ r: Request, _ c: Session, _ d: DocumentRuntime, kind: EventKind) throws(RewindError) {
        let tx = try r.optionalString("tx", maxBytes: config.limits.maxNameBytes)
        let policy = try conflictPolicy(r)
        // The scope (focus decides without one) as it is once the requests before this one ran.
        runRevert(r, c, d, RevertOptions(kind: kind, scope: try scope(r, d, c), policy: policy, tx: tx))
    }

    func conflictPolicy(_ r: Request, in body: JSONObject? = nil) throws(RewindError) -> ConflictPolicy {
        let v = (body ?? r.body)["on_conflict"]
        guard let v, !v.isNull else { return .prompt }
        guard let name = v.stringValue, let policy = ConflictPolicy(rawValue: name) else {
            throw .badRequest("\(r.type): `on_conflict` must be \"prompt\", \"skip\" or \"force\"")
        }
        return policy
    }

    struct RevertOptions {
        var kind: EventKind
        var scope: Key?
        var policy: ConflictPolicy
        var tx: String?
        /// Set when answering a prompt: the group it offered, which must still be on top.
        var expectedGroup: String?
    }

    /// Undo or redo for `c` — from `undo`/`redo`, `perform`, a gesture, or an
    /// answered prompt — answering `r` with `extra` fields added. A conflict
    /// under `prompt` presents "Undo X changes what NAME did since" to `c`
    /// and answers `{prompt: id}`.
    func runRevert(_ r: Request, _ c: Session, _ d: DocumentRuntime, _ o: RevertOptions, extra: [(String, JSON?)] = []) {
        let user = c.user
        // Reached from requests checked on arrival, and from prompts answered later: the role may have changed since.
        guard access.mayEdit(d, c) else {
            return c.fail(r, RewindError(.forbidden, "\(o.kind.rawValue): a viewer of \"\(d.id)\" cannot undo or redo",
                                         details: ["doc": .string(d.id), "role": "viewer", "needs": "edit"]))
        }
        // Undo with a group open on this terminal closes it first (NSUndoManager).
        var closing: [DocumentRuntime.GroupClose] = []
        if let g = groups.remove(doc: d.id, terminal: c.id) {
            closing.append(.init(group: g.id, userID: user.id, client: c.client, action: g.action, selection: nil))
        }
        var request = DocumentLedger.RevertRequest(kind: o.kind, userID: user.id, userName: user.name, client: c.client,
                                                   scope: o.scope, policy: o.policy, tx: o.tx, eventID: UUID.random(),
                                                   time: wallClockMillis())
        request.expectedGroup = o.expectedGroup
        let started = metrics == nil ? 0 : monotonicNanos()
        // An undo of a group older than the ledger holds runs once its events are read back
        // (`processWithOlderLog`): this terminal reads nothing more until it has run, so what
        // it sends next is not overtaken. Held only if it did not run at once.
        var ran = false
        var holding: Processing?
        let onProcessed = {
            guard !ran else { return }
            ran = true
            holding?.end()
        }
        defer { if !ran { holding = c.processingGoesOn() } }
        d.run(.init(command: .revert(request, closing: closing), replies: [c.committing { [self] result in
            self.metrics?.undoAnswered(redo: o.kind == .redo, nanoseconds: monotonicNanos() - started)
            switch result {
            case let .success(.revert(res)):
                // The terminal that undid gets the selection back (and the others see it there).
                if let s = res.selection, d.current.document[s.node]?.focusable == true {
                    self.presence.set(d, c, Presence(node: s.node, selection: s).after([], byThisTerminal: true, in: d.current.document))
                }
                c.reply(Message.reply(r.id, extra + [
                    ("version", .int(res.version)), ("action", res.action.map { .string($0) } ?? .null),
                    ("selection", res.selection?.json ?? .null),
                    ("skipped", res.skipped.isEmpty ? nil : .array(res.skipped.map { $0.json(userName: { d.committed.userNames[$0] }) })),
                ]))
            case let .success(.needsAnswer(q)):
                let conflicts = JSON.array(q.conflicts.map { $0.json(userName: { d.current.userNames[$0] }) })
                self.presentConflict(r, c, d, o, q, conflicts: conflicts, extra: extra)
            case .success: c.reply(Message.reply(r.id, extra))
            case let .failure(e): c.fail(r, e)
            }
        }], onProcessed: onProcessed))
    }

    /// "Undo Move changes what alice did since": Undo Anyway runs it with
    /// `force` (if that group is still on top), Cancel drops it.
    private func presentConflict(_ r: Request, _ c: Session, _ d: DocumentRuntime, _ o: RevertOptions, _ q: DocumentLedger.RevertQuestion,
                                 conflicts: JSON, extra: [(String, JSON?)])
    {
        var names: [String] = []
        for conflict in conflicts.arrayValue ?? [] {
            if let n = conflict.objectValue?["user"]?.stringValue, !names.contains(n) { names.append(n) }
        }
        // Stored without the ops and names (the document's content stays sealed); shown now with them.
        let cause = PromptCause.conflict(kind: o.kind, scope: o.scope?.string, group: q.group, action: q.action,
                                         conflicts: q.conflicts.map(PromptCause.Place.init), tx: o.tx)
        let processing = c.processingGoesOn()  // a `close` sent behind the undo finds the prompt there, and cancels it
        prompts.presentStored(cause, in: d, to: c, build: { id in
            UndoPrompts.conflict(id: id, kind: o.kind, action: q.action, names: names, conflicts: conflicts, locale: c.locale)
        }) { result in
            defer { processing.end() }
            switch result {
            case let .success(prompt): c.reply(Message.reply(r.id, extra + [("prompt", .string(prompt.id)), ("conflicts", conflicts)]))
            case let .failure(e): c.fail(r, e)
            }
        }
    }

    /// What answering a conflict's prompt does (here or after a restart, on any
    /// instance): Undo Anyway runs it with `force` if that group is still on
    /// top; Cancel drops it.
    func conflictAnswer(_ cause: PromptCause, _ d: DocumentRuntime) -> PromptAnswer {
        guard case let .conflict(kind, _, group, _, _, tx) = cause else { return { _, c, r in r.map { c.reply(Message.reply($0.id)) } } }
        let forced = RevertOptions(kind: kind, scope: cause.scope, policy: .force, tx: tx, expectedGroup: group)
        return { [unowned self] answer, c, r in
            guard let r else { return }  // cancelled: the undo is dropped
            guard answer != Prompt.ActionID.cancel else { return c.reply(Message.reply(r.id)) }
            guard self.documentRequests.isOpen(d, on: c) else { return c.fail(r, .badRequest("respond: document \"\(d.id)\" is no longer open on this terminal")) }
            self.runRevert(r, c, d, forced)
        }
    }

    func clearHistory(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let tx = try r.optionalString("tx", maxBytes: config.limits.maxNameBytes)
        let mark = DocumentRuntime.MarkRequest(kind: .clear, userID: c.user.id, client: c.client, scope: try scope(r, d, c), tx: tx)
        d.run(.init(command: .mark(mark), replies: [{ result in
            switch result {
            case .success: c.reply(Message.reply(r.id))
            case let .failure(e): c.fail(r, e)
            }
        }]))
    }

    /// `set_undo_levels {doc, levels, document?, tx?}`: how many groups this user's stacks of
    /// `doc` keep (NSUndoManager's levelsOfUndo): 1 to the server's `--undo-levels` (to 10,000
    /// when that is 0, unlimited), or null for the server's default; with `document: true`,
    /// the owner's cap on everyone's (null: no cap). Recorded as a `levels` mark, so replay
    /// applies it where it applied; lowering drops the oldest groups at once.
    func setUndoLevels(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let tx = try r.optionalString("tx", maxBytes: config.limits.maxNameBytes)
        let most = config.undoLevels > 0 ? config.undoLevels : Self.mostLevelsWhenUnlimited
        guard let field = r.body["levels"] else { throw .badRequest("set_undo_levels needs `levels`: 1 to \(most), or null for the server's default") }
        var levels: Int?
        if field != .null {
            guard let n = field.intValue, n >= 1, n <= Int64(most) else {
                throw RewindError(.badRequest, "`levels` is a whole number from 1 to \(most) (the server's --undo-levels), or null for that default",
                                  details: ["most": .int(Int64(most))])
            }
            levels = Int(n)
        }
        let user = c.user.id
        let everyone = try r.optionalBool("document") ?? false
        let mark = DocumentRuntime.MarkRequest(kind: .levels, userID: user, client: c.client, group: everyone ? GroupMark.documentLevels : nil,
                                               action: levels.map { String($0) }, tx: tx)
        let run = {
            d.run(.init(command: .mark(mark), replies: [{ result in
                switch result {
                case .success:
                    c.reply(Message.reply(r.id, [("levels", .int(Int64(d.history.levels(for: user)))),
                                                 ("document_levels", d.history.documentLevels.map { .int(Int64($0)) } ?? .null)]))
                case let .failure(e): c.fail(r, e)
                }
            }]))
        }
        // The document's cap is the owner's to set (everyone's stacks follow it).
        guard everyone else { return run() }
        try access.withRole(on: d.id, .own, for: r, c) { _ in run() }
    }

    /// What `set_undo_levels` allows when `--undo-levels` is 0 (unlimited): a bound all the same.
    static let mostLevelsWhenUnlimited = 10_000

    func history(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let user = c.user.id
        let scope = try scope(r, d, c)
        // As undo sees it: with what this terminal sent before, committed or not (docs/protocol.md, "Ordering").
        let h = d.history
        let s = h.stacks(user: user, scope: scope)
        func list(_ keys: [UndoHistory.GroupKey]) -> JSON {
            .array(keys.reversed().compactMap { h.groups[$0] }.map { g in
                .obj([("group", .string(g.key.id)), ("action", g.action.map { .string($0) } ?? .null),
                      ("version", .int(g.effect.last ?? g.lastEdit))])
            })
        }
        c.reply(Message.reply(r.id, [
            ("doc", .string(d.id)), ("scope", scope.map { .string($0.string) } ?? .null),
            ("undo", list(s.undo)), ("redo", list(s.redo)), ("level", .int(Int64(groups[d.id, c.id]?.level ?? 0))),
            ("levels", .int(Int64(h.levels(for: user)))), ("document_levels", h.documentLevels.map { .int(Int64($0)) } ?? .null),
        ]))
    }

    /// Closes the explicit group `c` holds open on `doc`, if it has one (close, disconnect).
    func closeTerminalGroup(_ c: Session, doc: String) {
        guard let g = groups.remove(doc: doc, terminal: c.id), let d = documents[doc] else { return }
        let mark = DocumentRuntime.MarkRequest(kind: .close, userID: c.user.id, client: c.client, group: g.id, action: g.action)
        d.run(.init(command: .mark(mark), replies: []))
    }
}
