import RewindCore
import RewindLoop
import RewindStore

/// The requests of documents themselves: `create_doc`, `open` (state or
/// catch-up, paged), `submit`; and what other requests build on — whether a
/// document is open on a terminal, running a request in the document's
/// order once it is (`whenOpen`), a terminal's edit as the ledger takes it.
final class DocumentRequests {
    /// `c` has just opened `d` (its `open` answered): stored prompts for it there are shown again (the server's).
    var onOpened: (_ c: Session, _ d: DocumentRuntime) -> Void = { _, _ in }
    private let config: ServerConfig
    private let store: EventStore
    private let documents: Documents
    private let presence: PresenceRelay
    private let promptStates: PromptStates
    /// This instance's id, carried by each event (`Event.instance`).
    private let instance: Int64
    /// The group each terminal holds open per document: an edit joins it (`submission`).
    let openGroups: OpenGroups
    /// Why `c` may not create document `doc` (nil: it may): a signed token's
    /// grants limit it (`Server.creationRefusal`, set by `Server.wire`).
    var creationRefusal: (_ doc: String?, _ c: Session) -> RewindError? = { _, _ in nil }

    init(config: ServerConfig, store: EventStore, documents: Documents, presence: PresenceRelay, promptStates: PromptStates,
         openGroups: OpenGroups, instance: Int64) {
        self.config = config
        self.openGroups = openGroups
        self.store = store
        self.documents = documents
        self.presence = presence
        self.promptStates = promptStates
        self.instance = instance
    }

    func documentID(_ r: Request) throws(RewindError) -> String {
        try r.string("doc", maxBytes: config.limits.maxNameBytes)
    }

    /// `create_doc {doc?, title?}`. A chosen id that is taken is `conflict`
    /// (so chosen ids reveal what exists); without `doc` the server picks an
    /// unguessable one (`doc-` and a random UUID) and answers it.
    func createDocument(_ r: Request, _ c: Session) throws(RewindError) {
        let chosen = try r.optionalString("doc", maxBytes: config.limits.maxNameBytes)
        let title = try r.optionalString("title", maxBytes: LibraryRequests.maxTitleBytes)
        if let refusal = creationRefusal(chosen, c) { throw refusal }
        let doc = chosen ?? "doc-" + UUID.random()
        store.createDocument(doc, title: title, owner: c.user.id) { result in
            switch result {
            case let .failure(e): c.fail(r, e)
            case .success(false): c.fail(r, .conflict("document \"\(doc)\" already exists"))
            case .success(true): c.reply(Message.reply(to: r, [("doc", .string(doc)), ("version", 0)]))
            }
        }
    }

    /// `then` runs once the terminal is subscribed (not on an error, nor on a page that is not the last), before its next frame.
    func open(_ r: Request, _ c: Session, then: ((DocumentRuntime) -> Void)? = nil) throws(RewindError) {
        let doc = try documentID(r)
        let since = try r.optionalInt("since")
        if let since, since < 0 { throw .badRequest("open: `since` must be 0 or more") }
        if !c.openDocuments.contains(doc) && c.openDocuments.count >= config.maxOpenDocuments {
            throw RewindError(.rateLimited, "at most \(config.maxOpenDocuments) documents open per connection")
        }
        let d = documents.runtime(doc)
        d.opensInFlight += 1  // keeps the runtime from being dropped as idle meanwhile
        // Until the terminal is subscribed (or refused): what it sent behind `open` sees the document open.
        let processing = c.processingGoesOn()
        d.whenCurrent { [unowned self] error in
            var handedOff = false
            defer { if !handedOff { self.finishOpening(c, d, processing, then) } }
            guard !c.isClosed else { return }
            if let error { return c.fail(r, error) }
            let head = d.committed.version
            guard let since else {
                self.replyState(r, c, doc: doc, version: head, d.committed.document)
                return self.subscribe(c, d)
            }
            guard since <= head else {
                return c.fail(r, RewindError(.version, "since \(since) is beyond the head \(head)", details: ["head": .int(head)]))
            }
            if let events = d.recentEvents(after: since) {
                let page = self.page(events)
                guard page.count == events.count else {
                    return c.reply(Message.reply(to: r, [("doc", .string(doc)), ("version", .int(since + Int64(page.count))), ("more", true)],
                                                 events: page))
                }
                c.reply(Message.reply(to: r, [("doc", .string(doc)), ("version", .int(head))], events: events))
                return self.subscribe(c, d)
            }
            handedOff = true
            self.openFromLog(r, c, d, since: since) { self.finishOpening(c, d, processing, then) }
        }
    }

