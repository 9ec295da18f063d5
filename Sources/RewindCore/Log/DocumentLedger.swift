/// The deterministic state machine of one document: its state at the head,
/// the recent ops that late transactions are rebased through, and which
/// transaction ids it has seen.
///
/// The live server and every replay run through `append` and `replay` here, so
/// the state they rebuild cannot differ: replay applies exactly the ops that
/// live serving computed and stored.
public struct DocumentLedger: Sendable {
    public let doc: String
    public internal(set) var document = Document()
    public private(set) var version: Int64 = 0
    public let limits: Limits
    /// False after a restore from a snapshot: transactions older than the
    /// tail it read are known only to the log.
    public internal(set) var knowsAllTransactions = true
    /// Names of the users who wrote events, for messages ("what alice did since").
    public internal(set) var userNames: [Int64: String] = [:]
    /// Every user's undo and redo stacks: a projection of the same entries.
    public internal(set) var history: UndoHistory
    /// The hash of the newest entry (events and marks): the next one chains to it.
    public internal(set) var headHash: [UInt8] = []
    /// Entries in the log so far, events and marks: the next one is `seq + 1`.
    public var seq: Int64 { version + history.markCount }
    /// False for a ledger that only checks the log (`rewind admin verify`):
    /// events are not projected into undo stacks, which nothing it checks
    /// reads (marks still count, so their order is checked). Its applying
    /// thread was the busier of verify's two: 10.1 → 7.7 s at 1,000,000 events.
    public var projectsUndoHistory = true
    /// Seals the ops and inverse of the events this ledger appends, and keys
    /// their fingerprints (nil: plain text, as in tests and old logs).
    public var cipher: DocumentCipher?

    /// Ops of the newest versions, oldest first; `recentStart` is the version of the first.
    private(set) var recent: [[Op]] = []
    /// Their inverses, to find the state a late transaction was made on (`checkAtBase`).
    private(set) var recentInverse: [[Op]] = []
    private(set) var recentStart: Int64 = 1
    private var transactions: [TxKey: TxRecord] = [:]

    public struct TxKey: Hashable, Sendable {
        public let user: Int64
        public let tx: Key
    }

    public struct TxRecord: Sendable, Equatable {
        public let version: Int64
        public let digest: String
    }

    /// A transaction from a terminal, not yet placed in the log.
    public struct Submission: Sendable {
        public var tx: String
        public var base: Int64
        public var ops: [Op]
        public var action: String?
        public var userID: Int64
        public var userName: String
        public var client: String
        /// Chosen by the shell: identity and clock are not the core's to make up.
        public var eventID: String
        public var time: Int64
        /// The explicit group the terminal holds open, if any: the edit joins it.
        public var openGroup: String?
        /// The name the terminal gave its open group so far: recorded with the
        /// edit (when it has none of its own) so that a crash cannot lose it.
        public var groupAction: String?
        /// The terminal's selection before the ops.
        public var selection: Selection?
        /// The selection came with the request (not from the terminal's open
        /// group): it must name an existing node and lie inside its text at
        /// `base`. A group's selection, given earlier, is clamped instead.
        public var checksSelection = true
        /// Text edits by one terminal in one node this close together (ms) coalesce into one "Typing" group.
        public var typingWindow: Int64 = 500
        /// The server instance serving the terminal (recorded with edits in an explicit group).
        public var instance: Int64?
        /// `edit`, or `restore` (Restore Version: its own undo group, never coalesced).
        public var kind: EventKind = .edit

        public init(tx: String, base: Int64, ops: [Op], action: String?, userID: Int64, userName: String,
                    client: String, eventID: String, time: Int64, openGroup: String? = nil, selection: Selection? = nil)
        {
            self.tx = tx; self.base = base; self.ops = ops; self.action = action; self.userID = userID
            self.userName = userName; self.client = client; self.eventID = eventID; self.time = time
            self.openGroup = openGroup; self.selection = selection
        }

        /// Ops and action: what makes a resubmission "the same transaction".
        public var digest: String { Fingerprint.hex(digestInput) }

