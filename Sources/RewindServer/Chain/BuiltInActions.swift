import RewindCore
import RewindLoop

/// The built-in actions of the chain (PROTOCOL.md: undo, redo, delete, copy,
/// paste, select_all) and the level each is handled at. A new action is one
/// more `register` here; the walk does not change.
extension Server {
    static func builtInActions() -> ActionTable<ChainContext, ChainPerform> {
        var t = ActionTable<ChainContext, ChainPerform>()

        // Undo and redo belong to the nearest undo history: a node with
        // `undoScope`, else the document. It claims them even when its stack
        // is empty (greyed out), as NSResponder's undoManager does.
        for kind in [EventKind.undo, .redo] {
            let verb = kind == .undo ? "Undo" : "Redo"
            let run: ChainPerform = { by, ctx, r in
                let scope: Key? = if case let .node(k) = by { k } else { nil }
                let policy: ConflictPolicy
                do throws(RewindError) { policy = try ctx.server.conflictPolicy(r, in: ctx.args) } catch { return ctx.c.fail(r, error) }
                let tx = ctx.args["tx"]?.stringValue
                ctx.server.runRevert(r, ctx.c, ctx.d, .init(kind: kind, scope: scope, policy: policy, tx: tx),
                                     extra: [("handled_by", .string(by.id))])
            }
            func verdict(_ scope: Key?, _ ctx: ChainContext) -> ActionTable<ChainContext, ChainPerform>.Verdict {
                let h = ctx.d.history, user = ctx.c.user!.id
                let top = kind == .undo ? h.topUndo(user: user, scope: scope) : h.topRedo(user: user, scope: scope)
                return .init(enabled: top != nil, title: Titles.title(verb: verb, action: top?.action, locale: ctx.locale))
            }
            t.register(kind.rawValue, at: .node, payload: run) { r, ctx in
                guard case let .node(k) = r, ctx.document[k]?.undoScope == true else { return nil }
                return verdict(k, ctx)
            }
            t.register(kind.rawValue, at: .document, payload: run) { _, ctx in verdict(nil, ctx) }
        }

        // Delete: the selected text of the node holding the terminal's selection
        // (disabled for a bare caret, as in a text view); with no selection at
        // all, the first responder itself (document level).
        t.register("delete", at: .node, payload: { by, ctx, r in
            guard case let .node(k) = by, let s = ctx.selection(in: k) else { return ctx.unreachable(r) }
            ctx.server.submitFromChain(ctx, r, by: by, ops: [.remove(k, pos: s.start, len: s.end - s.start)],
                                       action: Titles.ServerAction.delete, selection: s,
                                       caretAfter: Selection(node: k, start: s.start, end: s.start))
        }) { r, ctx in
            guard case let .node(k) = r, let s = ctx.selection(in: k) else { return nil }
            return .init(enabled: s.end > s.start, title: Titles.word("Delete", locale: ctx.locale))
        }
        t.register("delete", at: .document, payload: { by, ctx, r in
            guard let n = ctx.presence.node else { return ctx.unreachable(r) }
            ctx.server.submitFromChain(ctx, r, by: by, ops: [.delete(n)], action: Titles.ServerAction.delete, selection: nil)
        }) { _, ctx in
            guard let n = ctx.presence.node, n != Document.rootID, ctx.presence.selection == nil else { return nil }
            return .init(enabled: true, title: Titles.word("Delete", locale: ctx.locale))
        }

        // Copy and paste through the session's pasteboard (`args.text` pastes given text instead).
        t.register("copy", at: .node, payload: { by, ctx, r in
            guard case let .node(k) = by, let s = ctx.selection(in: k), let n = ctx.document[k] else { return ctx.unreachable(r) }
            let text = Array(n.text[min(s.start, n.text.count)..<min(s.end, n.text.count)])
            ctx.c.clipboard = text
            ctx.c.reply(Message.reply(r.id, [("handled_by", .string(by.id)), ("text", .string(String(String.UnicodeScalarView(text))))]))
        }) { r, ctx in
            guard case let .node(k) = r, let s = ctx.selection(in: k) else { return nil }
            return .init(enabled: s.end > s.start, title: Titles.word("Copy", locale: ctx.locale))
        }
        t.register("paste", at: .node, payload: { by, ctx, r in
            guard case let .node(k) = by, let s = ctx.selection(in: k) else { return ctx.unreachable(r) }
            let text = ctx.args["text"]?.stringValue.map { Array($0.unicodeScalars) } ?? ctx.c.clipboard
            var ops: [Op] = []
            if s.end > s.start { ops.append(.remove(k, pos: s.start, len: s.end - s.start)) }
            ops.append(.insert(k, pos: s.start, text: text))
            ctx.server.submitFromChain(ctx, r, by: by, ops: ops, action: Titles.ServerAction.paste, selection: s,
                                       caretAfter: Selection(node: k, start: s.start + text.count, end: s.start + text.count))
        }) { r, ctx in
            guard case let .node(k) = r, ctx.selection(in: k) != nil else { return nil }
            let hasText = ctx.args["text"]?.stringValue.map { !$0.isEmpty } ?? !ctx.c.clipboard.isEmpty
            return .init(enabled: hasText, title: Titles.word("Paste", locale: ctx.locale))
        }

        // Select all: the first responder's whole text.
        t.register("select_all", at: .node, payload: { by, ctx, r in
            guard case let .node(k) = by, let n = ctx.document[k] else { return ctx.unreachable(r) }
            let s = Selection(node: k, start: 0, end: n.text.count)
            ctx.server.setPresence(ctx.d, ctx.c, Presence(node: k, selection: s))
            ctx.c.reply(Message.reply(r.id, [("handled_by", .string(by.id)), ("selection", s.json)]))
        }) { r, ctx in
            guard case let .node(k) = r, k == ctx.presence.node, let n = ctx.document[k] else { return nil }
            return .init(enabled: !n.text.isEmpty, title: Titles.word("Select All", locale: ctx.locale))
        }
        return t
    }

    /// An edit made by a chain action: an ordinary submit (grouped, logged and
    /// undoable like any other), made against the state the handler looked at.
    /// The terminal did not type it, so the server moves its caret (`caretAfter`).
    func submitFromChain(_ ctx: ChainContext, _ r: Request, by: Responder, ops: [Op], action: String, selection: Selection?,
                         caretAfter: Selection? = nil)
    {
        let c = ctx.c, d = ctx.d
        let tx = ctx.args["tx"]?.stringValue ?? "chain-" + UUID.random()
        // Inside the terminal's open group the edit joins it and keeps the group's name.
        let submission = self.submission(c, doc: d.id, tx: tx, base: d.current.version, ops: ops,
                                         action: c.groups[d.id] == nil ? action : nil, selection: selection)
        c.commitsInFlight += 1
        d.run(.init(command: .submit(submission), replies: [{ result in
            c.commitAnswered()
            switch result {
            case let .success(.version(v)):
                if let caretAfter, d.presence[c.id].node == caretAfter.node {
                    self.setPresence(d, c, Presence(node: caretAfter.node, selection: caretAfter))
                }
                c.reply(Message.reply(r.id, [("handled_by", .string(by.id)), ("version", .int(v))]))
            case .success: c.fail(r, RewindError(.internal, "a chain edit answered with something other than a version"))
            case let .failure(e): c.fail(r, e)
            }
        }]))
    }
}
