import RewindCore
import RewindStore

/// Peek, pop and preview actions (`PastStates`).
extension PastStates {
    func peek(_ r: Request, _ c: Session, role: Role) throws(RewindError) {
        let doc = try documentRequests.documentID(r)
        let node = try r.optionalString("node", maxBytes: config.limits.maxNameBytes).map { Key($0) }
        let asked = try r.optionalInt("version")
        if let asked, asked < 0 { throw .badRequest("peek: `version` must be 0 or more") }
        inOrder(c) { [unowned self] done in  // the connection's next requests wait for the preview
            self.headVersion(of: doc) { result in
                let head: Int64
                switch result {
                case let .failure(e): c.fail(r, e); return done()
                case let .success(h): head = h
                }
                let version = asked ?? head
                guard version <= head else {
                    c.fail(r, RewindError(.version, "peek: version \(version) is beyond the head \(head)", details: ["head": .int(head)]))
                    return done()
                }
                self.document(doc, at: version, head: head) { result in
                    defer { done() }
                    guard !c.isClosed else { return }
                    do throws(RewindError) {
                        let state = try result.get()
                        let subtree = try node.map { n throws(RewindError) -> JSON in
                            guard let json = state.subtreeJSON(n) else {
                                throw .notFound("peek: no node \"\(n)\" at version \(version)", details: ["node": .string(n.string)])
                            }
                            return json
                        }
                        let actions = PreviewMenu.actions(role: role, version: version, head: head, locale: c.locale)
                        let p = self.shelves[c.id, default: PreviewShelf()].add(doc: doc, node: node, version: version, actions: actions)
                        let fields: [(String, JSON?)] = [("preview", .string(p.id)), ("doc", .string(doc)), ("version", .int(version)),
                                                         ("head", .int(head)), ("node", node.map { .string($0.string) }),
                                                         ("actions", .array(actions.map(\.json)))]
                        // The whole document as `open` sends it (streamed when large); a subtree at once.
                        if let subtree { return c.reply(Message.reply(r.id, fields + [("state", subtree)])) }
                        self.documentRequests.reply(r, c, fields, state: state)
                    } catch { c.fail(r, error) }
                }
            }
        }
    }

    /// `pop {preview}` → as `open` of the head; then the peeked node (if it is
    /// still there and focusable) becomes the terminal's first responder.
    func pop(_ r: Request, _ c: Session) throws(RewindError) {
        let p = try preview(r, c)
        shelves[c.id]?.end(p.id)
        try open(p, answering: r, c)
    }

    private func open(_ p: Preview, answering r: Request, _ c: Session) throws(RewindError) {
        var open = Request(id: r.id, type: "open", body: JSONObject([("doc", .string(p.doc))]))
        open.replyTag = r.replyTag
        try access.withRole(on: p.doc, .read, for: open, c) { [unowned self] _ throws(RewindError) in
            try self.documentRequests.open(open, c) { d in
                guard let node = p.node, let n = d.current.document[node], n.focusable else { return }
                self.presence.set(d, c, Presence(node: node))
            }
        }
    }

    /// `preview_action {preview, action, args?}` → the action's result.
    func previewAction(_ r: Request, _ c: Session) throws(RewindError) {
        let p = try preview(r, c)
        let id = try r.string("action", maxBytes: 64)
        guard let action = PreviewMenu.find(id, in: p.actions) else {
            let offered = p.actions.flatMap { $0.actions.isEmpty ? [$0.id] : $0.actions.map(\.id) }
            throw .badRequest("preview_action: \"\(id)\" is not an action of preview \(p.id) (it offers \(offered.joined(separator: ", ")))",
                              details: ["actions": .array(offered.map { .string($0) })])
        }
        let args = r.body["args"]?.objectValue ?? JSONObject()
        if let a = r.body["args"], !a.isNull, a.objectValue == nil { throw .badRequest("preview_action: `args` must be an object") }
        switch action.id {
        case PreviewMenu.open:
            shelves[c.id]?.end(p.id)
            try open(p, answering: r, c)
        case PreviewMenu.restore:
            let tx = try args["tx"].flatMap { v throws(RewindError) -> String? in
                guard let s = v.stringValue, !s.isEmpty, s.utf8.count <= config.limits.maxNameBytes else {
                    throw .badRequest("preview_action: `args.tx` must be a string of 1 to \(config.limits.maxNameBytes) bytes")
                }
                return s
            } ?? UUID.random()
            shelves[c.id]?.end(p.id)
            try access.withRole(on: p.doc, .edit, for: r, c) { [unowned self] _ throws(RewindError) in self.restore(p, tx: tx, answering: r, c) }
        default:  // share_editor, share_viewer: as `share` (the owner only)
            guard let user = args["user"]?.stringValue, !user.isEmpty else {
                throw .badRequest("preview_action: \(action.id) needs `args.user` (the name to share with)")
            }
            shelves[c.id]?.end(p.id)
            let role = action.id == PreviewMenu.shareEditor ? Role.editor : .viewer
            let share = Request(id: r.id, type: "share", body: JSONObject([("doc", .string(p.doc)), ("user", .string(user)),
                                                                           ("role", .string(role.rawValue))]))
            try access.withRole(on: p.doc, .share, for: share, c) { [unowned self] _ throws(RewindError) in try self.sharing.share(share, c) }
        }
    }

