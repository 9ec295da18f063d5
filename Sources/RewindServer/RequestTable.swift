import RewindCore

/// Every request type of PROTOCOL.md, registered once: what it needs of the
/// caller, and its handler. `Server.dispatch` checks what an entry says —
/// a session, a role on the document, the document open in the session —
/// in one place before the handler runs, so a new request type is one entry
/// here and one function.
struct RequestType: Sendable {
    /// What must hold before the handler runs, and so what it is given.
    enum Rule: Sendable {
        /// `hello`: nothing yet.
        case hello(@Sendable (Server, Request, Connection) throws(RewindError) -> Void)
        /// Signed in; no document role (a request naming no document, or acting only on this connection's own state).
        case session(@Sendable (Server, Request, Session) throws(RewindError) -> Void)
        /// Signed in, with a role on the document named by `doc` that allows `Need`.
        case role(Need, @Sendable (Server, Request, Session, Role) throws(RewindError) -> Void)
        /// As `role`, and the document open on this connection: undo works on what the terminal sees.
        case openDocument(Need, @Sendable (Server, Request, Session, DocumentRuntime) throws(RewindError) -> Void)
    }

    let name: String
    let rule: Rule
    /// Answered while the server shuts down (the others get `unavailable`).
    var duringShutdown = false
}

extension RequestType {
    /// In PROTOCOL.md's order; the metrics label requests by these names.
    static let all: [RequestType] = [
        .init(name: "hello", rule: .hello { s, r, c throws(RewindError) in try s.hello(r, c) }),
        .init(name: "ping", rule: .session { _, r, c throws(RewindError) in c.reply(Message.reply(r.id)) }, duringShutdown: true),
        // Identity from the app (Identity/TokenRequests.swift): a new signed token for the same user.
        .init(name: "refresh", rule: .session { s, r, c throws(RewindError) in try s.refresh(r, c) }, duringShutdown: true),
        .init(name: "create_doc", rule: .session { s, r, c throws(RewindError) in try s.documentRequests.createDocument(r, c) }),
        .init(name: "open", rule: .role(.read) { s, r, c, _ throws(RewindError) in try s.documentRequests.open(r, c) }),
        // `close` only ever closes what the terminal has open.
        .init(name: "close", rule: .session { s, r, c throws(RewindError) in try s.close(r, c) }),
        .init(name: "submit", rule: .role(.edit) { s, r, c, _ throws(RewindError) in try s.documentRequests.submit(r, c) }),
        .init(name: "share", rule: .role(.share) { s, r, c, _ throws(RewindError) in try s.sharing.share(r, c) }),
        .init(name: "delete_doc", rule: .role(.own) { s, r, c, _ throws(RewindError) in try s.sharing.deleteDocument(r, c) }),
        // A user's documents (Access/LibraryRequests.swift): `undelete_doc` finds only the caller's own deleted documents.
        .init(name: "list_docs", rule: .session { s, r, c throws(RewindError) in try s.library.listDocuments(r, c) }),
        .init(name: "doc_info", rule: .role(.read) { s, r, c, role throws(RewindError) in try s.library.documentInfo(r, c, role: role) }),
        .init(name: "rename", rule: .role(.edit) { s, r, c, _ throws(RewindError) in try s.library.rename(r, c) }),
        .init(name: "list_deleted", rule: .session { s, r, c throws(RewindError) in try s.library.listDeleted(r, c) }),
        .init(name: "undelete_doc", rule: .session { s, r, c throws(RewindError) in try s.library.undeleteDocument(r, c) }),
        // Undo (Undo/UndoRequests.swift)
        .init(name: "begin_group", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.beginGroup(r, c, d) }),
        .init(name: "end_group", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.endGroup(r, c, d) }),
        .init(name: "set_action", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.setAction(r, c, d) }),
        .init(name: "undo", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.revert(r, c, d, kind: .undo) }),
        .init(name: "redo", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.revert(r, c, d, kind: .redo) }),
        .init(name: "clear_history", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.clearHistory(r, c, d) }),
        .init(name: "set_undo_levels", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.undo.setUndoLevels(r, c, d) }),
        .init(name: "history", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.undo.history(r, c, d) }),
        // Focus and presence (Chain/FocusRequests.swift)
        .init(name: "focus", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.focus(r, c, d) }),
        .init(name: "blur", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.blur(r, c, d) }),
        .init(name: "select", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.select(r, c, d) }),
        .init(name: "hit_test", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.hitTest(r, c, d) }),
        // The responder chain (Chain/ChainRequests.swift): `perform` of an editing action checks `edit` itself.
        .init(name: "perform", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.chain.perform(r, c, d) }),
        .init(name: "gesture", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.chain.gesture(r, c, d) }),
        .init(name: "validate", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.chain.validate(r, c, d) }),
        // Prompts (Prompts/): `respond` reaches its document through the prompt, whose handler checks the role again.
        .init(name: "respond", rule: .session { s, r, c throws(RewindError) in try s.prompts.respond(r, c) }),
        .init(name: "motion", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.shake.motion(r, c, d) }),
        // Scrub (QuickActions/PastStates+Scrub.swift)
        .init(name: "scrub", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.pastStates.scrub(r, c, d) }),
        .init(name: "scrub_commit", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.pastStates.scrubCommit(r, c, d) }),
        .init(name: "scrub_cancel", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.pastStates.scrubCancel(r, c, d) }),
        // Quick actions and previews (QuickActions/): pop and preview_action check the previewed document's role when they act.
        .init(name: "shortcut", rule: .session { s, r, c throws(RewindError) in try s.shortcuts.shortcut(r, c) }),
        .init(name: "peek", rule: .role(.read) { s, r, c, role throws(RewindError) in try s.pastStates.peek(r, c, role: role) }),
        .init(name: "pop", rule: .session { s, r, c throws(RewindError) in try s.pastStates.pop(r, c) }),
        .init(name: "preview_action", rule: .session { s, r, c throws(RewindError) in try s.pastStates.previewAction(r, c) }),
    ]

    static let byName: [String: RequestType] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}
