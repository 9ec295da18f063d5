import RewindCore
import RewindLoop

/// `focus`, `blur`, `select`, `hit_test` (SPEC section 5): each terminal's
/// first responder and text selection per open document, seen by the others
/// as `presence` pushes (`PresenceRelay`).
struct FocusRequests {
    let presence: PresenceRelay
    let limits: Limits

    /// A node of the current state that can be a first responder.
    private func focusableNode(_ r: Request, _ d: DocumentRuntime) throws(RewindError) -> Node {
        let id = try r.string("node", maxBytes: limits.maxNameBytes)
        guard let n = d.current.document[Key(id)] else { throw .notFound("\(r.type): no node \"\(id)\"", details: ["node": .string(id)]) }
        guard n.focusable else { throw .badRequest("\(r.type): node \"\(id)\" is not focusable", details: ["node": .string(id)]) }
        return n
    }

    func focus(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let n = try focusableNode(r, d)
        var p = d.presence[c.id]
        if p.node != n.id { p.selection = nil }
        p.node = n.id
        presence.set(d, c, p)
        c.reply(Message.reply(r.id, [("node", .string(n.id.string)), ("scope", d.undoScope(of: c).map { .string($0.string) } ?? .null)]))
    }

    func blur(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        presence.set(d, c, Presence())
        c.reply(Message.reply(r.id))
    }

    /// `select` moves the selection and makes its node the first responder.
    func select(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let start = try r.int("start")
        let end = try r.optionalInt("end") ?? start
        let n = try focusableNode(r, d)
        guard start >= 0, start <= end, end <= Int64(n.text.count) else {
            throw .badRequest("select: need 0 <= start <= end <= \(n.text.count) (the text length of \"\(n.id)\")")
        }
        let s = Selection(node: n.id, start: Int(start), end: Int(end))
        presence.set(d, c, Presence(node: n.id, selection: s))
        c.reply(Message.reply(r.id, [("selection", s.json)]))
    }

    func hitTest(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        guard let x = r.body["x"]?.doubleValue, let y = r.body["y"]?.doubleValue, x.isFinite, y.isFinite else {
            throw .badRequest("hit_test: `x` and `y` must be numbers")
        }
        c.reply(Message.reply(r.id, [("node", .string(d.current.document.hitTest(x: x, y: y).string))]))
    }
}