    /// An `open` finished (either way): the connection's next frame may run.
    private func finishOpening(_ c: Session, _ d: DocumentRuntime, _ processing: Processing, _ then: ((DocumentRuntime) -> Void)?) {
        if !c.isClosed, isOpen(d, on: c) {
            then?(d)
            onOpened(c, d)
        }
        d.opensInFlight -= 1
        documents.mayBeIdle(d)
        processing.end()  // last: the next frame sees all of the above
    }

    /// `c` has this runtime's document open (subscribed to this very runtime, not an evicted one).
    func isOpen(_ d: DocumentRuntime, on c: Session) -> Bool {
        c.openDocuments.contains(d.id) && documents[d.id] === d && d.subscribers[c.id] === c
    }

    /// Runs `body` once the runtime is ready (at once when it is), with an
    /// error if the document is not open on `c` (a `close` or a lost role
    /// since). The request's processing goes on until `body` has run: the
    /// connection's next frame sees what it did.
    func whenOpen(_ c: Session, _ d: DocumentRuntime, _ body: @escaping (RewindError?) -> Void) {
        // The usual case: the document is ready and nothing waits for it, so there is nothing to hold the connection for.
        guard !d.runsAtOnce else { return body(openError(c, d, nil)) }
        let processing = c.processingGoesOn()
        d.whenReady { [unowned self] error in
            defer { processing.end() }
            body(self.openError(c, d, error))
        }
    }

    /// Why a request that waited for `d` cannot act for `c` now (nil: it can).
    private func openError(_ c: Session, _ d: DocumentRuntime, _ error: RewindError?) -> RewindError? {
        if c.isClosed { return .badRequest("connection closed") }
        if let error { return error }
        return isOpen(d, on: c) ? nil : .badRequest("document \"\(d.id)\" is not open on this connection (open it first, and wait for all its pages)")
    }

    /// Catch-up older than what is held in memory: one page from the log; the
    /// terminal asks again with `since` while `more` is true.
    private func openFromLog(_ r: Request, _ c: Session, _ d: DocumentRuntime, since: Int64, done: @escaping () -> Void) {
        d.checkedEvents(after: since, limit: config.catchUpPage) { [unowned self] result in
            guard !c.isClosed else { return done() }
            switch result {
            case let .failure(e):
                c.fail(r, e)
                done()
            case let .success(events):
                let all = events.map(\.wireBytes)
                var page = self.page(all)
                let last = since + Int64(page.count)
                d.whenReady { error in
                    defer { done() }
                    guard !c.isClosed else { return }
                    if let error { return c.fail(r, error) }
                    // The log's page and what memory holds after it, if they fit in one page: the last page, which subscribes.
                    if page.count == all.count, let rest = d.recentEvents(after: last),
                       (page + rest).reduce(0, { $0 + $1.count }) <= self.config.maxPageBytes || page.count + rest.count <= 1
                    {
                        page += rest
                        c.reply(Message.reply(to: r, [("doc", .string(d.id)), ("version", .int(d.committed.version))], events: page))
                        self.subscribe(c, d)
                    } else {
                        c.reply(Message.reply(to: r, [("doc", .string(d.id)), ("version", .int(last)), ("more", true)], events: page))
                    }
                }
            }
        }
    }

    /// The first events of `events` that fit in one reply page (`--max-page-bytes`; at least one).
    private func page(_ events: [[UInt8]]) -> [[UInt8]] {
        var bytes = 0
        for (i, e) in events.enumerated() {
            bytes += e.count
            if bytes > config.maxPageBytes && i > 0 { return Array(events[..<i]) }
        }
        return events
    }

