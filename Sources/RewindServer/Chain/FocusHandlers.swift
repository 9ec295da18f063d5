import RewindCore
import RewindLoop

/// Focus, selection and presence (SPEC section 5): each terminal's first
/// responder and text selection per open document, seen by the others as
/// `presence` pushes; and hit-testing.
extension Server {
    /// A node of the current state that can be a first responder.
    private func focusableNode(_ r: Request, _ d: DocumentRuntime) throws(RewindError) -> Node {
        let id = try r.string("node", maxBytes: config.limits.maxNameBytes)
        guard let n = d.current.document[Key(id)] else { throw .notFound("\(r.type): no node \"\(id)\"", details: ["node": .string(id)]) }
        guard n.focusable else { throw .badRequest("\(r.type): node \"\(id)\" is not focusable", details: ["node": .string(id)]) }
        return n
    }

    func focus(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let n = try focusableNode(r, d)
        var p = d.presence[c.id]
        if p.node != n.id { p.selection = nil }
        p.node = n.id
        setPresence(d, c, p)
        c.reply(Message.reply(r.id, [("node", .string(n.id.string)), ("scope", terminalScope(d, c).map { .string($0.string) } ?? .null)]))
    }

    func blur(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        setPresence(d, c, Presence())
        c.reply(Message.reply(r.id))
    }

    /// `select` moves the selection and makes its node the first responder.
    func select(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let start = try r.int("start")
        let end = try r.optionalInt("end") ?? start
        let n = try focusableNode(r, d)
        guard start >= 0, start <= end, end <= Int64(n.text.count) else {
            throw .badRequest("select: need 0 <= start <= end <= \(n.text.count) (the text length of \"\(n.id)\")")
        }
        let s = Selection(node: n.id, start: Int(start), end: Int(end))
        setPresence(d, c, Presence(node: n.id, selection: s))
        c.reply(Message.reply(r.id, [("selection", s.json)]))
    }

    func hitTest(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        guard let x = r.body["x"]?.doubleValue, let y = r.body["y"]?.doubleValue, x.isFinite, y.isFinite else {
            throw .badRequest("hit_test: `x` and `y` must be numbers")
        }
        c.reply(Message.reply(r.id, [("node", .string(d.current.document.hitTest(x: x, y: y).string))]))
    }

    // MARK: Presence (the decisions are `PresenceBoard`'s; here they are carried out)

    /// Records `c`'s presence; if it changed, the other terminals are told,
    /// and `c` gets its new `prompt_state` (focus picks the undo scope).
    func setPresence(_ d: DocumentRuntime, _ c: Connection, _ p: Presence) {
        // A request that waited may act after its terminal left: no presence for a terminal not here.
        guard !c.isClosed, d.subscribers[c.id] === c else { return }
        announce(d.presence.set(c.id, p), in: d)
    }

    /// A terminal leaving the document (close, disconnect, idle) leaves no ghost behind.
    func leavePresence(_ d: DocumentRuntime, _ c: Connection) {
        announce(d.presence.leave(c.id), in: d)
    }

    /// After a committed event (`PresenceBoard.after`): moves are announced
    /// once per loop turn, by `flushMovedPresence`.
    func presenceAfter(_ d: DocumentRuntime, _ event: Event) {
        guard !d.presence.positions.isEmpty else { return }
        let hadMoved = !d.presence.moved.isEmpty
        let effects = d.presence.after(event, madeBy: { id in
            guard let c = d.subscribers[id] else { return false }
            return c.user?.id == event.userID && c.clientID == event.client
        }, current: d.current.document, committed: d.committed.document)
        if !hadMoved && !d.presence.moved.isEmpty { presenceMovedDocs.append(d) }
        announce(effects, in: d)
    }

    /// Pushes the presence moves of this loop turn (called just before the loop sleeps).
    func flushMovedPresence() {
        guard !presenceMovedDocs.isEmpty else { return }
        let docs = presenceMovedDocs
        presenceMovedDocs = []
        // (A terminal found slow here is closed after this, by `closeMarked`: the sets do not change meanwhile.)
        for d in docs { announce(d.presence.endOfTurn(), in: d) }
    }

    /// Carries `PresenceBoard`'s effects out in `d`: pushes to the terminals here, a notice to the other instances.
    func announce(_ effects: [PresenceBoard.Effect], in d: DocumentRuntime) {
        for effect in effects {
            switch effect {
            case let .announce(id, p):
                guard let c = d.subscribers[id] else { continue }
                cluster.share(d, c, p)
                guard let user = c.user, let client = c.clientID, d.subscribers.count > 1 else { continue }
                let bytes = SharedBytes(Message.line(p.push(doc: d.id, user: user.name, client: client)))
                for other in d.subscribers.values where other !== c { other.push(bytes) }
            case let .promptStateMayChange(id):
                if let c = d.subscribers[id] { pushPromptState(d, to: c) }
            case let .announceRemote(user, client, p):
                guard !d.subscribers.isEmpty else { continue }
                let bytes = SharedBytes(Message.line(p.push(doc: d.id, user: user, client: client)))
                for c in d.subscribers.values { c.push(bytes) }
            }
        }
    }

    /// On open: who else is here and where.
    func pushPresenceOfOthers(_ d: DocumentRuntime, to c: Connection) {
        for (id, p) in d.presence.positions where id != c.id {
            guard let other = d.subscribers[id], let user = other.user, let client = other.clientID else { continue }
            c.push(SharedBytes(Message.line(p.push(doc: d.id, user: user.name, client: client))))
        }
        for r in d.presence.remote.values {
            c.push(SharedBytes(Message.line(r.presence.push(doc: d.id, user: r.user, client: r.client))))
        }
    }
}
