import Logging
import RewindCore
import RewindLoop
import RewindStore

/// Each connected user's quick actions (`Shortcuts`), kept here while the
/// user has a terminal on this instance and pushed to all of them when the
/// list changes (PROTOCOL.md "Quick actions and previews").
///
/// A list is read once when a user's first terminal says hello (one indexed
/// query, `EventStore.recentDocuments`) and then only when it may have
/// changed: `rewind_editors` notices ("<user> <doc>", one per user and
/// document per append, from any instance) tell who edited what, and
/// `Shortcuts.mayChange` says whether that can move the user's list — a user
/// typing into the document already at the top of their list costs nothing.
/// Lists that may have changed are read again at the end of the loop turn,
/// one query per user; an access change or a missed notice (the listening
/// connection came back) makes them all be read again.
final class QuickActions {
    private let store: EventStore
    private let loop: EventLoop
    private let logger: Logger
    let staticItems: [ShortcutItem]

    private struct Listed {
        var items: [ShortcutItem]
        var terminals = Terminals()
        /// Reads of this user's list under way; an answer older than the newest is dropped.
        var reads = 0
    }

    private var users: [Int64: Listed] = [:]
    /// Who has each document among their dynamic items: a notice about a
    /// document looks at those users only, not at everyone connected.
    private var listedBy: [String: Set<Int64>] = [:]
    private var stale: Set<Int64> = []

    init(store: EventStore, loop: EventLoop, logger: Logger, staticItems: [ShortcutItem]) {
        self.store = store
        self.loop = loop
        self.logger = logger
        self.staticItems = staticItems
    }

    /// `c` said hello: `done` gets its user's list, read now (one indexed
    /// query): a list kept for the user's other terminals may not have heard
    /// the newest notices yet.
    func join(_ c: Session, _ done: @escaping ([ShortcutItem]) -> Void) {
        let user = c.user.id
        if users[user] == nil { users[user] = Listed(items: Shortcuts.list(static: staticItems, recent: [])) }
        users[user]!.terminals.insert(c)
        read(user, answering: c) { [self] read in done(read ?? self.items(of: user)) }
    }

    func left(_ c: Session) {
        let user = c.user.id
        guard users[user] != nil else { return }
        users[user]!.terminals.remove(c)
        if users[user]!.terminals.isEmpty {
            index(user, from: users[user]!.items, to: [])
            users[user] = nil
            stale.remove(user)
        }
    }

    func items(of user: Int64) -> [ShortcutItem] { users[user]?.items ?? Shortcuts.list(static: staticItems, recent: []) }

    // MARK: What may change a list

    /// A `rewind_editors` notice: "<user> <doc>" (the doc last: it may hold spaces).
    func notice(_ payload: String) {
        let parts = payload.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let editor = Int64(parts[0]) else {
            return logger.warning("malformed rewind_editors notice", metadata: ["payload": "\(payload.prefix(200))"])
        }
        edited(doc: String(parts[1]), by: editor)
    }

    /// The editor's own list, and the lists that show `doc`, may have moved.
    func edited(doc: String, by editor: Int64) {
        for user in (listedBy[doc] ?? []).union([editor]) {
            if let listed = users[user], Shortcuts.mayChange(listed.items, user: user, doc: doc, editor: editor) { stale.insert(user) }
        }
    }

    /// Roles on `doc` changed: a user who lost it must not see it offered.
    func accessChanged(doc: String) { stale.formUnion(listedBy[doc] ?? []) }

    private func index(_ user: Int64, from old: [ShortcutItem], to new: [ShortcutItem]) {
        for d in old.filter(\.isDynamic).compactMap(\.document) {
            listedBy[d]?.remove(user)
            if listedBy[d]?.isEmpty == true { listedBy[d] = nil }
        }
        for d in new.filter(\.isDynamic).compactMap(\.document) { listedBy[d, default: []].insert(user) }
    }

    /// Notices may have been missed: every list is read again.
    func resync() { stale.formUnion(users.keys) }

    // MARK: Reading and pushing

    /// Lists marked stale are read again (a phase of the loop turn's end: `EndOfTurnPhase.quickActions`).
    func refreshStale() {
        guard !stale.isEmpty else { return }
        let users = stale
        stale = []
        for user in users where self.users[user] != nil { read(user) }
    }

    /// Reads `user`'s list; `then` gets what this read found (nil: it failed).
    /// Only the newest read updates the kept list, and pushes when it changed
    /// (not to `joining`, whose hello reply carries it).
    private func read(_ user: Int64, answering joining: Session? = nil, then: @escaping ([ShortcutItem]?) -> Void = { _ in }) {
        users[user]!.reads += 1
        let ticket = users[user]!.reads
        store.recentDocuments(user: user, limit: Shortcuts.recentNeeded(static: staticItems)) { [self] result in
            switch result {
            case let .failure(e):
                // The list stays as it was; the next change or resync reads it again.
                logger.warning("quick actions not read", metadata: ["user": "\(user)", "error": "\(e)"])
                then(nil)
            case let .success(recent):
                let items = Shortcuts.list(static: staticItems, recent: recent)
                if users[user] != nil, users[user]!.reads == ticket, items != users[user]!.items {
                    let before = users[user]!.terminals
                    index(user, from: users[user]!.items, to: items)
                    users[user]!.items = items
                    push(items, to: before.all.filter { $0 !== joining })
                }
                then(items)
            }
        }
    }

    /// `shortcuts` to `terminals`, each in its locale.
    private func push(_ items: [ShortcutItem], to terminals: [Session]) {
        for c in terminals {
            c.push(SharedBytes(Push.shortcuts(items.map { $0.json(locale: c.locale) })))
        }
    }
}

/// One user's terminals on this server. Most users have one, held without a
/// table: a one-entry dictionary was ~100 bytes a user
/// (`scripts/bench/idle --users`), kept for as long as the user is connected.
private struct Terminals {
    private var first: Session?
    /// The others, by terminal id (empty, and unallocated, for a user with one).
    private var others: [Int: Session] = [:]

    var isEmpty: Bool { first == nil }
    var all: [Session] { first.map { [$0] + others.values } ?? [] }

    mutating func insert(_ s: Session) {
        if first == nil || first === s { first = s } else { others[s.id] = s }
    }

    /// `first` stays filled while any is left (`isEmpty` reads only it).
    mutating func remove(_ s: Session) {
        guard first === s else { others[s.id] = nil; return }
        first = nil
        if let next = others.first {
            others[next.key] = nil
            first = next.value
        }
    }
}
