import Logging
import RewindCore
import RewindLoop
import RewindStore

/// Who has which role on which document, as this server knows it.
///
/// Roles are read from the database when first needed and kept while the
/// `rewind_access` notices keep them fresh: any change (a `share` on any
/// instance, `rewind admin grant`, an operator's SQL) notifies every
/// instance, which reloads that document's roles and applies them at once
/// (`Server.accessChanged`). While the notice connection is down nothing new
/// is cached — every check asks the database — and once it is back every
/// cached document is reloaded, since notices were missed meanwhile.
final class AccessControl {
    private let store: EventStore
    private let logger: Logger
    /// Whether `rewind_access` notices are being heard (else nothing cached is trusted).
    private let isListening: () -> Bool
    /// Whether this instance serves `doc` (loaded), and to at least one terminal (open).
    private let served: (_ doc: String) -> (loaded: Bool, open: Bool)

    /// What a change of roles asks of the rest of the server, carried out in one place (`Server`).
    enum Effect {
        /// `doc`'s roles are now these (nil: deleted): its terminals lose or keep it.
        case accessChanged(doc: String, DocumentAccess?)
        /// Quick actions listing `doc` are read again (a user who lost it must not see it offered).
        case quickActionsMayHaveChanged(doc: String)
        /// Every token of `user` was revoked.
        case tokensRevoked(user: Int64)
        /// An operator denied signed tokens (`rewind admin token deny`): a
        /// subject's (of `issuer`, or any when nil), or one by its `jti`.
        case tokensDenied(issuer: String?, subject: String?, tokenID: String?)
        /// `user` was erased (`rewind admin user erase`).
        case userErased(user: Int64, pseudonym: String)
        /// `doc`'s title changed (schema/027's notice).
        case renamed(doc: String)
    }
    var onEffect: (Effect) -> Void = { _ in }
    /// The role a session's signed token grants on a document (`rewind.docs`;
    /// nil: none), given by the server (`SignedSessions`).
    var granted: (_ session: Int, _ doc: String) -> Role? = { _, _ in nil }
    /// Runs `body` no sooner than `notFoundFloorMs` after `since` (monotonic
    /// nanoseconds): a loop timer, given by the server.
    var notBefore: (_ since: UInt64, _ body: @escaping () -> Void) -> Void = { _, body in body() }
    /// No `not_found` for want of a role is answered sooner than this after
    /// the request (`withRole`). The same work either way was not enough:
    /// an existing document, unshared, still took ~5 µs longer than a missing
    /// one (its row fetched, its roles decoded and kept), and with the median
    /// of 25 probes per id a threshold told 58–63 % of ids apart (chance:
    /// 54–56 %; issue 44). Padded to a floor, both wait for the same timer.
    static let notFoundFloorMs: UInt64 = 5
    private var known: [String: DocumentAccess] = [:]
    private var loading: [String: [(Result<DocumentAccess?, RewindError>) -> Void]] = [:]
    /// Notices so far: a load that saw one arrive meanwhile may have read the old roles.
    private var notices = 0
    /// Documents whose roles are kept at most; past it, those no terminal has open are forgotten.
    let capacity = 50_000

    init(store: EventStore, logger: Logger, isListening: @escaping () -> Bool,
         served: @escaping (_ doc: String) -> (loaded: Bool, open: Bool)) {
        self.store = store
        self.logger = logger
        self.isListening = isListening
        self.served = served
    }

    private var isFresh: Bool { isListening() }

    /// Roles of `doc` if known and kept fresh (nil: ask `load`).
    func cached(_ doc: String) -> DocumentAccess? { isFresh ? known[doc] : nil }

    /// The role of session `c` on `doc` whose roles are `a` (nil: no such
    /// document): the stronger of its user's stored role and the one its
    /// token grants. A grant never makes a document exist: without one,
    /// it is `not_found` as for anyone.
    func role(of c: Session, on doc: String, in a: DocumentAccess?) -> Role? {
        guard let a else { return nil }
        return Role.stronger(a.role(of: c.user.id), granted(c.id, doc))
    }

    /// The role of `c` on `doc` as last known, for what the server pushes
    /// on its own (prompt state, validate); requests are checked with `withRole`.
    func lastKnownRole(_ doc: String, of c: Session) -> Role? { role(of: c, on: doc, in: known[doc]) }

    /// Runs `done` with the roles of `doc` (nil: no such document), from the
    /// cache or the database (`fresh`: from the database, whatever is cached).
    func load(_ doc: String, fresh: Bool = false, _ done: @escaping (Result<DocumentAccess?, RewindError>) -> Void) {
        if !fresh, let a = cached(doc) { return done(.success(a)) }
        if loading[doc] != nil { loading[doc]!.append(done); return }
        loading[doc] = [done]
        let seen = notices
        store.access(doc: doc) { [self] result in
            // Remembered even while not listening (for `lastKnownRole`); used
            // for checks only once notices keep it fresh (`cached`). A notice
            // that came meanwhile may be about this very document: read it again.
            if case let .success(a?) = result {
                self.remember(doc, a)
                if seen != self.notices { self.noticed(doc: doc) }
            }
            let waiting = self.loading.removeValue(forKey: doc) ?? []
            for w in waiting { w(result) }
        }
    }

