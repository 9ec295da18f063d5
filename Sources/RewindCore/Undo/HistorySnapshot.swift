/// The undo history in a snapshot: stacks, groups, open groups and marks, but
/// not the per-event log, which is read back from the events from `floor` on
/// (the oldest event any group can still revert or be transformed through).
extension UndoHistory {
    /// The oldest version an undo or redo of any group still reaches; past the head when none.
    public func floor(head: Int64) -> Int64 {
        var f = head + 1
        for g in groups.values { f = Swift.min(f, g.edits.first ?? f, g.effect.first ?? f) }
        return f
    }

    public var snapshotJSON: JSON {
        func key(_ k: GroupKey) -> JSON { .obj([("id", .string(k.id)), ("scope", k.scope.map { .string($0.string) } ?? .null)]) }
        func versions(_ v: [Int64]) -> JSON { .array(v.map { .int($0) }) }
        let stackList: [JSON] = stacks.keys.sorted { ($0.user, $0.scope?.string ?? "") < ($1.user, $1.scope?.string ?? "") }.map { sk in
            let s = stacks[sk]!
            return .obj([("user", .int(sk.user)), ("scope", sk.scope.map { .string($0.string) } ?? .null),
                         ("undo", .array(s.undo.map(key))), ("redo", .array(s.redo.map(key)))])
        }
        let groupList: [JSON] = groups.values.sorted { ($0.key.id, $0.key.scope?.string ?? "") < ($1.key.id, $1.key.scope?.string ?? "") }.map { g in
            .obj([("key", key(g.key)), ("user", .int(g.user)), ("client", .string(g.client)),
                  ("action", g.givenAction.map { .string($0) } ?? .null), ("edits", versions(g.edits)), ("effect", versions(g.effect)),
                  ("undone", .bool(g.isUndone)), ("before", g.selectionBefore?.json ?? .null), ("after", g.selectionAfter?.json ?? .null),
                  ("time", .int(g.lastTime)), ("typing", g.typingNode.map { .string($0.string) } ?? .null),
                  ("kinds", .int(Int64(g.opKinds.rawValue)))])
        }
        let openList: [JSON] = open.keys.sorted().map { id in
            .obj([("id", .string(id)), ("scopes", .array(open[id]!.map { $0.map { .string($0.string) } ?? .null }))])
        }
        let marks: [JSON] = markTransactions.keys.sorted { ($0.user, $0.tx) < ($1.user, $1.tx) }.map { k in
            .obj([("user", .int(k.user)), ("tx", .string(k.tx.string)), ("n", .int(markTransactions[k]!))])
        }
        let chosen: [JSON] = userLevels.keys.sorted().map { .obj([("user", .int($0)), ("levels", .int(Int64(userLevels[$0]!)))]) }
        return .obj([("levels", .int(Int64(levels))), ("marks", .int(markCount)), ("stacks", .array(stackList)),
                      ("groups", .array(groupList)), ("open", .array(openList)), ("mark_tx", .array(marks)),
                      ("user_levels", .array(chosen)), ("document_levels", documentLevels.map { .int(Int64($0)) } ?? .null)])
    }

    /// A history from `snapshotJSON`; its log starts empty at `floor`.
    public init(snapshot v: JSON, floor: Int64) throws(RewindError) {
        func bad(_ what: String) -> RewindError { RewindError(.internal, "undo snapshot: malformed \(what)") }
        guard let o = v.objectValue, let levels = o["levels"]?.intValue, let marks = o["marks"]?.intValue else { throw bad("header") }
        self.init(levels: Int(levels))
        markCount = marks
        logBase = floor
        func key(_ v: JSON?) throws(RewindError) -> GroupKey {
            guard let k = v?.objectValue, let id = k["id"]?.stringValue else { throw bad("group key") }
            return GroupKey(id: id, scope: k["scope"]?.stringValue.map { Key($0) })
        }
        for s in o["stacks"]?.arrayValue ?? [] {
            guard let so = s.objectValue, let user = so["user"]?.intValue else { throw bad("stack") }
            var st = Stacks()
            for k in so["undo"]?.arrayValue ?? [] { st.undo.append(try key(k)) }
            for k in so["redo"]?.arrayValue ?? [] { st.redo.append(try key(k)) }
            stacks[StackKey(user: user, scope: so["scope"]?.stringValue.map { Key($0) })] = st
        }
        // Sized as `recordEdit` keeps the table (about a third full), so the first edit after a restore does not re-hash it.
        groups.reserveCapacity(2 * ((o["groups"]?.arrayValue?.count ?? 0) + 1))
        for g in o["groups"]?.arrayValue ?? [] {
            guard let go = g.objectValue, let user = go["user"]?.intValue, let client = go["client"]?.stringValue,
                  let time = go["time"]?.intValue, let kinds = go["kinds"]?.intValue else { throw bad("group") }
            let k = try key(go["key"])
            groups[k] = Group(key: k, user: user, client: client, givenAction: go["action"]?.stringValue,
                              edits: go["edits"]?.arrayValue?.compactMap(\.intValue) ?? [],
                              effect: go["effect"]?.arrayValue?.compactMap(\.intValue) ?? [],
                              isUndone: go["undone"]?.boolValue ?? false,
                              selectionBefore: try Selection.parse(go["before"]), selectionAfter: try Selection.parse(go["after"]),
                              lastTime: time, typingNode: go["typing"]?.stringValue.map { Key($0) },
                              opKinds: OpKinds(rawValue: Int(kinds)))
        }
        for e in o["open"]?.arrayValue ?? [] {
            guard let eo = e.objectValue, let id = eo["id"]?.stringValue else { throw bad("open group") }
            open[id] = (eo["scopes"]?.arrayValue ?? []).map { $0.stringValue.map { Key($0) } }
        }
        for m in o["mark_tx"]?.arrayValue ?? [] {
            guard let mo = m.objectValue, let user = mo["user"]?.intValue, let tx = mo["tx"]?.stringValue, let n = mo["n"]?.intValue
            else { throw bad("mark transaction") }
            markTransactions[DocumentLedger.TxKey(user: user, tx: Key(tx))] = n
        }
        // Absent from snapshots made before `set_undo_levels`.
        for c in o["user_levels"]?.arrayValue ?? [] {
            guard let co = c.objectValue, let user = co["user"]?.intValue, let n = co["levels"]?.intValue, n > 0 else { throw bad("user levels") }
            userLevels[user] = Int(n)
        }
        if let cap = o["document_levels"]?.intValue { documentLevels = Int(cap) }
    }

