/// A terminal's focus in one document: its first responder and its text
/// selection. Collaborators see it as presence (remote cursors).
public struct Presence: Sendable, Equatable {
    public var node: Key?
    public var selection: Selection?

    public init(node: Key? = nil, selection: Selection? = nil) {
        self.node = node
        self.selection = selection
    }

    public var isEmpty: Bool { node == nil && selection == nil }

    /// The presence after a committed event: the selection moves through the
    /// text ops of someone else's event (an insert exactly at the caret leaves
    /// the caret before it, as remote typing does in shared editors) — not
    /// through the terminal's own, which its own `select` already accounts
    /// for — and focus or selection on a node that is gone or no longer
    /// focusable in `doc` is dropped; a selection is clamped to the text.
    ///
    /// `doc` may run ahead of the events applied so far (edits still being
    /// committed); a clamp must not cut a position those have yet to move, so
    /// it uses the longer of `doc`'s text and `committed`'s.
    public func after(_ ops: [Op], byThisTerminal own: Bool, in doc: Document, committed: Document? = nil) -> Presence {
        var p = self
        if var s = p.selection {
            if !own {
                for op in ops { s = s.mapped(through: op, gravity: .left) }
            }
            p.selection = s
        }
        if let n = p.node, doc[n]?.focusable != true { p.node = nil }
        if let s = p.selection {
            if let n = doc[s.node], n.focusable, s.node == p.node {
                let len = max(n.text.count, committed?[s.node]?.text.count ?? 0)
                p.selection = Selection(node: s.node, start: min(s.start, len), end: min(s.end, len))
            } else {
                p.selection = nil
            }
        }
        return p
    }
}
