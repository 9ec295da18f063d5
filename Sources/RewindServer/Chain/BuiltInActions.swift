import RewindCore
import RewindLoop

/// The chain's built-in actions carried out: what `EditingActions` (core)
/// decided — an undo or redo, an edit, a copy, a selection — done here, and
/// answered with `handled_by`.
extension ChainRequests {
    func carryOut(_ effect: ChainEffect, by: Responder, args: JSONObject, _ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let handledBy: (String, JSON?) = ("handled_by", .string(by.id))
        switch effect {
        case let .revert(kind, scope):
            let policy = try undo.conflictPolicy(r, in: args)
            undo.runRevert(r, c, d, .init(kind: kind, scope: scope, policy: policy, tx: args["tx"]?.stringValue), extra: [handledBy])
        case let .edit(ops, action, selection, caretAfter):
            submitFromChain(r, c, d, by: by, args: args, ops: ops, action: action, selection: selection, caretAfter: caretAfter)
        case let .copy(text):
            clipboards[c.id] = text
            c.reply(Message.reply(r.id, [handledBy, ("text", .string(String(String.UnicodeScalarView(text))))]))
        case let .select(s):
            presence.set(d, c, Presence(node: s.node, selection: s))
            c.reply(Message.reply(r.id, [handledBy, ("selection", s.json)]))
        }
    }

    /// An edit made by a chain action: an ordinary submit (grouped, logged and
    /// undoable like any other), made against the state the handler looked at.
    /// The terminal did not type it, so the server moves its caret (`caretAfter`).
    private func submitFromChain(_ r: Request, _ c: Session, _ d: DocumentRuntime, by: Responder, args: JSONObject, ops: [Op],
                                 action: String, selection: Selection?, caretAfter: Selection?)
    {
        let tx = args["tx"]?.stringValue ?? "chain-" + UUID.random()
        // Inside the terminal's open group the edit joins it and keeps the group's name.
        let submission = self.documentRequests.submission(c, doc: d.id, tx: tx, base: d.current.version, ops: ops,
                                         action: documentRequests.openGroups[d.id, c.id] == nil ? action : nil, selection: selection)
        d.run(.init(command: .submit(submission), replies: [c.committing { result in
            switch result {
            case let .success(.version(v)):
                if let caretAfter, d.presence[c.id].node == caretAfter.node {
                    self.presence.set(d, c, Presence(node: caretAfter.node, selection: caretAfter))
                }
                c.reply(Message.reply(r.id, [("handled_by", .string(by.id)), ("version", .int(v))]))
            case .success: c.fail(r, RewindError(.internal, "a chain edit answered with something other than a version"))
            case let .failure(e): c.fail(r, e)
            }
        }]))
    }
}