    /// Puts back the log of an event at or after the floor (oldest first),
    /// without touching the stacks: they already include it.
    public mutating func restoreLog(_ e: Event) {
        restoreLog(Logged(user: e.userID, ops: e.ops, inverse: e.inverse, version: e.version, reverted: e.meta.reverted))
    }

    mutating func restoreLog(_ entry: Logged) {
        guard entry.version >= logBase else { return }
        if log.isEmpty { logBase = entry.version }
        log.append(entry)
        index(entry)
    }
}

extension UndoHistory {
    /// The stacks, groups, open groups and marks without the per-event log
    /// and touch index (what `snapshotJSON` holds).
    var withoutLog: UndoHistory {
        var h = UndoHistory(levels: levels)
        h.stacks = stacks
        h.groups = groups
        h.open = open
        h.markCount = markCount
        h.markTransactions = markTransactions
        h.userLevels = userLevels
        h.documentLevels = documentLevels
        h.logBase = logBase + Int64(log.count)
        return h
    }

    /// Forgets the log and touch index below the floor: no undo or redo can
    /// reach those events any more, so memory follows the stacks, not the
    /// length of the history. Costs one pass over the index; call it now and
    /// then (the server does at each snapshot).
    public mutating func compact(head: Int64) {
        let f = floor(head: head)
        guard f > logBase else { return }
        let drop = Int(min(f - logBase, Int64(log.count)))
        log.removeFirst(drop)
        logBase += Int64(drop)
        for (k, versions) in touches {
            guard let first = versions.first, first < logBase else { continue }
            let kept = versions.drop(while: { $0 < logBase })
            touches[k] = kept.isEmpty ? nil : Array(kept)
        }
    }
}

extension UndoHistory {
    /// The first version an undo or redo of `group` reads that this history
    /// does not hold (restored from a snapshot with a shorter tail), or nil.
    /// A revert reads the group's events and those after them that touched
    /// the same nodes; the restored selection, those after its first edit.
    public func olderLogNeeded(for group: Group) -> Int64? {
        let first = Swift.min(group.edits.first ?? .max, group.effect.first ?? .max)
        return first < logBase ? first : nil
    }

    /// Puts back the log of the events just below `logBase` (oldest first,
    /// contiguous, the last one `logBase - 1`), and indexes them as recording
    /// them would have. Events already held before restored ones may have
    /// reverted ones now put back: they are indexed again, so that the touch
    /// index is the one the live history built.
    public mutating func restoreOlderLog(_ events: [Event]) throws(RewindError) {
        try restoreOlderLog(OlderLog(events, levels: levels, below: logBase))
    }

    /// Older events made ready to put back: their log entries and touch index
    /// built once (off the loop, for both ledgers of a document), for a
    /// history whose log starts at `below`. Restoring it into a history
    /// whose log starts elsewhere (another read put some back meanwhile)
    /// indexes the entries below that again. Holds no `Event`: those are
    /// let go where it was made.
    public struct OlderLog: Sendable {
        let below: Int64
        let part: UndoHistory

        public init(_ events: [Event], levels: Int, below: Int64) {
            self.below = below
            var part = UndoHistory(levels: levels)
            for e in events where e.version < below { part.restoreLog(e) }
            self.part = part
        }

        init(_ older: OlderLog, below: Int64) {
            self.below = below
            var part = UndoHistory(levels: older.part.levels)
            for entry in older.part.log where entry.version < below { part.restoreLog(entry) }
            self.part = part
        }
    }

    public mutating func restoreOlderLog(_ older: OlderLog) throws(RewindError) {
        guard older.below == logBase else { return try restoreOlderLog(OlderLog(older, below: logBase)) }
        let part = older.part
        guard let firstEntry = part.log.first else { return }
        for (i, e) in part.log.enumerated() where e.version != firstEntry.version + Int64(i) || (i == part.log.count - 1 && e.version != logBase - 1) {
            throw RewindError(.internal, "older log: expected versions \(firstEntry.version)…\(logBase - 1), got \(e.version) at \(i)")
        }
        let heldFrom = logBase
        log = part.log + log
        logBase = firstEntry.version
        for (k, versions) in part.touches { touches[k] = versions + (touches[k] ?? []) }
        for entry in log[Int(heldFrom - logBase)...] where entry.reverted.contains(where: { $0 < heldFrom }) {
            for k in nodes(of: entry) {
                let at = touches(of: k, after: entry.version - 1)
                if at.first != entry.version { touches[k, default: []].insert(entry.version, at: at.startIndex) }
            }
        }
    }
}