        /// What the fingerprint covers: the ops and the action.
        public var digestInput: [UInt8] { Self.digestInput(opsJSON: Op.encodedList(ops), action: action) }

        /// `{"ops":…,"action":…}` around the ops already encoded (an append encodes them once, for this and the log).
        static func digestInput(opsJSON: [UInt8], action: String?) -> [UInt8] {
            var w = JSONWriter(capacity: opsJSON.count + 32 + (action?.utf8.count ?? 0))
            w.write(raw: "{\"ops\":" as StaticString)
            w.write(raw: opsJSON)
            if let action {
                w.write(raw: ",\"action\":" as StaticString)
                w.write(string: action)
            }
            w.write(raw: "}" as StaticString)
            return w.bytes
        }
    }

    public enum AppendResult: Sendable {
        /// A new event, already applied to this ledger.
        case appended(Event)
        /// The same transaction was already recorded at this version.
        case duplicate(version: Int64)
    }

    public init(doc: String, limits: Limits = Limits(), undoLevels: Int = 100) {
        self.doc = doc
        self.limits = limits
        history = UndoHistory(levels: undoLevels)
    }

    public func transaction(user: Int64, tx: String) -> TxRecord? { transactions[TxKey(user: user, tx: Key(tx))] }

    /// Forgets the transaction ids of events older than the rebase window,
    /// once twice that many are held (every id was kept for ever: ~200 bytes
    /// an event, in every long-lived ledger). A retry of one that old is
    /// answered by the log, as for a ledger restored from a snapshot: with
    /// `knowsAllTransactions` false, a submit too far behind to rebase is
    /// looked up there, an undo or redo retried by its `tx` is looked up as
    /// it is appended, and any other repeat is refused by the log's unique
    /// index and then looked up (`DocumentRuntime.revertsByTx`).
    public mutating func forgetOldTransactions() {
        let window = limits.maxRebaseDistance
        guard window < Int.max / 2, transactions.count > 2 * window else { return }
        let oldest = version - Int64(window)
        transactions = transactions.filter { $0.value.version > oldest }
        knowsAllTransactions = false
    }

    /// A transaction of this ledger's document that the log holds and this
    /// ledger had forgotten (the store found it): known again, so a retry is
    /// answered as any repeat is. Forgotten again with the rest (`forgetOldTransactions`).
    public mutating func remember(user: Int64, tx: String, version: Int64, digest: String) {
        transactions[TxKey(user: user, tx: Key(tx))] = TxRecord(version: version, digest: digest)
    }

    /// A copy holding only what `snapshotJSON` reads: the state, the head,
    /// the names and the undo stacks and groups — not the transaction ids,
    /// the recent ops, or the history's per-event log and touch index, which
    /// a snapshot does not store. A plain copy of the ledger, kept by a
    /// background encoder, shares those buffers, so the next commit on the
    /// live ledger copied them whole (every transaction id of the document,
    /// on the event loop, at every snapshot): commits slowed as the history
    /// grew. For encoding only: it cannot rebase or recognise a retry.
    public var forSnapshot: DocumentLedger {
        var copy = DocumentLedger(doc: doc, limits: limits, undoLevels: history.levels)
        copy.document = document
        copy.version = version
        copy.headHash = headHash
        copy.userNames = userNames
        copy.history = history.withoutLog
        copy.knowsAllTransactions = false
        copy.cipher = cipher
        return copy
    }

    /// A user erased (`rewind admin user erase`): the name messages show from now on.
    public mutating func rename(user: Int64, to name: String) {
        if userNames[user] != nil { userNames[user] = name }
    }

    /// What the log records as `s`'s fingerprint (`tx_digest`): keyed with the document's key when it has one.
    public func fingerprint(_ s: Submission) -> String { fingerprint(digestInput: s.digestInput) }

    /// Keyed with the document's key when it has one (sealed documents), else the plain digest.
    func fingerprint(digestInput: [UInt8]) -> String { cipher?.fingerprint(digestInput) ?? Fingerprint.hex(digestInput) }

