/// What one terminal's `prompt_state` push says (PROTOCOL.md): what undo and
/// redo would do right now in its scope, and the prompts it is shown. Kept
/// per terminal and compared field by field before anything is encoded: it
/// is checked after every commit, and pushed only when it changed.
public struct UndoPromptState: Sendable, Equatable {
    public var scope: Key?
    public var canUndo: Bool
    public var canRedo: Bool
    public var undoAction: String?
    public var redoAction: String?
    public var presented: [String]

    /// The state for `user` in `scope`; a viewer (`canEdit` false) can undo
    /// nothing, not even the groups it made while it could edit.
    public init(history h: UndoHistory, user: Int64, scope: Key?, canEdit: Bool, presented: [String]) {
        self.init(tops: canEdit ? h.tops(user: user, scope: scope) : nil, scope: scope, presented: presented)
    }

    /// From `UndoHistory.tops` read by the caller (nil: the terminal cannot
    /// edit), so that a history held by a class is read where it is, not
    /// copied into an argument (the server checks this after every commit).
    public init(tops: (canUndo: Bool, undoAction: String?, canRedo: Bool, redoAction: String?)?, scope: Key?, presented: [String]) {
        self.scope = scope
        (canUndo, undoAction, canRedo, redoAction) = tops ?? (false, nil, false, nil)
        self.presented = presented
    }
}