    private func preview(_ r: Request, _ c: Session) throws(RewindError) -> Preview {
        let id = try r.string("preview", maxBytes: 64)
        guard let p = shelves[c.id]?.find(id) else {
            throw .notFound("\(r.type): no preview \"\(id)\" on this connection (it ended, or expired: a connection holds the newest \(PreviewShelf.capacity))",
                            details: ["preview": .string(id)])
        }
        return p
    }

    /// "Restore This Version": one `restore` event turning the head into the
    /// previewed version, as `scrub_commit` does.
    private func restore(_ p: Preview, tx: String, answering r: Request, _ c: Session) {
        let d = documents.runtime(p.doc)
        let processing = c.processingGoesOn()
        d.whenCurrent { [unowned self] error in
            if let error { c.fail(r, error); return processing.end() }
            let base = d.committed.version, from = d.committed.document
            self.document(p.doc, at: p.version, head: base) { result in
                defer { processing.end() }
                guard !c.isClosed else { return }
                switch result {
                case let .failure(e): c.fail(r, e)
                case let .success(to):
                    self.commitRestore(of: d, base: base, from: from, to: to, restoring: p.version, tx: tx, answering: r, c)
                }
            }
        }
    }

    // MARK: Past states

    /// The head of `doc`: this instance's when it has the document loaded (it follows the log), else the log's.
    func headVersion(of doc: String, _ done: @escaping (Result<Int64, RewindError>) -> Void) {
        if let d = documents[doc], d.isReady { return done(.success(d.committed.version)) }
        store.head(doc: doc) { result in
            done(result.flatMap { h in h.map { .success($0.version) } ?? .failure(.notFound("no document \"\(doc)\"")) })
        }
    }

    /// `doc` at `version` (not past `head`): from memory when this instance
    /// holds the head and the events back to it, else the newest snapshot at
    /// or below it plus the log's events after the snapshot.
    func document(_ doc: String, at version: Int64, head: Int64, _ done: @escaping (Result<Document, RewindError>) -> Void) {
        if let d = documents[doc], d.isReady, d.committed.version == head,
           let state = Self.walkBack(d.committed, to: version)
        {
            return done(.success(state))
        }
        // From the log: the newest snapshot at or below `version`, then the
        // events after it, read by a runtime of the document so that each is
        // checked against the hash chain (`DocumentRuntime+History.swift`).
        let d = documents.runtime(doc)
        d.opensInFlight += 1  // keeps the runtime while it reads
        let finish: (Result<Document, RewindError>) -> Void = { [unowned self] result in
            d.opensInFlight -= 1
            self.documents.mayBeIdle(d)
            done(result)
        }
        d.whenReady { [unowned self] error in
            if let error { return finish(.failure(error)) }
            self.store.snapshotDocument(doc: doc, atOrBelow: version) { result in
                switch result {
                case let .failure(e): finish(.failure(e))
                case let .success(start):
                    let from = start ?? (version: 0, document: Document())
                    Self.roll(d, from.document, from: from.version, to: version, finish)
                }
            }
        }
    }

    /// `document` (the state at `from`) moved forward to `to` through the log's events, checked, a page at a time.
    private static func roll(_ d: DocumentRuntime, _ document: Document, from: Int64, to: Int64,
                             _ done: @escaping (Result<Document, RewindError>) -> Void) {
        guard to > from else { return done(.success(document)) }
        d.checkedEvents(after: from, to: to, limit: DocumentRuntime.walkPage) { result in
            switch result {
            case let .failure(e): done(.failure(e))
            case let .success(events):
                var state = document
                for e in events {
                    do throws(RewindError) { _ = try state.apply(e.ops, limits: .unbounded) } catch {
                        return done(.failure(RewindError(.internal, "event \(e.version) of \(d.id) does not apply on replay: \(error.message)")))
                    }
                }
                guard let last = events.last?.version, last > from else {
                    return done(.failure(RewindError(.internal, "the log of \(d.id) ends before version \(to)")))
                }
                roll(d, state, from: last, to: to, done)
            }
        }
    }

    /// The ledger's document moved back to `version` through the inverses it holds (nil: it does not hold them all).
    private static func walkBack(_ ledger: DocumentLedger, to version: Int64) -> Document? {
        guard ledger.version - version <= 1_000 else { return nil }
        var d = ledger.document
        var v = ledger.version
        while v > version {
            guard let logged = ledger.history.logged(v), (try? d.apply(logged.inverse, limits: .unbounded)) != nil else { return nil }
            v -= 1
        }
        return d
    }
}
