import RewindCore

/// Every request type of PROTOCOL.md, registered once: what it needs of the
/// caller, and its handler. `Server.dispatch` checks what an entry says —
/// a session, a role on the document, the document open on this connection —
/// in one place before the handler runs, so a new request type is one entry
/// here and one function.
struct RequestType: Sendable {
    /// What must hold before the handler runs, and so what it is given.
    enum Rule: Sendable {
        /// `hello`: nothing yet.
        case hello(@Sendable (Server, Request, Connection) throws(RewindError) -> Void)
        /// Signed in; no document role (a request naming no document, or acting only on this connection's own state).
        case session(@Sendable (Server, Request, Connection) throws(RewindError) -> Void)
        /// Signed in, with a role on the document named by `doc` that allows `Need`.
        case role(Need, @Sendable (Server, Request, Connection, Role) throws(RewindError) -> Void)
        /// As `role`, and the document open on this connection: undo works on what the terminal sees.
        case openDocument(Need, @Sendable (Server, Request, Connection, DocumentRuntime) throws(RewindError) -> Void)
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
        .init(name: "create_doc", rule: .session { s, r, c throws(RewindError) in try s.createDocument(r, c) }),
        .init(name: "open", rule: .role(.read) { s, r, c, _ throws(RewindError) in try s.open(r, c) }),
        // `close` only ever closes what the terminal has open.
        .init(name: "close", rule: .session { s, r, c throws(RewindError) in try s.close(r, c) }),
        .init(name: "submit", rule: .role(.edit) { s, r, c, _ throws(RewindError) in try s.submit(r, c) }),
        .init(name: "share", rule: .role(.share) { s, r, c, _ throws(RewindError) in try s.sharing.share(r, c) }),
        .init(name: "delete_doc", rule: .role(.own) { s, r, c, _ throws(RewindError) in try s.sharing.deleteDocument(r, c) }),
        // Undo (UndoHandlers.swift)
        .init(name: "begin_group", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.beginGroup(r, c, d) }),
        .init(name: "end_group", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.endGroup(r, c, d) }),
        .init(name: "set_action", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.setAction(r, c, d) }),
        .init(name: "undo", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.revert(r, c, d, kind: .undo) }),
        .init(name: "redo", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.revert(r, c, d, kind: .redo) }),
        .init(name: "clear_history", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.clearHistory(r, c, d) }),
        .init(name: "history", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.history(r, c, d) }),
        // Focus and presence (Chain/FocusRequests.swift)
        .init(name: "focus", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.focus(r, c, d) }),
        .init(name: "blur", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.blur(r, c, d) }),
        .init(name: "select", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.select(r, c, d) }),
        .init(name: "hit_test", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.focusRequests.hitTest(r, c, d) }),
        // The responder chain (Chain/ChainActions.swift): `perform` of an editing action checks `edit` itself.
        .init(name: "perform", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.perform(r, c, d) }),
        .init(name: "gesture", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.gesture(r, c, d) }),
        .init(name: "validate", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.validate(r, c, d) }),
        // Prompts (Prompts/): `respond` reaches its document through the prompt, whose handler checks the role again.
        .init(name: "respond", rule: .session { s, r, c throws(RewindError) in try s.respond(r, c) }),
        .init(name: "motion", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.motion(r, c, d) }),
        // Scrub (QuickActions/Scrub.swift)
        .init(name: "scrub", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.scrub(r, c, d) }),
        .init(name: "scrub_commit", rule: .openDocument(.edit) { s, r, c, d throws(RewindError) in try s.scrubCommit(r, c, d) }),
        .init(name: "scrub_cancel", rule: .openDocument(.read) { s, r, c, d throws(RewindError) in try s.scrubCancel(r, c, d) }),
        // Quick actions and previews (QuickActions/): pop and preview_action check the previewed document's role when they act.
        .init(name: "shortcut", rule: .session { s, r, c throws(RewindError) in try s.shortcut(r, c) }),
        .init(name: "peek", rule: .role(.read) { s, r, c, role throws(RewindError) in try s.peek(r, c, role: role) }),
        .init(name: "pop", rule: .session { s, r, c throws(RewindError) in try s.pop(r, c) }),
        .init(name: "preview_action", rule: .session { s, r, c throws(RewindError) in try s.previewAction(r, c) }),
    ]

    static let byName: [String: RequestType] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}
