/// Snapshots of a ledger: opening a long document without replaying its log.
///
/// A snapshot holds the state, the undo history (without the per-event log)
/// and the version and mark count it was taken at. Restoring it needs the
/// events from `tailStart` to the snapshot's version: the newest ones for
/// rebasing late submits and those the undo groups can still reach. Their
/// ops are indexed, not applied.
extension DocumentLedger {
    public var snapshotJSON: JSON {
        .obj([("version", .int(version)), ("document", document.json), ("history", history.snapshotJSON),
              ("users", .array(userNames.keys.sorted().map { .obj([("id", .int($0)), ("name", .string(userNames[$0]!))]) }))])
    }

    /// Drops undo bookkeeping no group can reach any more (see `UndoHistory.compact`).
    public mutating func compactHistory() { history.compact(head: version) }

    /// The first version a restore of `snapshot` needs from the log (past its version when none).
    public static func tailStart(snapshot: JSON, limits: Limits) throws(RewindError) -> Int64 {
        guard let o = snapshot.objectValue, let v = o["version"]?.intValue, let h = o["history"] else {
            throw RewindError(.internal, "snapshot without version or history")
        }
        let floor = try UndoHistory(snapshot: h, floor: v + 1).floor(head: v)
        return max(1, min(floor, v + 1 - Int64(limits.maxRebaseDistance)))
    }

    /// A ledger from a snapshot and the events `tail` (from `tailStart` to the snapshot's version).
    public init(doc: String, snapshot: JSON, tail: [Event], limits: Limits = Limits()) throws(RewindError) {
        guard let o = snapshot.objectValue, let v = o["version"]?.intValue, let d = o["document"], let h = o["history"] else {
            throw RewindError(.internal, "snapshot of \(doc) is malformed")
        }
        self.init(doc: doc, limits: limits)
        document = try Document(json: d)
        var restored = try UndoHistory(snapshot: h, floor: v + 1)
        let floor = restored.floor(head: v)
        restored = try UndoHistory(snapshot: h, floor: floor)
        for u in o["users"]?.arrayValue ?? [] {
            if let uo = u.objectValue, let id = uo["id"]?.intValue, let name = uo["name"]?.stringValue { userNames[id] = name }
        }
        let needed = try Self.tailStart(snapshot: snapshot, limits: limits)
        let usable = tail.filter { $0.version >= needed && $0.version <= v }
        guard usable.count == Int(v - needed + 1), usable.first.map({ $0.version == needed }) ?? (v < needed) else {
            throw RewindError(.internal, "snapshot of \(doc) at \(v) needs events \(needed)…\(v), got \(usable.count)")
        }
        for e in usable {
            restored.restoreLog(e)
            userNames[e.userID] = e.userName
        }
        history = restored
        restoreRecent(usable, head: v)
        knowsAllTransactions = needed <= 1
    }
}
