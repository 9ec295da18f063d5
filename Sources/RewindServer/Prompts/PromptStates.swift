import RewindCore
import RewindLoop

/// `prompt_state` pushes: what undo and redo would do right now for each
/// terminal (its locale, its scope), sent to every terminal of the user with
/// the document open, on open and whenever a field changes. Owns the users
/// whose state this loop turn's edits may have changed.
final class PromptStates {
    private let prompts: PromptCenter
    private let access: AccessControl
    private let documents: Documents
    /// Documents with users whose prompt state edits of this loop turn may
    /// have changed (each holds its users: `promptChecksDue`). A table keyed
    /// by document, with a set of users made for it each turn, cost ~1,500
    /// instructions a commit.
    private var due: [DocumentRuntime] = []
    /// Per terminal (`Session.id`) and document: the last `prompt_state` pushed, to push only changes.
    private var pushed: [Int: [String: UndoPromptState]] = [:]

    init(prompts: PromptCenter, access: AccessControl, documents: Documents) {
        self.prompts = prompts
        self.access = access
        self.documents = documents
    }

    func state(_ d: DocumentRuntime, for c: Session) -> UndoPromptState {
        UndoPromptState(history: d.committedHistory, user: c.user.id, scope: d.undoScope(of: c), canEdit: access.mayEdit(d, c),
                        presented: prompts.presented(c, doc: d.id))
    }

    /// Pushes `prompt_state` to `c` if it changed since the last push (or always, when `force`).
    func push(_ d: DocumentRuntime, to c: Session, force: Bool = false) {
        push(state(d, for: c), of: d, to: c, force: force)
    }

    private func push(_ state: UndoPromptState, of d: DocumentRuntime, to c: Session, force: Bool) {
        guard force || pushed[c.id]?[d.id] != state else { return }
        pushed[c.id, default: [:]][d.id] = state
        c.push(SharedBytes(Push.promptState(doc: d.id, state, locale: c.locale)))
    }

    /// `c` left `doc` (nil: every document; it disconnected): what was pushed there is forgotten.
    func left(_ c: Session, doc: String?) {
        guard let doc else { pushed[c.id] = nil; return }
        pushed[c.id]?[doc] = nil
        if pushed[c.id]?.isEmpty == true { pushed[c.id] = nil }
    }

    /// An edit committed: the user's prompt state is checked once at the end
    /// of the loop turn, however many of their edits committed in it (a batch
    /// of one busy document commits dozens at once; checking each made the
    /// user's terminals × their edits the largest cost of a commit there).
    /// The push still goes out in the same write as the events and replies.
    func mayHaveChangedThisTurn(_ d: DocumentRuntime, user: Int64) {
        if d.promptChecksDue.isEmpty { due.append(d) }
        d.promptChecksDue.insert(user)
    }

    /// At the end of the loop turn (`EndOfTurnPhase.promptStates`).
    func checkDue() {
        guard !due.isEmpty else { return }
        var docs: [DocumentRuntime] = []
        swap(&docs, &due)
        defer {
            docs.removeAll(keepingCapacity: true)
            if due.isEmpty { due = docs }
        }
        for d in docs {
            // Taken out whole, and its storage handed back emptied for the next turn.
            var users = Set<Int64>()
            swap(&users, &d.promptChecksDue)
            if !d.halted && documents[d.id] === d {
                for user in users { mayHaveChanged(d, user: user) }
            }
            users.removeAll(keepingCapacity: true)
            if d.promptChecksDue.isEmpty { d.promptChecksDue = users }
        }
    }

    func mayHaveChanged(_ d: DocumentRuntime, user: Int64) {
        // A user's terminals on one document mostly share a scope and the
        // prompts shown: each distinct state is worked out once per change,
        // not once per terminal (50 terminals of one user made it most of a commit's cost).
        var canEdit: Bool?
        // A few at most: searched, not hashed; the first kept apart (most
        // users have one terminal here: no list made for them).
        var first: (inputs: Inputs, state: UndoPromptState)?
        var more: [(inputs: Inputs, state: UndoPromptState)] = []
        for c in d.subscribers.values where c.user.id == user {
            if canEdit == nil { canEdit = access.mayEdit(d, c) }
            let inputs = Inputs(scope: d.undoScope(of: c), presented: prompts.presented(c, doc: d.id))
            let state: UndoPromptState
            if let f = first, f.inputs == inputs {
                state = f.state
            } else if let k = more.first(where: { $0.inputs == inputs }) {
                state = k.state
            } else {
                state = UndoPromptState(tops: canEdit! ? d.committedHistory.tops(user: user, scope: inputs.scope) : nil,
                                        scope: inputs.scope, presented: inputs.presented)
                if first == nil { first = (inputs, state) } else { more.append((inputs, state)) }
            }
            push(state, of: d, to: c, force: false)
        }
    }

    private struct Inputs: Equatable {
        var scope: Key?
        var presented: [String]
    }
}

extension DocumentRuntime {
    /// The undo scope a terminal works in without an explicit `scope`: the
    /// nearest `undoScope` node around its first responder, else the document's.
    func undoScope(of c: Session) -> Key? {
        current.document.undoScope(around: presence[c.id].node)
    }
}

extension AccessControl {
    /// Whether `c` may edit `d` now (prompt state, `validate`, chain actions).
    func mayEdit(_ d: DocumentRuntime, _ c: Session) -> Bool {
        lastKnownRole(d.id, of: c)?.allows(.edit) ?? false
    }
}
