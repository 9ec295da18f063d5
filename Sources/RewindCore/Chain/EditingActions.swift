/// What a chain handler looks at: the document as the terminal's next
/// request sees it (edits still being committed included), the terminal's
/// presence and undo history there, its pasteboard, the request's arguments.
public struct ChainState: Sendable {
    public var document: Document
    public var presence: Presence
    public var history: UndoHistory
    public var user: Int64
    /// The session's pasteboard (`copy` fills it, `paste` reads it).
    public var clipboard: [Unicode.Scalar]
    /// `args.text` of a `paste` (nil: paste the pasteboard).
    public var pasteText: [Unicode.Scalar]?
    public var locale: String

    public init(document: Document, presence: Presence, history: UndoHistory, user: Int64, clipboard: [Unicode.Scalar],
                pasteText: [Unicode.Scalar]?, locale: String)
    {
        self.document = document
        self.presence = presence
        self.history = history
        self.user = user
        self.clipboard = clipboard
        self.pasteText = pasteText
        self.locale = locale
    }

    /// The terminal's selection if it lies in `node`, within its current text.
    public func selection(in node: Key) -> Selection? {
        guard let s = presence.selection, s.node == node, let n = document[node] else { return nil }
        return Selection(node: node, start: min(s.start, n.text.count), end: min(s.end, n.text.count))
    }
}

/// What a built-in action comes to; the server carries it out and answers
/// with `handled_by` added.
public enum ChainEffect: Sendable, Equatable {
    /// Undo or redo in `scope` (nil: the document's history).
    case revert(EventKind, scope: Key?)
    /// An edit, submitted like any other (grouped, logged, undoable); the
    /// terminal did not type it, so its caret goes to `caretAfter`.
    case edit(ops: [Op], action: String, selection: Selection?, caretAfter: Selection?)
    /// Onto the session's pasteboard; answered with the text.
    case copy([Unicode.Scalar])
    /// The terminal's selection; answered with it.
    case select(Selection)
}

/// A claimed action's effect, or nil when what the claim checked is gone (a bug: answered `internal`).
public typealias ChainAction = @Sendable (_ by: Responder, _ state: ChainState) -> ChainEffect?

/// The built-in actions of the chain (PROTOCOL.md: undo, redo, delete, copy,
/// paste, select_all) and the level each is handled at. A new action is one
/// more `register` here; the walk does not change.
public enum EditingActions {
    public static func table() -> ActionTable<ChainState, ChainAction> {
        var t = ActionTable<ChainState, ChainAction>()

        // Undo and redo belong to the nearest undo history: a node with
        // `undoScope`, else the document. It claims them even when its stack
        // is empty (greyed out), as NSResponder's undoManager does.
        for kind in [EventKind.undo, .redo] {
            let verb = kind == .undo ? "Undo" : "Redo"
            let run: ChainAction = { by, _ in
                if case let .node(k) = by { return .revert(kind, scope: k) }
                return .revert(kind, scope: nil)
            }
            @Sendable func verdict(_ scope: Key?, _ s: ChainState) -> ActionTable<ChainState, ChainAction>.Verdict {
                let top = kind == .undo ? s.history.topUndo(user: s.user, scope: scope) : s.history.topRedo(user: s.user, scope: scope)
                return .init(enabled: top != nil, title: Titles.title(verb: verb, action: top?.action, locale: s.locale))
            }
            t.register(kind.rawValue, at: .node, payload: run) { r, s in
                guard case let .node(k) = r, s.document[k]?.undoScope == true else { return nil }
                return verdict(k, s)
            }
            t.register(kind.rawValue, at: .document, payload: run) { _, s in verdict(nil, s) }
        }

        // Delete: the selected text of the node holding the terminal's selection
        // (disabled for a bare caret, as in a text view); with no selection at
        // all, the first responder itself (document level).
        t.register("delete", at: .node, payload: { by, s in
            guard case let .node(k) = by, let sel = s.selection(in: k) else { return nil }
            return .edit(ops: [.remove(k, pos: sel.start, len: sel.end - sel.start)], action: Titles.ServerAction.delete, selection: sel,
                         caretAfter: Selection(node: k, start: sel.start, end: sel.start))
        }) { r, s in
            guard case let .node(k) = r, let sel = s.selection(in: k) else { return nil }
            return .init(enabled: sel.end > sel.start, title: Titles.word("Delete", locale: s.locale))
        }
        t.register("delete", at: .document, payload: { _, s in
            guard let n = s.presence.node else { return nil }
            return .edit(ops: [.delete(n)], action: Titles.ServerAction.delete, selection: nil, caretAfter: nil)
        }) { _, s in
            guard let n = s.presence.node, n != Document.rootID, s.presence.selection == nil else { return nil }
            return .init(enabled: true, title: Titles.word("Delete", locale: s.locale))
        }

        // Copy and paste through the session's pasteboard (`args.text` pastes given text instead).
        t.register("copy", at: .node, payload: { by, s in
            guard case let .node(k) = by, let sel = s.selection(in: k), let n = s.document[k] else { return nil }
            return .copy(Array(n.text[min(sel.start, n.text.count)..<min(sel.end, n.text.count)]))
        }) { r, s in
            guard case let .node(k) = r, let sel = s.selection(in: k) else { return nil }
            return .init(enabled: sel.end > sel.start, title: Titles.word("Copy", locale: s.locale))
        }
        t.register("paste", at: .node, payload: { by, s in
            guard case let .node(k) = by, let sel = s.selection(in: k) else { return nil }
            let text = s.pasteText ?? s.clipboard
            var ops: [Op] = []
            if sel.end > sel.start { ops.append(.remove(k, pos: sel.start, len: sel.end - sel.start)) }
            ops.append(.insert(k, pos: sel.start, text: text))
            return .edit(ops: ops, action: Titles.ServerAction.paste, selection: sel,
                         caretAfter: Selection(node: k, start: sel.start + text.count, end: sel.start + text.count))
        }) { r, s in
            guard case let .node(k) = r, s.selection(in: k) != nil else { return nil }
            return .init(enabled: !(s.pasteText ?? s.clipboard).isEmpty, title: Titles.word("Paste", locale: s.locale))
        }

        // Select all: the first responder's whole text.
        t.register("select_all", at: .node, payload: { by, s in
            guard case let .node(k) = by, let n = s.document[k] else { return nil }
            return .select(Selection(node: k, start: 0, end: n.text.count))
        }) { r, s in
            guard case let .node(k) = r, k == s.presence.node, let n = s.document[k] else { return nil }
            return .init(enabled: !n.text.isEmpty, title: Titles.word("Select All", locale: s.locale))
        }
        return t
    }

    /// The plain title of an action nobody claims: the built-ins' menu words, else the action's name.
    public static func defaultTitle(_ action: String, locale: String) -> String {
        builtInWords[action].map { Titles.word($0, locale: locale) } ?? action
    }

    private static let builtInWords = ["undo": "Undo", "redo": "Redo", "delete": "Delete", "copy": "Copy",
                                       "paste": "Paste", "select_all": "Select All"]
}
