import RewindCore
import RewindLoop

/// Shake to undo (SPEC section 6), handled at application level: from the
/// terminal's first responder to the nearest undo history, then the prompt
/// by NSUndoManager's four cases.
struct ShakeRequests {
    let prompts: PromptCenter
    let access: AccessControl
    let undo: UndoRequests
    let documentRequests: DocumentRequests

    func motion(_ r: Request, _ c: Session, _ d: DocumentRuntime) throws(RewindError) {
        let motion = try r.string("motion", maxBytes: 32)
        guard motion == "shake" else { throw .badRequest("motion: unknown motion \"\(motion)\" (known: shake)") }
        guard c.options.shakeToEdit else {
            return c.reply(Message.reply(r.id, [("prompt", .null), ("reason", "shake_to_edit is off for this terminal")]))
        }
        // (Runs in the document's order, before the connection's next request:
        // a `respond` sent right behind the shake finds its prompt presented.)
        // Shaking again while an undo prompt is up (for any document) shows no second one.
        if let shown = prompts.held(by: c, reason: "shake") {
            return c.reply(Message.reply(r.id, [("prompt", .string(shown)), ("already", true)]))
        }
        guard access.mayEdit(d, c) else {
            return c.reply(Message.reply(r.id, [("prompt", .null), ("reason", "a viewer cannot undo or redo")]))
        }
        let scope = d.undoScope(of: c)
        let user = c.user.id
        let top = d.history.topUndo(user: user, scope: scope), redo = d.history.topRedo(user: user, scope: scope)
        let tops = UndoPrompts.Tops(undo: top.map { (group: $0.key.id, action: $0.action) },
                                    redo: redo.map { (group: $0.key.id, action: $0.action) })
        guard tops.undo != nil || tops.redo != nil else {
            return c.reply(Message.reply(r.id, [("prompt", .null)]))  // NSUndoManager's fourth case: nothing to offer
        }
        // Stored before it is shown (it outlives this server); this terminal's next requests wait for it.
        let processing = c.processingGoesOn()
        prompts.presentStored(PromptCause(shake: tops, scope: scope), in: d, to: c) { result in
            defer { processing.end() }
            switch result {
            case let .success(prompt): c.reply(Message.reply(r.id, [("prompt", .string(prompt.id))]))
            case let .failure(e): c.fail(r, e)
            }
        }
    }

    /// What answering a shake's prompt does (here or after a restart, on any
    /// instance): undo or redo the group it named, which must still be on top.
    /// Held by the prompt center until answered or cancelled: it must not keep what it uses alive.
    func answer(_ cause: PromptCause, _ d: DocumentRuntime) -> PromptAnswer {
        guard case let .shake(_, undoTop, redoTop) = cause else { return { _, c, r in r.map { c.reply(Message.reply($0.id)) } } }
        let scope = cause.scope
        return { [unowned undo, unowned documentRequests] answer, c, r in
            let kind: EventKind
            switch answer {
            case Prompt.ActionID.undo: kind = .undo
            case Prompt.ActionID.redo: kind = .redo
            default: return r.map { c.reply(Message.reply($0.id)) } ?? ()  // cancel: nothing to undo
            }
            guard let r else { return }
            guard documentRequests.isOpen(d, on: c) else { return c.fail(r, .badRequest("respond: document \"\(d.id)\" is no longer open on this terminal")) }
            // The answer is about the group the prompt named: if another is on top now, `conflict`.
            let group = kind == .undo ? undoTop?.group : redoTop?.group
            undo.runRevert(r, c, d, .init(kind: kind, scope: scope, policy: .prompt, expectedGroup: group))
        }
    }
}