    /// Rebases `s` onto the head, applies it atomically and returns the event to append.
    public mutating func append(_ s: Submission) throws(RewindError) -> AppendResult {
        let opsJSON = Op.encodedList(s.ops)
        let digestInput = Submission.digestInput(opsJSON: opsJSON, action: s.action)
        let digest = fingerprint(digestInput: digestInput)
        if let seen = transaction(user: s.userID, tx: s.tx) {
            guard seen.digest == digest else {
                throw .conflict("transaction \"\(s.tx)\" was already used with different content",
                                details: ["version": .int(seen.version)])
            }
            return .duplicate(version: seen.version)
        }
        guard s.base <= version else {
            throw RewindError(.version, "base \(s.base) is beyond the head \(version)", details: ["head": .int(version)])
        }
        guard s.base >= 0, version - s.base <= Int64(limits.maxRebaseDistance), s.base + 1 >= recentStart || s.base == version else {
            throw RewindError(.version, "base \(s.base) is too far behind the head \(version) (at most \(limits.maxRebaseDistance) versions); open the document again",
                              details: ["head": .int(version), "limit": .int(Int64(limits.maxRebaseDistance))])
        }
        try checkAtBase(s.ops, selection: s.checksSelection ? s.selection : nil, base: s.base)
        var ops = s.ops
        // Only text ops move under concurrent edits (ops and the selection): the
        // others of the events since the base are not gathered (on a busy
        // document, copying them all cost more than the rest of the append).
        var concurrent: [Op] = []
        if s.base < version && (s.selection != nil || s.ops.contains(where: \.isText)) {
            for ops in recent[Int(s.base + 1 - recentStart)...] { for op in ops where op.isText { concurrent.append(op) } }
        }
        if !concurrent.isEmpty { ops = TextTransform.rebase(ops, through: concurrent) }
        let selection = try placeSelection(s, through: concurrent)
        // A restore is the document's, not a text view's: its group is on the document-level stack.
        let scope = s.kind == .restore ? nil : undoScope(of: ops)
        let applied: Document.Applied
        do {
            applied = try document.apply(ops, limits: limits)
        } catch let e where e.code == .notFound && s.base < version {
            // Gone since `base` is a concurrent change; never there is the client's mistake.
            guard let i = e.details?.objectValue?["op"]?.intValue, i >= 0, i < ops.count,
                  !existedAtBase(nodesMissing(from: ops[Int(i)]), base: s.base) else {
                throw RewindError(.conflict, "\(e.message) (changed by a concurrent transaction since version \(s.base))", details: e.details)
            }
            throw RewindError(.notFound, "\(e.message) (nor at version \(s.base))", details: e.details)
        }
        let group = s.kind == .restore ? s.eventID : s.openGroup ?? coalescingGroup(s, ops: applied.ops, scope: scope) ?? s.eventID
        let meta = EventMeta(scope: scope, open: s.openGroup != nil, selection: selection,
                             instance: s.openGroup != nil ? s.instance : nil)
        let event = Event(doc: doc, version: version + 1, id: s.eventID, tx: s.tx, txDigest: digest, userID: s.userID,
                          userName: s.userName, client: s.client, group: group, kind: s.kind == .restore ? .restore : .edit, action: s.action ?? s.groupAction,
                          base: s.base, ops: applied.ops, inverse: applied.inverse, refers: nil, time: s.time, meta: meta)
        record(event)
        var sealed = consume event  // its last use: moved, not copied
        // Applying seldom changes the ops (only a rebase does): then their text is the one already made.
        seal(&sealed, plainOps: applied.ops == s.ops ? String(decoding: opsJSON, as: UTF8.self) : nil)
        return .appended(sealed)
    }

