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
        whenOpen(c, d) { [self] error in
            if let error { return c.fail(r, error) }
            do throws(RewindError) {
                let n = try self.focusableNode(r, d)
                var p = d.presence[c.id] ?? Presence()
                if p.node != n.id { p.selection = nil }
                p.node = n.id
                self.setPresence(d, c, p)
                c.reply(Message.reply(r.id, [("node", .string(n.id.string)), ("scope", self.terminalScope(d, c).map { .string($0.string) } ?? .null)]))
            } catch { c.fail(r, error) }
        }
    }

    func blur(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        whenOpen(c, d) { [self] error in
            if let error { return c.fail(r, error) }
            self.setPresence(d, c, Presence())
            c.reply(Message.reply(r.id))
        }
    }

    /// `select` moves the selection and makes its node the first responder.
    func select(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        let start = try r.int("start")
        let end = try r.optionalInt("end") ?? start
        whenOpen(c, d) { [self] error in
            if let error { return c.fail(r, error) }
            do throws(RewindError) {
                let n = try self.focusableNode(r, d)
                guard start >= 0, start <= end, end <= Int64(n.text.count) else {
                    throw .badRequest("select: need 0 <= start <= end <= \(n.text.count) (the text length of \"\(n.id)\")")
                }
                let s = Selection(node: n.id, start: Int(start), end: Int(end))
                self.setPresence(d, c, Presence(node: n.id, selection: s))
                c.reply(Message.reply(r.id, [("selection", s.json)]))
            } catch { c.fail(r, error) }
        }
    }

    func hitTest(_ r: Request, _ c: Connection, _ d: DocumentRuntime) throws(RewindError) {
        guard let x = r.body["x"]?.doubleValue, let y = r.body["y"]?.doubleValue, x.isFinite, y.isFinite else {
            throw .badRequest("hit_test: `x` and `y` must be numbers")
        }
        whenOpen(c, d) { error in
            if let error { return c.fail(r, error) }
            c.reply(Message.reply(r.id, [("node", .string(d.current.document.hitTest(x: x, y: y).string))]))
        }
    }

    // MARK: Presence

    /// Records `c`'s presence and, if it changed, tells the other terminals
    /// (and `c` its new `prompt_state`: focus picks the undo scope).
    func setPresence(_ d: DocumentRuntime, _ c: Connection, _ p: Presence) {
        // A request that waited may act after its terminal left: no presence for a terminal not here.
        guard !c.isClosed, d.subscribers[c.id] === c else { return }
        let old = d.presence[c.id] ?? Presence()
        guard old != p else { return }
        d.movedPresence.remove(c.id)
        d.presence[c.id] = p.isEmpty ? nil : p
        broadcastPresence(d, of: c, p)
        pushPromptState(d, to: c)
    }

    private func broadcastPresence(_ d: DocumentRuntime, of c: Connection, _ p: Presence) {
        cluster.share(d, c, p)
        guard let user = c.user, let client = c.clientID, d.subscribers.count > 1 else { return }
        let bytes = SharedBytes(Message.line(p.push(doc: d.id, user: user.name, client: client)))
        for other in d.subscribers.values where other !== c { other.push(bytes) }
    }

    /// A terminal leaving the document (close, disconnect, idle) leaves no ghost behind.
    func leavePresence(_ d: DocumentRuntime, _ c: Connection) {
        let had = d.presence.removeValue(forKey: c.id).map { !$0.isEmpty } ?? false
        let movedThisTurn = d.movedPresence.remove(c.id) != nil  // the others may not have seen it go yet
        guard had || movedThisTurn else { return }
        broadcastPresence(d, of: c, Presence())
    }

    /// On open: who else is here and where.
    func pushPresenceOfOthers(_ d: DocumentRuntime, to c: Connection) {
        for (id, p) in d.presence where id != c.id {
            guard let other = d.subscribers[id], let user = other.user, let client = other.clientID else { continue }
            c.push(SharedBytes(Message.line(p.push(doc: d.id, user: user.name, client: client))))
        }
        for r in d.remotePresence.values {
            c.push(SharedBytes(Message.line(r.presence.push(doc: d.id, user: r.user, client: r.client))))
        }
    }

    /// After a committed event: selections move through its text ops (others'
    /// only: a terminal's own selection already accounts for its own edits),
    /// and focus on a node that is gone or no longer focusable (in the current
    /// state, which includes edits still being committed) is dropped. The
    /// others are told once per loop turn, with the final position: a batch of
    /// commits moving the same caret costs one push per terminal, not one per commit.
    func presenceAfter(_ d: DocumentRuntime, _ event: Event) {
        guard !d.presence.isEmpty else { return }
        let structural = event.ops.contains { !$0.isText }
        for (id, p) in d.presence {
            guard let c = d.subscribers[id] else { d.presence[id] = nil; continue }
            let own = c.user?.id == event.userID && c.clientID == event.client
            let moved = p.after(event.ops, byThisTerminal: own, in: d.current.document, committed: d.committed.document)
            if moved != p {
                d.presence[id] = moved.isEmpty ? nil : moved
                // Focus lost (node gone) is always pushed; a caret that only moved, unless quiet.
                if config.pushMovedPresence || moved.node != p.node {
                    if d.movedPresence.isEmpty { presenceMovedDocs.append(d) }
                    d.movedPresence.insert(id)
                }
            }
            if structural { pushPromptState(d, to: c) }  // focus may now sit in another undo scope
        }
    }

    /// Pushes the presence moves of this loop turn (called just before the loop sleeps).
    func flushMovedPresence() {
        guard !presenceMovedDocs.isEmpty else { return }
        let docs = presenceMovedDocs
        presenceMovedDocs = []
        for d in docs {
            // (A terminal found slow here is closed after this, by `closeMarked`: the set does not change under the loop.)
            let moved = d.movedPresence
            d.movedPresence = []
            for id in moved {
                guard let c = d.subscribers[id] else { continue }
                broadcastPresence(d, of: c, d.presence[id] ?? Presence())
            }
        }
    }
}
