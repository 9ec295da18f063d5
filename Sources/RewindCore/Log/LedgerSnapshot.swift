/// Snapshots of a ledger: opening a long document without replaying its log.
///
/// A snapshot holds the state, the undo history (without the per-event log)
/// and the entry it was taken at (`seq`) with that entry's hash. Restoring it
/// needs the log's entries from event `tailStart` to that entry: the newest
/// events, for rebasing late submits and for the undo groups made among them
/// (their ops are indexed, not applied), and the entry itself, whose hash in
/// the log must be the one the snapshot recorded — a snapshot is only
/// trusted as far as the chain vouches for the point it was taken at.
///
/// A group older than that tail (one edit, long ago, by someone who never
/// edited again) keeps its place on its stack, but its events and what
/// touched the same nodes since are read only when an undo or redo reaches
/// it (`olderLogNeeded`, `restoreOlderLog`): an open reads as much of the
/// log whatever the oldest group anyone holds.
extension DocumentLedger {
    public var snapshotJSON: JSON {
        .obj([("version", .int(version)), ("seq", .int(seq)), ("hash", .string(Hex.string(headHash))),
              ("document", document.json), ("history", history.snapshotJSON),
              ("users", .array(userNames.keys.sorted().map { .obj([("id", .int($0)), ("name", .string(userNames[$0]!))]) }))])
    }

    /// The version and document of a snapshot, without its history: what a
    /// read-only view of an old version (a preview, a scrub) starts from.
    public static func snapshotDocument(_ snapshot: JSON) throws(RewindError) -> (version: Int64, document: Document) {
        guard let o = snapshot.objectValue, let v = o["version"]?.intValue, let d = o["document"] else {
            throw RewindError(.internal, "snapshot without version or document")
        }
        return (v, try Document(json: d))
    }

    /// The same from a snapshot's text, which the store has read and opened.
    /// Written by `snapshotJSON` through `JSONWriter`, it starts with the
    /// version and the document: those are read in place (`Document.readState`)
    /// and the rest — the history, most of the text — is not looked at. A text
    /// in any other form is parsed whole, as `snapshotDocument(_:)` reads it.
    public static func snapshotDocument(text: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws(RewindError) -> (version: Int64, document: Document) {
        var r = JSONParser(reading: text, maxDepth: maxDepth)
        if r.take("{\"version\":"), let v = try? r.readInt(), r.take(",\"seq\":"), (try? r.readInt()) != nil,
           r.take(",\"hash\":"), (try? r.readString()) != nil, r.take(",\"document\":"),
           let d = try? Document.readState(&r, depth: 2, maxDepth: maxDepth), r.take(",")
        {
            return (v, d)
        }
        let json: JSON
        do { json = try JSONParser.parse(text, maxDepth: maxDepth) } catch { throw RewindError(.internal, "snapshot does not parse: \(error.message)") }
        return try snapshotDocument(json)
    }

    /// Drops undo bookkeeping no group can reach any more (see `UndoHistory.compact`).
    public mutating func compactHistory() { history.compact(head: version) }

    /// The first version a restore of `snapshot` needs from the log: the
    /// rebase window's (past its version when the window is empty).
    public static func tailStart(snapshot: JSON, limits: Limits) throws(RewindError) -> Int64 {
        guard let o = snapshot.objectValue, let v = o["version"]?.intValue, o["history"] != nil else {
            throw RewindError(.internal, "snapshot without version or history")
        }
        return Swift.max(1, v + 1 - Int64(limits.maxRebaseDistance))
    }

    /// A ledger from a snapshot and the log entries `tail` (from event
    /// `tailStart` up to the snapshot's entry), checked against the chain:
    /// the tail's hashes link up, and the last one is the snapshot's.
    public init(doc: String, snapshot: JSON, tail entries: [LogEntry], limits: Limits = Limits()) throws(RewindError) {
        guard let o = snapshot.objectValue, let v = o["version"]?.intValue, let seq = o["seq"]?.intValue,
              let hash = o["hash"]?.stringValue.flatMap({ Hex.bytes($0) }), let d = o["document"], let h = o["history"]
        else { throw RewindError(.internal, "snapshot of \(doc) is malformed") }
        guard let last = entries.last, last.seq == seq, last.hash == hash else {
            throw RewindError(.internal, "snapshot of \(doc) at entry \(seq) does not match the log's hash there")
        }
        for (a, b) in zip(entries, entries.dropFirst()) where b.seq != a.seq + 1 || b.row(doc: doc).chained(after: a.hash) != b.hash {
            throw RewindError(.internal, "the hash chain of \(doc) breaks at entry \(b.seq)", details: ["doc": .string(doc), "seq": .int(b.seq)])
        }
        let tail = entries.compactMap { if case let .event(e) = $0 { return e }; return nil }
        self.init(doc: doc, limits: limits)
        document = try Document(json: d)
        let needed = try Self.tailStart(snapshot: snapshot, limits: limits)
        var restored = try UndoHistory(snapshot: h, floor: v + 1)
        // The log is held from the oldest event a group reaches, or from the tail's start if that is later.
        restored = try UndoHistory(snapshot: h, floor: Swift.max(restored.floor(head: v), needed))
        for u in o["users"]?.arrayValue ?? [] {
            if let uo = u.objectValue, let id = uo["id"]?.intValue, let name = uo["name"]?.stringValue { userNames[id] = name }
        }
        let usable = tail.filter { $0.version >= needed && $0.version <= v }
        guard usable.count == Int(v - needed + 1), usable.first.map({ $0.version == needed }) ?? (v < needed) else {
            throw RewindError(.internal, "snapshot of \(doc) at \(v) needs events \(needed)…\(v), got \(usable.count)")
        }
        for e in usable {
            restored.restoreLog(e)
            userNames[e.userID] = e.userName
        }
        guard restored.markCount == seq - v else { throw RewindError(.internal, "snapshot of \(doc): marks and entry disagree") }
        history = restored
        headHash = hash
        restoreRecent(usable, head: v)
        knowsAllTransactions = needed <= 1
    }
}
