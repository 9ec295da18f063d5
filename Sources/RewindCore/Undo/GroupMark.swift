/// A change to a user's undo history that is not an edit: recorded in the
/// append-only `group_marks` table in the same commit as the events around it,
/// so that the stacks are a projection of the log alone.
///
/// Marks are numbered 1, 2, 3, … per document (`n`) and sit between events:
/// a mark with `afterVersion` v comes after event v and before event v + 1.
public struct GroupMark: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        /// The outermost level of a terminal's explicit group ended (end_group,
        /// undo on that terminal, close, disconnect, or a restart): the group
        /// enters the user's undo stack now.
        case close
        /// `set_action` on a group already closed.
        case rename
        /// `clear_history`: the user's stacks in `scope` are emptied.
        case clear
        /// `set_undo_levels`: the groups the user's stacks keep from now on
        /// (NSUndoManager's levelsOfUndo), its `action` the number — nil: back
        /// to the server's default; with `group` `documentLevels`, the owner's
        /// cap for everyone's. Stacks longer than that lose their oldest groups now.
        case levels
    }

    /// The `group` of a `levels` mark that caps every user's stacks of the document (the owner's).
    public static let documentLevels = "document"

    public var n: Int64
    public var afterVersion: Int64
    public var id: String
    public var userID: Int64
    public var client: String
    public var kind: Kind
    public var group: String?
    public var scope: Key?
    public var action: String?
    /// For `close`: the terminal's selection after the group.
    public var selection: Selection?
    public var tx: String?
    public var time: Int64
    /// SHA-256 chaining this entry to the one before it (`LogRow`); empty until sealed.
    public var hash: [UInt8] = []
    /// Scope and selection as the text stored in the log's `meta` and hashed.
    public var storedMeta: String?
    /// Position in the document's log: the events before it and the marks up to it.
    public var seq: Int64 { afterVersion + n }

    public init(n: Int64, afterVersion: Int64, id: String, userID: Int64, client: String, kind: Kind, group: String? = nil,
                scope: Key? = nil, action: String? = nil, selection: Selection? = nil, tx: String? = nil, time: Int64)
    {
        self.n = n; self.afterVersion = afterVersion; self.id = id; self.userID = userID; self.client = client
        self.kind = kind; self.group = group; self.scope = scope; self.action = action; self.selection = selection
        self.tx = tx; self.time = time
    }
}

/// One entry of a document's log in order: an event or a mark.
public enum LogEntry: Sendable, Equatable {
    case event(Event)
    case mark(GroupMark)
}
