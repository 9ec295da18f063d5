import RewindCore
import RewindLoop

/// `prompt_state` pushes: what undo and redo would do right now for each
/// terminal (its locale, its scope), sent to every terminal of the user with
/// the document open, on open and whenever a field changes.
extension Server {
    func promptState(_ d: DocumentRuntime, for c: Connection) -> JSON {
        let user = c.user!.id
        let scope = terminalScope(d, c)
        let h = d.committed.history
        // A viewer cannot undo, even groups it made while it could edit.
        let canEdit = mayEdit(d, c)
        let undo = canEdit ? h.topUndo(user: user, scope: scope) : nil
        let redo = canEdit ? h.topRedo(user: user, scope: scope) : nil
        return .obj([
            ("push", "prompt_state"), ("doc", .string(d.id)), ("scope", scope.map { .string($0.string) } ?? .null),
            ("can_undo", .bool(undo != nil)), ("can_redo", .bool(redo != nil)),
            ("undo_title", .string(Titles.title(verb: "Undo", action: undo?.action, locale: c.locale))),
            ("redo_title", .string(Titles.title(verb: "Redo", action: redo?.action, locale: c.locale))),
            ("presented", .array(presentedPrompts(c, doc: d.id).map { .string($0) })),
        ])
    }

    /// Pushes `prompt_state` to `c` if it changed since the last push (or always, when `force`).
    func pushPromptState(_ d: DocumentRuntime, to c: Connection, force: Bool = false) {
        let state = promptState(d, for: c)
        guard force || c.promptStates[d.id] != state else { return }
        c.promptStates[d.id] = state
        c.push(SharedBytes(Message.line(state)))
    }

    /// The undo scope a terminal works in without an explicit `scope`: the
    /// nearest `undoScope` node around its first responder, else the document's.
    func terminalScope(_ d: DocumentRuntime, _ c: Connection) -> Key? {
        d.current.document.undoScope(around: d.presence[c.id]?.node)
    }

    func promptStateMayHaveChanged(_ d: DocumentRuntime, user: Int64) {
        for c in d.subscribers.values where c.user?.id == user { pushPromptState(d, to: c) }
    }
}
