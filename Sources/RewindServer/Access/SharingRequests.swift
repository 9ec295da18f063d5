import Logging
import RewindCore
import RewindLoop
import RewindStore

/// `share` and `delete_doc`, the owner's requests. Owns, per user, the
/// `share`s that named nobody (a probe for user names).
final class SharingRequests {
    private let store: EventStore
    private let access: AccessControl
    private let config: ServerConfig
    private let logger: Logger
    private let clock: () -> UInt64
    private var unknownNameShares: [Int64: TokenBucket] = [:]
    private var now: UInt64 { clock() }

    init(store: EventStore, access: AccessControl, config: ServerConfig, logger: Logger, clock: @escaping () -> UInt64) {
        self.store = store
        self.access = access
        self.config = config
        self.logger = logger
        self.clock = clock
    }

    /// `share {doc, user, role}` (the owner only: checked before it runs).
    func share(_ r: Request, _ c: Session) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        let name = try r.string("user", maxBytes: 64)
        guard let v = r.body["role"] else { throw .badRequest("share: missing field `role` (\"editor\", \"viewer\" or null)") }
        var role: Role?
        if !v.isNull {
            guard let s = v.stringValue, let rl = Role(rawValue: s), rl != .owner else {
                throw .badRequest("share: `role` must be \"editor\", \"viewer\" or null")
            }
            role = rl
        }
        let by = c.user.id
        if let wait = unknownNameShares[by]?.wait(now: now) {
            throw RewindError(.rateLimited, "share: too many names that are no user; try again later",
                              details: ["retry_after_ms": .int(Int64(wait))])
        }
        store.share(doc: doc, user: name, role: role, by: by) { [unowned self] result in
            switch result {
            case let .failure(e):
                if e.code == .notFound, e.details?.objectValue?["user"] != nil { self.unknownNameShared(name, by: c) }
                c.fail(r, e)
            case let .success(shared):
                self.access.changed(doc, user: shared.user, role: shared.role)
                c.reply(Message.reply(r.id, [("doc", .string(doc)), ("user", .string(name)), ("role", role.map { .string($0.rawValue) } ?? .null)]))
            }
        }
    }

    /// `delete_doc {doc}` (the owner only: checked before it runs). The mark
    /// is committed first; then every terminal that has the document open,
    /// here and (through the `rewind_access` notice) on every instance, is
    /// told `closed` `deleted`.
    func deleteDocument(_ r: Request, _ c: Session) throws(RewindError) {
        let doc = try r.string("doc", maxBytes: config.limits.maxNameBytes)
        store.deleteDocument(doc, owner: c.user.id) { [unowned self] result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case .success(false): c.fail(r, .notFound("no document \"\(doc)\"", details: ["doc": .string(doc)]))
            case .success(true):
                self.logger.info("document deleted", metadata: ["doc": "\(doc)", "by": "\(c.label)"])
                self.access.deleted(doc)
                c.reply(Message.reply(r.id, [("doc", .string(doc)), ("deleted", true)]))
            }
        }
    }

    /// Names that are no user, shared with (PROTOCOL.md: an owner learns
    /// whether a name is a user from `share`): logged, and limited per user
    /// (`shareProbeBurst`, refilled at `shareProbesPerMinute`), so that user
    /// names cannot be listed by trying a dictionary.
    private func unknownNameShared(_ name: String, by c: Session) {
        let user = c.user
        if unknownNameShares.count > 10_000 { unknownNameShares = unknownNameShares.filter { var b = $0.value; return !b.isFull(now: now) } }
        var bucket = unknownNameShares[user.id]
            ?? TokenBucket(rate: config.shareProbesPerMinute / 60, burst: config.shareProbeBurst, now: now)
        _ = bucket.take(now: now)
        unknownNameShares[user.id] = bucket
        logger.warning("share named no user (a probe for names?)", metadata: ["conn": "\(c.label)", "name": "\(name)"])
    }
}
