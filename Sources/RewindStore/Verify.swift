import RewindCore

/// `rewind admin verify`: everything the log promises, checked from the rows
/// alone, by the same core code the server runs.
///
/// For each document, entry by entry: positions follow on with no gap and
/// versions count the events; each entry's hash chains to the one before
/// (`LogRow.chained`); each event applies, and applying its inverse gives
/// back the state before it; the document's head names the last entry and
/// its hash; every snapshot matches its digest, the chain at its entry, and
/// the replayed state there. With anchors (head hashes exported earlier by
/// `rewind admin anchors` and kept elsewhere), each anchored entry must still
/// be in the log with the same hash: history rewritten and re-sealed, or
/// newest entries removed and the head rolled back, is caught.
public enum Verify {
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var doc: String
        public var seq: Int64?
        public var version: Int64?
        public var what: String
        /// The document is not in the database at all (a typo, most likely), rather than broken.
        public var isMissing: Bool { seq == nil && what == Self.missing }
        static let missing = "no such document"
        public var description: String {
            "\(doc)" + (seq.map { " entry \($0)" } ?? "") + (version.map { " (version \($0))" } ?? "") + ": \(what)"
        }
    }

    public struct Anchor: Sendable {
        public var doc: String
        public var seq: Int64
        public var hash: [UInt8]

        public init(doc: String, seq: Int64, hash: [UInt8]) { self.doc = doc; self.seq = seq; self.hash = hash }

        public var json: JSON { .obj([("doc", .string(doc)), ("seq", .int(seq)), ("hash", .string(Hex.string(hash)))]) }

        public static func parse(_ line: String) -> Anchor? {
            guard let o = try? JSONParser.parse(line, maxDepth: 4).objectValue, let doc = o["doc"]?.stringValue,
                  let seq = o["seq"]?.intValue, let hash = o["hash"]?.stringValue.flatMap({ Hex.bytes($0) }), hash.count == 32
            else { return nil }
            return Anchor(doc: doc, seq: seq, hash: hash)
        }
    }

    /// The heads of `docs` (all documents when empty), to keep somewhere the database's superuser cannot reach.
    public static func anchors(_ docs: [String], db: Database) throws(RewindError) -> [Anchor] {
        var rows: [[String?]] = []
        if docs.isEmpty {
            rows = try db.query("SELECT id, seq, head_hash FROM documents WHERE seq > 0 AND moved_to IS NULL ORDER BY id").values
        } else {
            for d in docs {
                let r = try db.query("SELECT id, seq, head_hash FROM documents WHERE id = $1", [d])
                guard r.count == 1 else { throw .notFound("no document \"\(d)\"") }
                rows += r.values
            }
        }
        return rows.compactMap { r in
            guard let doc = r[0], let seq = r[1].flatMap({ Int64($0) }), let hash = r[2].flatMap(LogRows.bytea) else { return nil }
            return Anchor(doc: doc, seq: seq, hash: hash)
        }
    }

    /// Every document's id, in order.
    public static func documents(db: Database) throws(RewindError) -> [String] {
        try db.query("SELECT id FROM documents ORDER BY id").values.compactMap { $0[0] }
    }

    /// What was checked of a document, when nothing was wrong, and how many
    /// of its events are sealed in the unbound form of releases before
    /// (`DocumentCipher`: bound to the document only, so one moved within it
    /// still opens; `rewind admin migrate` with the key binds them). Not
    /// counted for a purged document: its content opens for no one.
    public enum Checked: Sendable, Equatable {
        /// Everything: the chain, every event and inverse, snapshots, anchors.
        case whole(unbound: Int64)
        /// The chain, positions, versions, head and anchors only: the content
        /// is sealed and was purged (`purged` holds when) or no key was given.
        case chainOnly(purged: String?, unbound: Int64)
    }

    /// Checks one document; the first problem found, or what was checked
    /// when all holds. With `keys` the content is checked too (a purged
    /// document's chain only). `progress(entries done, entries in all)`.
    public static func document(_ doc: String, anchors: [Anchor] = [], db: Database, keys: DocumentKeys?,
                                progress: ((Int64, Int64) -> Void)? = nil) throws(RewindError) -> Result<Checked, Problem>
    {
        // A copy left by a move (schema/028) has a byte put before its head's hash: the fence.
        let head = try db.query("""
            SELECT seq, head, CASE WHEN moved_to IS NULL THEN head_hash ELSE substring(head_hash FROM 2) END, purged_at IS NOT NULL
            FROM documents WHERE id = $1
            """, [doc])
        guard head.count == 1, let headSeq = head.int(0, 0), let headVersion = head.int(0, 1),
              let headHash = head[0, 2].flatMap(LogRows.bytea)
        else { return .failure(Problem(doc: doc, what: Problem.missing)) }
        let anchored = Dictionary(anchors.filter { $0.doc == doc }.map { ($0.seq, $0.hash) }, uniquingKeysWith: { a, _ in a })
        var unbound: Int64 = 0
        if head[0, 3] == "t" || keys == nil {
            let purged = head[0, 3] == "t" ? try DocumentKeys.purgedAt(doc, db: db) : nil
            if let problem = try chain(doc, head: (headSeq, headVersion, headHash), anchored: anchored, db: db, unbound: &unbound,
                                       progress: progress) {
                return .failure(problem)
            }
            return .success(.chainOnly(purged: purged, unbound: purged == nil ? unbound : 0))
        }
        let cipher = try DocumentKeys.cipher(for: doc, keys: keys, db: db)
        if let problem = try whole(doc, head: (headSeq, headVersion, headHash), anchored: anchored, cipher: cipher, db: db,
                                   unbound: &unbound, progress: progress) {
            return .failure(problem)
        }
        return .success(.whole(unbound: unbound))
    }

    /// An event's stored ops sealed in the unbound form (`Checked`).
    static func isUnbound(ops: String?) -> Bool {
        guard let ops, DocumentCipher.isSealed(ops) else { return false }
        return !DocumentCipher.isBound(ops)
    }

    /// The chain alone, from the rows as stored (no content opened).
    static func chain(_ doc: String, head: (seq: Int64, version: Int64, hash: [UInt8]), anchored: [Int64: [UInt8]], db: Database,
                      unbound: inout Int64, progress: ((Int64, Int64) -> Void)?) throws(RewindError) -> Problem? {
        var anchored = anchored
        var seq: Int64 = 0, version: Int64 = 0, previous: [UInt8] = []
        while true {
            let rows = try LogRows.decodeStored(doc: doc, try db.query(LogRows.stored(doc: doc, afterSeq: seq, toSeq: .max, limit: 5_000)))
            if rows.isEmpty { break }
            for r in rows {
                guard r.seq == seq + 1 else { return Problem(doc: doc, seq: seq + 1, what: "missing: the log jumps from entry \(seq) to \(r.seq)") }
                guard r.version == version + (r.entry == "event" ? 1 : 0) else {
                    return Problem(doc: doc, seq: r.seq, version: r.version, what: "its version does not count the events before it")
                }
                guard r.chained(after: previous) == r.hash else {
                    return Problem(doc: doc, seq: r.seq, version: r.version,
                                   what: "the hash chain of \(doc) breaks at entry \(r.seq) (version \(r.version)): the log was changed after it was written")
                }
                (seq, version, previous) = (r.seq, r.version, r.hash)
                if isUnbound(ops: r.ops) { unbound += 1 }
                if let expected = anchored.removeValue(forKey: seq), expected != previous {
                    return Problem(doc: doc, seq: seq, what: "differs from the anchor taken earlier (history was rewritten)")
                }
            }
            progress?(seq, head.seq)
        }
        guard seq == head.seq, version == head.version, previous == head.hash else {
            return Problem(doc: doc, seq: seq, what: "the document's head says entry \(head.seq) (version \(head.version)); the log ends at entry \(seq) (version \(version))"
                               + (seq == head.seq ? " with another hash" : ""))
        }
        if let (gone, _) = anchored.min(by: { $0.key < $1.key }) {
            return Problem(doc: doc, seq: gone, what: "anchored entry is gone: the log ends at entry \(seq) (newest entries removed?)")
        }
        return nil
    }

    /// Everything, content included (opened with `cipher`).
    static func whole(_ doc: String, head: (seq: Int64, version: Int64, hash: [UInt8]), anchored: [Int64: [UInt8]], cipher: DocumentCipher?,
                      db: Database, unbound: inout Int64, progress: ((Int64, Int64) -> Void)?) throws(RewindError) -> Problem? {
        let (headSeq, headVersion, headHash) = head
        var anchored = anchored
        // Their states are read one at a time when the replay reaches them, on a connection of
        // their own (the page reader holds `db`): all of them at once were most of verify's memory.
        let snapshotRows = try db.query("SELECT seq, hash, digest FROM snapshots WHERE doc = $1 ORDER BY seq", [doc])
        var snapshots: [(seq: Int64, hash: [UInt8], digest: [UInt8])] = snapshotRows.values.compactMap { r in
            guard let s = r[0].flatMap({ Int64($0) }), let h = r[1].flatMap(LogRows.bytea), let d = r[2].flatMap(LogRows.bytea)
            else { return nil }
            return (s, h, d)
        }
        guard snapshots.count == snapshotRows.count else { return Problem(doc: doc, what: "a snapshot row is malformed") }
        let states = snapshots.isEmpty ? nil : try db.another()
        // Unbounded but for the rebase window: the recent ops it keeps for rebasing and the
        // transaction ids are a live server's needs, and kept whole they were most of verify's memory.
        var limits = Limits.unbounded
        limits.maxRebaseDistance = Limits().maxRebaseDistance
        var ledger = DocumentLedger(doc: doc, limits: limits)
        ledger.projectsUndoHistory = false
        // Pages are read and decoded on a second thread while the ones before
        // them are checked here (to the log's real end, past the head if it goes on).
        // One reading thread: this one (applying, checking every inverse) is the busier, and a
        // second reader only took cores from it (1,000,000 events: 7.9 s with one, 8.4 with two).
        let reader = try LogPageReader(doc: doc, db: db, toSeq: .max, cipher: cipher, endsAtEmptyPage: true, workers: 1)
        defer { reader.finish() }
        var entries: [LogEntry] = []
        while true {
            do { entries = try reader.next(done: entries) } catch {
                // A page fails as a whole: the entry it failed at, when the error names it (sealed text that does not open there).
                let at = error.details?.objectValue
                return Problem(doc: doc, seq: at?["seq"]?.intValue ?? ledger.seq + 1, version: at?["version"]?.intValue, what: error.message)
            }
            if entries.isEmpty { break }
            for entry in entries {
                let seq = entry.seq
                guard seq == ledger.seq + 1 else {
                    return Problem(doc: doc, seq: ledger.seq + 1, what: "missing: the log jumps from entry \(ledger.seq) to \(seq)")
                }
                // Only what the inverse check compares: the touched nodes as they were (a whole copy of
                // the document per event cost as much as the replay itself).
                var before: Before?
                if case let .event(e) = entry {
                    before = Before(e, ledger.document)
                    if isUnbound(ops: e.stored.ops) { unbound += 1 }
                }
                do { try ledger.replay(entry) } catch {
                    let v: Int64? = if case let .event(e) = entry { e.version } else { nil }
                    return Problem(doc: doc, seq: seq, version: v, what: error.message)
                }
                if case let .event(e) = entry, let before, let problem = checkInverse(e, before: before, ledger: &ledger) {
                    return Problem(doc: doc, seq: seq, version: e.version, what: problem)
                }
                if let expected = anchored.removeValue(forKey: seq), expected != ledger.headHash {
                    return Problem(doc: doc, seq: seq, what: "differs from the anchor taken earlier (history was rewritten)")
                }
                while let snap = snapshots.first, snap.seq <= seq {
                    snapshots.removeFirst()
                    let row = try states!.query("SELECT state FROM snapshots WHERE doc = $1 AND seq = $2", [doc, String(snap.seq)])
                    guard row.count == 1, let state = row[0, 0] else { return Problem(doc: doc, seq: snap.seq, what: "a snapshot row is malformed") }
                    if let problem = checkSnapshot((snap.seq, snap.hash, snap.digest, state), ledger: ledger, at: seq, cipher: cipher) {
                        return Problem(doc: doc, seq: snap.seq, what: problem)
                    }
                }
            }
            // Memory follows the undo stacks, not the log's length (as on the server, at each snapshot).
            ledger.compactHistory()
            ledger.forgetOldTransactions()
            progress?(ledger.seq, headSeq)
        }
        guard ledger.seq == headSeq, ledger.version == headVersion, ledger.headHash == headHash else {
            return Problem(doc: doc, seq: ledger.seq,
                           what: "the document's head says entry \(headSeq) (version \(headVersion)); the log ends at entry \(ledger.seq) (version \(ledger.version))"
                               + (ledger.seq == headSeq ? " with another hash" : ""))
        }
        if let snap = snapshots.first { return Problem(doc: doc, seq: snap.seq, what: "a snapshot past the end of the log") }
        if let (seq, _) = anchored.min(by: { $0.key < $1.key }) {
            return Problem(doc: doc, seq: seq, what: "anchored entry is gone: the log ends at entry \(ledger.seq) (newest entries removed?)")
        }
        return nil
    }

    /// The nodes an event touches (its ops' and its inverse's, the parents
    /// they create or move under, created subtrees) as they were before it,
    /// each with its parent's children, and the node count.
    struct Before {
        var nodes: [(key: Key, node: Node?, siblings: [Key]?)] = []
        var count: Int

        init(_ e: Event, _ document: Document) {
            var touched = Set<Key>()
            for op in e.ops + e.inverse {
                touched.insert(op.node)
                switch op {
                case let .create(spec, parent, _):
                    touched.insert(parent)
                    var stack = [spec]
                    while let s = stack.popLast() { touched.insert(s.id); stack += s.children }
                case let .move(_, parent, _): touched.insert(parent)
                default: break
                }
            }
            count = document.nodeCount
            nodes.reserveCapacity(touched.count)
            for k in touched {
                let n = document[k]
                nodes.append((k, n, n?.parent.flatMap { document[$0]?.children }))
            }
        }
    }

    /// Applying the inverse to the state after the event gives the state
    /// before it (checked on the nodes it touched). Done on the ledger's own
    /// document, in place (`DocumentLedger.withStateBefore`): a copy to apply
    /// the inverse to cost a copy of every node per event (41 % of a verify).
    static func checkInverse(_ e: Event, before: Before, ledger: inout DocumentLedger) -> String? {
        do {
            return try ledger.withStateBefore(e) { back -> String? in
                for (k, node, siblings) in before.nodes {
                    if node != back[k] { return "its inverse does not give back node \"\(k)\" as it was" }
                    if let p = node?.parent, siblings != back[p]?.children {
                        return "its inverse does not put \"\(k)\" back in place under \"\(p)\""
                    }
                }
                return before.count == back.nodeCount ? nil : "its inverse leaves \(back.nodeCount) nodes where there were \(before.count)"
            }
        } catch { return "its inverse does not apply: \(error.message)" }
    }

    static func checkSnapshot(_ s: (seq: Int64, hash: [UInt8], digest: [UInt8], state: String), ledger: DocumentLedger, at seq: Int64,
                              cipher: DocumentCipher?) -> String? {
        guard s.seq == seq else { return "snapshot taken at an entry that is not in the log" }
        guard SHA256.hash(Array(s.state.utf8)) == s.digest else { return "snapshot does not match its digest (changed after it was stored)" }
        guard s.hash == ledger.headHash else { return "snapshot names a hash the log does not have at this entry" }
        let plain: String
        do { plain = try LogRows.openSnapshot(s.state, doc: ledger.doc, cipher: cipher) } catch { return "snapshot does not open: \(error.message)" }
        guard let o = try? JSONParser.parse(plain, maxDepth: 256).objectValue, let d = o["document"],
              let doc = try? Document(json: d) else { return "snapshot does not parse" }
        guard doc == ledger.document else { return "snapshot's state differs from the replayed state at this entry" }
        return nil
    }

}