    private func remember(_ doc: String, _ a: DocumentAccess) {
        if known.count >= capacity && known[doc] == nil {
            known = known.filter { served($0.key).open }
        }
        known[doc] = a
    }

    /// This server changed a role itself (`share`, after the commit): apply it
    /// now, before the notice comes back, so the next request sees it.
    func changed(_ doc: String, user: Int64, role: Role?) {
        guard var a = known[doc] else { return noticed(doc: doc) }
        a.members[user] = role
        known[doc] = a
        onEffect(.accessChanged(doc: doc, a))
    }

    /// This server deleted `doc` (after the commit): nobody has a role on it
    /// from now on; its terminals here are told at once.
    func deleted(_ doc: String) {
        known[doc] = nil
        onEffect(.quickActionsMayHaveChanged(doc: doc))
        onEffect(.accessChanged(doc: doc, nil))
    }

    /// A `rewind_access` notice: `doc:<id>`, `user:<id>`, `erased:…`, `denied:…` or `title:<id>`.
    func notice(_ payload: String) {
        notices += 1
        if payload.hasPrefix("doc:") {
            let doc = String(payload.dropFirst(4))
            onEffect(.quickActionsMayHaveChanged(doc: doc))  // a document a user lost is no longer offered
            noticed(doc: doc)
        } else if payload.hasPrefix("user:"), let user = Int64(payload.dropFirst(5)) {
            onEffect(.tokensRevoked(user: user))
        } else if payload.hasPrefix("title:") {
            let doc = String(payload.dropFirst(6))
            onEffect(.quickActionsMayHaveChanged(doc: doc))  // quick actions show titles
            onEffect(.renamed(doc: doc))
        } else if payload.hasPrefix("erased:") {
            // `erased:<id>:<pseudonym>` (rewind admin user erase)
            let parts = payload.dropFirst(7).split(separator: ":", maxSplits: 1)
            guard parts.count == 2, let user = Int64(parts[0]) else { return }
            onEffect(.userErased(user: user, pseudonym: String(parts[1])))
        } else if payload.hasPrefix("denied:"), let o = try? JSONParser.parse(String(payload.dropFirst(7))).objectValue {
            // `denied:{"issuer":…,"subject":…,"token_id":…}` (schema/019)
            let subject = o["subject"]?.stringValue, tokenID = o["token_id"]?.stringValue
            guard subject != nil || tokenID != nil else { return }
            onEffect(.tokensDenied(issuer: o["issuer"]?.stringValue, subject: subject, tokenID: tokenID))
        }
    }

    private func noticed(doc: String) {
        guard known[doc] != nil || served(doc).loaded else { return }
        store.access(doc: doc) { [self] result in
            switch result {
            case let .success(a):
                self.known[doc] = a
                self.onEffect(.accessChanged(doc: doc, a))
            case let .failure(e):
                // Not knowing is safer than knowing wrong: the next check asks again.
                self.known[doc] = nil
                // A document moving between shards has its roles copied: nothing to say about it.
                let moving = e.details?.objectValue?["moving"] == .bool(true)
                self.logger.log(level: moving ? .debug : .warning, "could not reload roles", metadata: ["doc": "\(doc)", "error": "\(e)"])
            }
        }
    }

    /// Listening (again): notices may have been missed; reload what is cached.
    func resync() {
        notices += 1
        // Documents being served keep their roles until the reload answers
        // (their terminals' requests are not refused meanwhile); the rest are forgotten.
        known = known.filter { served($0.key).loaded }
        for doc in known.keys { noticed(doc: doc) }
    }
}

/// Requests checked against roles (`Server.dispatch`, and requests that act on another document).
extension AccessControl {
    /// Runs `body` with the caller's role on `doc` if it allows `need`; else
    /// `r` fails (`not_found` without a role, `forbidden` with too little).
    /// When the roles are not known yet, the request's processing goes on
    /// until they are read (the connection's next frames wait for it).
    func withRole(on doc: String, _ need: Need, for r: Request, _ c: Session,
                  _ body: @escaping (Role) throws(RewindError) -> Void) throws(RewindError)
    {
        if let a = cached(doc) {
            let role = role(of: c, on: doc, in: a)
            // No role: the answer is `not_found`, as for a document that does not
            // exist — and it takes as long. A missing document is never cached, so
            // its answer waits for the database; answered from the cache, a
            // document that exists answered four times sooner, and a stranger
            // could tell the two apart by the clock. Both wait for the same query.
            if role != nil {
                try RequestAccess.check(role, need, doc: doc, request: r.type)
                return try body(role!)
            }
        }
        let processing = c.processingGoesOn()
        let started = monotonicNanos()
        load(doc, fresh: true) { [self] result in
            guard !c.isClosed else { return processing.end() }
            do throws(RewindError) {
                let role = self.role(of: c, on: doc, in: try result.get())
                try RequestAccess.check(role, need, doc: doc, request: r.type)
                try body(role!)
                processing.end()
            } catch where error.code == .notFound {
                // Answered when a document that exists would be: not by the clock.
                notBefore(started) {
                    if !c.isClosed { c.fail(r, error) }
                    processing.end()
                }
            } catch {
                c.fail(r, error)
                processing.end()
            }
        }
    }
}