    /// The submit's selection moved through the text ops committed since its
    /// base, checked against (or, for a group's, clamped to) the node's text.
    private func placeSelection(_ s: Submission, through concurrent: [Op]) throws(RewindError) -> Selection? {
        guard var sel = s.selection else { return nil }
        for op in concurrent where op.node == sel.node && op.isText { sel = sel.mapped(through: op, gravity: .left) }
        guard let n = document[sel.node] else {
            guard s.checksSelection else { return nil }
            throw .notFound("selection: no node \"\(sel.node)\"", details: ["node": .string(sel.node.string)])
        }
        if sel.end > n.text.count {
            guard s.checksSelection else { return Selection(node: sel.node, start: min(sel.start, n.text.count), end: n.text.count) }
            throw .badRequest("selection: need 0 <= start <= end <= \(n.text.count) (the text length of \"\(sel.node)\" at base)",
                              details: ["length": .int(Int64(n.text.count))])
        }
        return sel
    }

    /// The innermost node with `undoScope` that contains every node the ops
    /// touch (a scope node contains itself), or nil for the document.
    public func undoScope(of ops: [Op]) -> Key? {
        var anchors: [Key] = []
        for op in ops {
            switch op {
            case let .create(_, parent, _): anchors.append(parent)
            case let .move(n, parent, _): anchors += [n, parent]
            default: anchors.append(op.node)
            }
        }
        guard let first = anchors.first else { return nil }
        var cur: Key? = first
        while let c = cur, let n = document[c] {
            if n.undoScope && anchors.allSatisfy({ document.isInSubtree($0, of: c) }) { return c }
            cur = n.parent
        }
        return nil
    }

    /// The "Typing" group this edit extends, if the rules of SPEC section 4 allow:
    /// text-only in the same node by the same terminal, no other action name,
    /// the group still the newest of the user's stack, within the window.
    private func coalescingGroup(_ s: Submission, ops: [Op], scope: Key?) -> String? {
        guard s.action == nil || s.action == Titles.ServerAction.typing,
              let node = UndoHistory.typingNode(ops),
              let top = history.topUndo(user: s.userID, scope: scope),
              top.client == s.client, top.typingNode == node, !top.isUndone, top.effect == top.edits,
              top.givenAction == nil || top.givenAction == Titles.ServerAction.typing,
              s.time >= top.lastTime, s.time - top.lastTime <= s.typingWindow
        else { return nil }
        return top.key.id
    }

    /// Applies an event from the log. Versions must follow on without a gap.
    public mutating func replay(_ e: Event, verify: Bool = true) throws(RewindError) {
        guard e.version == version + 1, e.seq == 0 || e.seq == seq + 1 else {
            throw RewindError(.internal, "log of \(doc) jumps from version \(version) (entry \(seq)) to \(e.version) (entry \(e.seq))")
        }
        // A stored hash taken as it is without wrapping the event in a `LogEntry` (a copy of each of its strings).
        let hash = !verify && !e.hash.isEmpty ? e.hash : try checkedHash(.event(e), verify: verify)
        do { try document.replay(e.ops) } catch {
            throw RewindError(.internal, "event \(e.version) of \(doc) does not apply: \(error.message)")
        }
        record(e)
        headHash = hash
    }

    /// The hash an entry from the log must carry after the current head. An
    /// entry without one (built in memory, not read from the log) is given it.
    private func checkedHash(_ entry: LogEntry, verify: Bool) throws(RewindError) -> [UInt8] {
        let stored = entry.hash
        guard verify || stored.isEmpty else { return stored }
        if stored.isEmpty { return Self.sealedRow(entry, doc: doc, seq: seq + 1).chained(after: headHash) }
        guard entry.chainHash(doc: doc, after: headHash) == stored else { throw Self.chainBreak(doc: doc, entry.row(doc: doc)) }
        return stored
    }

    /// An entry read from the log whose hash is not the one it must have after `previous`.
    public static func checkChain(_ entry: LogEntry, doc: String, after previous: [UInt8]) throws(RewindError) {
        guard entry.chainHash(doc: doc, after: previous) == entry.hash else { throw chainBreak(doc: doc, entry.row(doc: doc)) }
    }

