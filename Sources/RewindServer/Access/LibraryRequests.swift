import Logging
import RewindCore
import RewindStore

/// A user's documents as a product shows them (the web editor's home page):
/// `list_docs`, `doc_info`, `rename`, and for the owner `list_deleted` and
/// `undelete_doc`. Reads answer from the database, not from what this
/// instance has cached, so every instance lists the same.
final class LibraryRequests {
    private let store: EventStore
    private let config: ServerConfig
    private let logger: Logger

    /// Longest title, in UTF-8 bytes (`create_doc`'s and `rename`'s).
    static let maxTitleBytes = 1024
    static let defaultPage = 50, maxPage = 200

    init(store: EventStore, config: ServerConfig, logger: Logger) {
        self.store = store
        self.config = config
        self.logger = logger
    }

    /// `list_docs {limit?, after?}` → `{docs: [...], next?}`: the documents the
    /// caller owns or has a role on, newest edit first; `next` (when there
    /// are more) is the `after` of the next page.
    func listDocuments(_ r: Request, _ c: Session) throws(RewindError) {
        let limit = try pageSize(r)
        let cursor = try r.optionalString("after", maxBytes: config.limits.maxNameBytes + 24).map { s throws(RewindError) in
            guard let cursor = Self.cursor(s) else { throw .badRequest("list_docs: `after` is not a `next` this server gave") }
            return cursor
        }
        store.listDocuments(user: c.user.id, limit: limit + 1, after: cursor) { result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case let .success(listed):
                let rows = listed.docs, page = rows.prefix(limit)
                let more = rows.count > limit ? page.last.map { JSON.string(Self.cursorString($0)) } : nil
                // Shards not reached: their documents are missing from this page (docs/scaling.md).
                let missed: JSON? = listed.missed.isEmpty ? nil : .array(listed.missed.map { .string($0) })
                c.reply(Message.reply(to: r, [("docs", .array(page.map(Self.json))), ("next", more), ("unreachable_shards", missed)]))
            }
        }
    }

    /// `doc_info {doc}` → `{doc, title, owner, role, version, created, members?}`
    /// (any role; `members`, everyone else with a role, for the owner only).
    func documentInfo(_ r: Request, _ c: Session, role: Role) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        store.documentInfo(doc) { result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case .success(nil): c.fail(r, .notFound("no document \"\(doc)\"", details: ["doc": .string(doc)]))
            case let .success(info?):
                let members: JSON? = role == .owner
                    ? .array(info.members.map { .obj([("user", .string($0.user)), ("role", .string($0.role))]) }) : nil
                c.reply(Message.reply(to: r, [
                    ("doc", .string(doc)), ("title", info.title.map { .string($0) } ?? .null), ("owner", .string(info.owner)),
                    ("role", .string(role.rawValue)), ("version", .int(info.head)), ("created", .string(info.created)), ("members", members),
                ]))
            }
        }
    }

    /// `rename {doc, title}` → `{doc, title}` (an editor or the owner; `null`
    /// or "" removes the title). Every terminal with the document open, on
    /// every instance, gets push `renamed` (schema/027's notice).
    func rename(_ r: Request, _ c: Session) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        guard let v = r.body["title"] else { throw .badRequest("rename: missing field `title` (a string, or null to remove it)") }
        var title: String?
        if !v.isNull {
            guard let s = v.stringValue else { throw .badRequest("rename: `title` must be a string or null") }
            guard s.utf8.count <= Self.maxTitleBytes else {
                throw RewindError(.tooLarge, "rename: `title` is longer than \(Self.maxTitleBytes) bytes")
            }
            guard !s.utf8.contains(0) else { throw .badRequest("rename: `title` may not hold U+0000") }
            title = s.isEmpty ? nil : s
        }
        let processing = c.processingGoesOn()  // what the terminal asks next sees the new title
        store.rename(doc, title: title) { [logger] result in
            defer { processing.end() }
            switch result {
            case let .failure(e): c.fail(r, e)
            case .success(false): c.fail(r, .notFound("no document \"\(doc)\"", details: ["doc": .string(doc)]))
            case .success(true):
                logger.info("document renamed", metadata: ["doc": "\(doc)", "by": "\(c.label)"])
                c.reply(Message.reply(to: r, [("doc", .string(doc)), ("title", title.map { .string($0) } ?? .null)]))
            }
        }
    }

    /// `list_deleted {limit?}` → `{docs: [{doc, title, deleted, restorable_until}]}`:
    /// what the caller deleted and may still bring back, most recent first.
    func listDeleted(_ r: Request, _ c: Session) throws(RewindError) {
        let limit = try pageSize(r)
        store.deletedDocuments(owner: c.user.id, retentionDays: config.deletedRetentionDays, limit: limit) { result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case let .success(rows):
                let docs = rows.map { d in
                    JSON.obj([("doc", .string(d.doc)), ("title", d.title.map { .string($0) } ?? .null),
                              ("deleted", .string(d.deleted)), ("restorable_until", .string(d.restorableUntil))])
                }
                c.reply(Message.reply(to: r, [("docs", .array(docs))]))
            }
        }
    }

    /// `undelete_doc {doc}` → `{doc, deleted: false}`: the owner brings back
    /// a document deleted within `--deleted-retention-days` and not purged.
    /// Anyone else's document, deleted or not, is `not_found`.
    func undeleteDocument(_ r: Request, _ c: Session) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        let processing = c.processingGoesOn()  // an `open` sent right after finds it
        store.undelete(doc, owner: c.user.id, retentionDays: config.deletedRetentionDays) { [logger, config] result in
            defer { processing.end() }
            switch result {
            case let .failure(e): c.fail(r, e)
            case let .success(outcome):
                switch outcome {
                case .undeleted:
                    logger.info("document undeleted", metadata: ["doc": "\(doc)", "by": "\(c.label)"])
                    c.reply(Message.reply(to: r, [("doc", .string(doc)), ("deleted", false)]))
                case .notFound: c.fail(r, .notFound("no document \"\(doc)\"", details: ["doc": .string(doc)]))
                case .notDeleted: c.fail(r, .conflict("\"\(doc)\" is not deleted"))
                case .purged: c.fail(r, .conflict("\"\(doc)\" was purged: its content is erased for good"))
                case .pastRetention: c.fail(r, .conflict("\"\(doc)\" was deleted more than \(config.deletedRetentionDays) days ago"))
                }
            }
        }
    }

    private func pageSize(_ r: Request) throws(RewindError) -> Int {
        guard let n = try r.optionalInt("limit") else { return Self.defaultPage }
        guard (1...Int64(Self.maxPage)).contains(n) else { throw .badRequest("\(r.type): `limit` must be 1 to \(Self.maxPage)") }
        return Int(n)
    }

    static func json(_ d: EventStore.ListedDocument) -> JSON {
        .obj([("doc", .string(d.doc)), ("title", d.title.map { .string($0) } ?? .null), ("role", .string(d.role)),
              ("owner", .string(d.owner)), ("edited", .string(d.edited)),
              ("last_editor", d.lastEditor.map { .obj([("user", .string($0.user)), ("name", .string($0.name))]) } ?? .null)])
    }

    /// A page's end as `after` takes it: "<microseconds>:<doc>" (ids may hold any character; the number comes first).
    static func cursorString(_ d: EventStore.ListedDocument) -> String { "\(d.editedMicros):\(d.doc)" }

    static func cursor(_ s: String) -> EventStore.ListCursor? {
        guard let colon = s.firstIndex(of: ":"), let micros = Int64(s[..<colon]) else { return nil }
        let doc = String(s[s.index(after: colon)...])
        guard !doc.isEmpty, !doc.utf8.contains(0) else { return nil }
        return .init(editedMicros: micros, doc: doc)
    }
}
