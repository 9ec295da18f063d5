import RewindCore
import RewindLoop

/// `prompt_state` pushes: what undo and redo would do right now for each
/// terminal (its locale, its scope), sent to every terminal of the user with
/// the document open, on open and whenever a field changes.
extension Server {
    func promptState(_ d: DocumentRuntime, for c: Connection) -> UndoPromptState {
        UndoPromptState(history: d.committed.history, user: c.user!.id, scope: terminalScope(d, c), canEdit: mayEdit(d, c),
                        presented: prompts.presented(c, doc: d.id))
    }

    /// Pushes `prompt_state` to `c` if it changed since the last push (or always, when `force`).
    func pushPromptState(_ d: DocumentRuntime, to c: Connection, force: Bool = false) {
        push(promptState(d, for: c), of: d, to: c, force: force)
    }

    private func push(_ state: UndoPromptState, of d: DocumentRuntime, to c: Connection, force: Bool) {
        guard force || c.promptStates[d.id] != state else { return }
        c.promptStates[d.id] = state
        c.push(SharedBytes(Message.line(state.json(doc: d.id, locale: c.locale))))
    }

    /// The undo scope a terminal works in without an explicit `scope`: the
    /// nearest `undoScope` node around its first responder, else the document's.
    func terminalScope(_ d: DocumentRuntime, _ c: Connection) -> Key? {
        d.current.document.undoScope(around: d.presence[c.id].node)
    }

    /// An edit committed: the user's prompt state is checked once at the end
    /// of the loop turn, however many of their edits committed in it (a batch
    /// of one busy document commits dozens at once; checking each made the
    /// user's terminals × their edits the largest cost of a commit there).
    /// The push still goes out in the same write as the events and replies.
    func promptStateMayHaveChangedThisTurn(_ d: DocumentRuntime, user: Int64) {
        promptStatesToCheck[ObjectIdentifier(d), default: (d, [])].users.insert(user)
    }

    /// Just before the loop sleeps (`flushDirty`).
    func checkPromptStates() {
        guard !promptStatesToCheck.isEmpty else { return }
        let due = promptStatesToCheck
        promptStatesToCheck = [:]
        for (d, users) in due.values where !d.halted && existingDocument(d.id) === d {
            for user in users { promptStateMayHaveChanged(d, user: user) }
        }
    }

    func promptStateMayHaveChanged(_ d: DocumentRuntime, user: Int64) {
        // A user's terminals on one document mostly share a scope and the
        // prompts shown: each distinct state is worked out once per change,
        // not once per terminal (50 terminals of one user made it most of a commit's cost).
        var canEdit: Bool?
        var known: [(inputs: PromptInputs, state: UndoPromptState)] = []  // a few at most: searched, not hashed
        for c in d.subscribers.values where c.user?.id == user {
            if canEdit == nil { canEdit = mayEdit(d, c) }
            let inputs = PromptInputs(scope: terminalScope(d, c), presented: prompts.presented(c, doc: d.id))
            let state: UndoPromptState
            if let k = known.first(where: { $0.inputs == inputs }) {
                state = k.state
            } else {
                state = UndoPromptState(history: d.committed.history, user: user, scope: inputs.scope,
                                        canEdit: canEdit!, presented: inputs.presented)
                known.append((inputs, state))
            }
            push(state, of: d, to: c, force: false)
        }
    }

    private struct PromptInputs: Equatable {
        var scope: Key?
        var presented: [String]
    }
}
