import RewindCore
import RewindLoop

/// `prompt_state` pushes: what undo and redo would do right now for each
/// terminal (its locale, its scope), sent to every terminal of the user with
/// the document open, on open and whenever a field changes.
extension Server {
    /// What one terminal's `prompt_state` says, compared field by field
    /// before anything is encoded (it is checked after every commit).
    struct PromptStateView: Equatable {
        var scope: Key?
        var canUndo: Bool
        var canRedo: Bool
        var undoAction: String?
        var redoAction: String?
        var presented: [String]

        func json(doc: String, locale: String) -> JSON {
            .obj([
                ("push", "prompt_state"), ("doc", .string(doc)), ("scope", scope.map { .string($0.string) } ?? .null),
                ("can_undo", .bool(canUndo)), ("can_redo", .bool(canRedo)),
                ("undo_title", .string(Titles.title(verb: "Undo", action: undoAction, locale: locale))),
                ("redo_title", .string(Titles.title(verb: "Redo", action: redoAction, locale: locale))),
                ("presented", .array(presented.map { .string($0) })),
            ])
        }
    }

    func promptState(_ d: DocumentRuntime, for c: Connection) -> PromptStateView {
        let user = c.user!.id
        let scope = terminalScope(d, c)
        let h = d.committed.history
        // A viewer cannot undo, even groups it made while it could edit.
        let canEdit = mayEdit(d, c)
        let undo = canEdit ? h.topUndo(user: user, scope: scope) : nil
        let redo = canEdit ? h.topRedo(user: user, scope: scope) : nil
        return PromptStateView(scope: scope, canUndo: undo != nil, canRedo: redo != nil, undoAction: undo?.action,
                               redoAction: redo?.action, presented: presentedPrompts(c, doc: d.id))
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