    /// `{doc, version, state}`: encoded at once when small, else streamed
    /// node by node as the terminal reads (`StateReply`).
    private func replyState(_ r: Request, _ c: Session, doc: String, version: Int64, _ document: Document) {
        reply(r, c, [("doc", .string(doc)), ("version", .int(version))], state: document)
    }

    /// A reply of `fields` then `state` (last): encoded at once when small,
    /// else streamed node by node as the terminal reads (`StateReply`).
    func reply(_ r: Request, _ c: Session, _ fields: [(String, JSON?)], state document: Document) {
        let estimate = StateReply.estimate(document)
        let state = StateReply(head: Message.reply(to: r, fields), document: document, estimate: estimate)
        guard estimate > Connection.sliceBytes else { return c.reply(state.next(max: .max)) }
        c.reply(streaming: state)
    }

    private func subscribe(_ c: Session, _ d: DocumentRuntime) {
        c.openDocuments.insert(d.id)
        d.subscribe(c)
        presence.pushOthers(d, to: c)  // also on a repeated open: a client resyncing gets the cursors again
        promptStates.push(d, to: c, force: true)
    }

    func submit(_ r: Request, _ c: Session) throws(RewindError) {
        let limits = config.limits
        let doc = try documentID(r)
        let tx = try r.string("tx", maxBytes: limits.maxNameBytes)
        let base = try r.int("base")
        guard base >= 0 else { throw .badRequest("submit: `base` must be 0 or more") }
        let ops: [Op]
        if let read = r.ops { ops = read } else { ops = try Op.parseList(r.body["ops"], limits: limits) }  // read while decoding, when compact
        guard !ops.isEmpty else { throw .badRequest("submit: `ops` is empty; a transaction must change something") }
        let action = try r.optionalString("action", maxBytes: limits.maxNameBytes)
        let selection = try Selection.parse(r.body["selection"])
        let submission = self.submission(c, doc: doc, tx: tx, base: base, ops: ops, action: action, selection: selection)
        let reply = c.committing { result in
            switch result {
            case let .success(.version(version)): c.reply(Message.versionReply(r.id, version: version))
            case .success: c.fail(r, RewindError(.internal, "submit answered with something other than a version"))
            case let .failure(e): c.fail(r, e)
            }
        }
        documents.runtime(doc).run(.init(command: .submit(submission), replies: [reply]))
    }

    /// `c`'s edit of `doc` as the ledger takes it: joined to the group the
    /// terminal holds open (whose name and first selection it carries), with
    /// the server's typing window. Used by `submit` and by chain actions.
    func submission(_ c: Session, doc: String, tx: String, base: Int64, ops: [Op], action: String?,
                    selection: Selection?) -> DocumentLedger.Submission
    {
        let user = c.user
        let group = openGroups[doc, c.id]
        var s = DocumentLedger.Submission(
            tx: tx, base: base, ops: ops, action: action, userID: user.id, userName: user.name,
            client: c.client, eventID: UUID.random(), time: wallClockMillis(),
            openGroup: group?.id, selection: selection ?? group?.selectionBefore)
        s.checksSelection = selection != nil
        s.typingWindow = config.typingWindowMs
        s.groupAction = group?.action
        s.instance = instance
        return s
    }
}

enum UUID {
    /// A random (version 4) UUID in its usual text form, written into the
    /// string's storage (one per event: four arrays and two `getrandom`
    /// calls made it ~3,300 instructions).
    static func random() -> String {
        var bytes: (UInt64, UInt64) = (0, 0)
        return withUnsafeMutableBytes(of: &bytes) { b in
            RandomBytes.fill(b)
            b[6] = b[6] & 0x0F | 0x40
            b[8] = b[8] & 0x3F | 0x80
            return String(unsafeUninitializedCapacity: 36) { out in
                var at = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 { out[at] = UInt8(ascii: "-"); at += 1 }
                    out[at] = Hex.digit(b[i] >> 4)
                    out[at + 1] = Hex.digit(b[i] & 0xF)
                    at += 2
                }
                return at
            }
        }
    }
}
