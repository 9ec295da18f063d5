import RewindCore
import RewindLoop

/// `prompt_state` pushes: what undo and redo would do right now for each
/// terminal (its locale, its scope), sent to every terminal of the user with
/// the document open, on open and whenever a field changes.
extension Server {
    func promptState(_ d: DocumentRuntime, for c: Connection) -> UndoPromptState {
        UndoPromptState(history: d.committed.history, user: c.user!.id, scope: terminalScope(d, c), canEdit: mayEdit(d, c),
                        presented: presentedPrompts(c, doc: d.id))
    }

    /// Pushes `prompt_state` to `c` if it changed since the last push (or always, when `force`).
    func pushPromptState(_ d: DocumentRuntime, to c: Connection, force: Bool = false) {
        let state = promptState(d, for: c)
        guard force || c.promptStates[d.id] != state else { return }
        c.promptStates[d.id] = state
        c.push(SharedBytes(Message.line(state.json(doc: d.id, locale: c.locale))))
    }

    /// The undo scope a terminal works in without an explicit `scope`: the
    /// nearest `undoScope` node around its first responder, else the document's.
    func terminalScope(_ d: DocumentRuntime, _ c: Connection) -> Key? {
        d.current.document.undoScope(around: d.presence[c.id].node)
    }

    func promptStateMayHaveChanged(_ d: DocumentRuntime, user: Int64) {
        for c in d.subscribers.values where c.user?.id == user { pushPromptState(d, to: c) }
    }
}