    /// The error of `row`, read from the log, not chaining to the entry before it.
    public static func chainBreak(doc: String, _ row: LogRow) -> RewindError {
        RewindError(.internal, "the hash chain of \(doc) breaks at entry \(row.seq) (version \(row.version)): the log was changed after it was written",
                    details: ["doc": .string(doc), "seq": .int(row.seq), "version": .int(row.version)])
    }

    /// The stored form of an entry built in memory.
    static func sealedRow(_ entry: LogEntry, doc: String, seq: Int64) -> LogRow {
        switch entry {
        case var .event(e):
            e.seq = seq
            if e.stored == Event.StoredText() { e.stored = Event.StoredText(e) }
            return e.row
        case var .mark(m):
            m.storedMeta = m.storedMeta ?? m.metaJSON.map { JSONWriter.string($0) }
            return m.row(doc: doc)
        }
    }

    /// Gives an entry just recorded its position, stored text (sealed at that
    /// position) and hash, and makes it the head.
    mutating func seal(_ e: inout Event, plainOps: String? = nil) {
        e.seq = seq
        e.stored = Event.StoredText(ops: e.ops, inverse: e.inverse, meta: e.meta, cipher: cipher, plainOps: plainOps, seq: e.seq, id: e.id)
        e.hash = e.chainHash(after: headHash)
        headHash = e.hash
    }

    mutating func seal(_ m: inout GroupMark) {
        m.storedMeta = m.metaJSON.map { JSONWriter.string($0) }
        m.hash = m.row(doc: doc).chained(after: headHash)
        headHash = m.hash
    }

    /// Applies a group mark from the log. It must be the next mark and sit at the head.
    public mutating func replay(_ m: GroupMark, verify: Bool = true) throws(RewindError) {
        guard m.n == history.markCount + 1, m.afterVersion == version else {
            throw RewindError(.internal, "mark \(m.n) of \(doc) (after version \(m.afterVersion)) is out of order at version \(version), mark \(history.markCount)")
        }
        let hash = try checkedHash(.mark(m), verify: verify)
        history.record(m)
        headHash = hash
    }

    /// `check` sees the document as it was before `e` (its last event),
    /// reached by applying `e`'s inverse in place; then `e`'s ops are applied
    /// again. No copy of the document is made (verify checks every inverse
    /// this way). If either step throws, the document is left as it was
    /// then: the ledger is not to be used further.
    public mutating func withStateBefore<T>(_ e: Event, _ check: (Document) -> T) throws(RewindError) -> T {
        try document.replay(e.inverse)
        let result = check(document)
        try document.replay(e.ops)
        return result
    }

    /// Applies the next entry of the log. `verify: false` for entries this
    /// ledger's own twin sealed (the committed ledger taking the speculative
    /// one's entries): their hash was just computed, not read.
    public mutating func replay(_ entry: LogEntry, verify: Bool = true) throws(RewindError) {
        switch entry {
        case let .event(e): try replay(e, verify: verify)
        case let .mark(m): try replay(m, verify: verify)
        }
    }

    /// After a snapshot: the head, and the newest events for rebasing and retries.
    mutating func restoreRecent(_ events: [Event], head: Int64) {
        version = head
        let keep = events.suffix(limits.maxRebaseDistance)
        recent = keep.map(\.ops)
        recentInverse = keep.map(\.inverse)
        recentStart = keep.first?.version ?? head + 1
        for e in keep { transactions[TxKey(user: e.userID, tx: Key(e.tx))] = TxRecord(version: e.version, digest: e.txDigest) }
    }

    mutating func record(_ e: Event) {
        version = e.version
        recent.append(e.ops)
        recentInverse.append(e.inverse)
        if recent.count > 2 * limits.maxRebaseDistance {
            let drop = recent.count - limits.maxRebaseDistance
            recent.removeFirst(drop)
            recentInverse.removeFirst(drop)
            recentStart += Int64(drop)
        }
        transactions[TxKey(user: e.userID, tx: Key(e.tx))] = TxRecord(version: e.version, digest: e.txDigest)
        if projectsUndoHistory { history.record(e) }
        if userNames[e.userID] != e.userName { userNames[e.userID] = e.userName }  // looked up, written only when it changed
    }
}
