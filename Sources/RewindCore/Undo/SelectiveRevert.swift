/// Undo and redo as selective reverts: the group's current effect is reverted
/// on top of everything that happened since, keeping later changes by others.
///
/// Only later events that touched the same nodes are looked at, so the cost
/// grows with the group and with those events, never with the whole history.
/// Text inverses are transformed through later text ops in the same node (the
/// same transform as rebasing a late submit). A later change by someone else
/// to the same thing is a conflict, settled by the request's policy.
public enum ConflictPolicy: String, Sendable, CaseIterable {
    case prompt, skip, force
}

public struct Conflict: Sendable, Equatable {
    public enum Reason: String, Sendable {
        /// Someone else set the same key since.
        case set
        /// The node (or the parent to restore it under) is gone.
        case deleted
        /// Someone else moved the node since.
        case moved
        /// Someone else removed (some of) the text since. No longer raised:
        /// text is transformed (kept so that older logs' details still decode).
        case removed
        /// Someone else changed the node (or created inside it) since.
        case changed
        /// A node with that id exists again.
        case exists
    }

    public var op: Op
    public var reason: Reason
    /// The newest conflicting event by someone else, when there is one.
    public var user: Int64?
    public var version: Int64?

    public func json(userName: (Int64) -> String?) -> JSON {
        .obj([("op", op.json), ("node", .string(op.node.string)), ("reason", .string(reason.rawValue)),
              ("user", user.flatMap(userName).map { .string($0) }), ("version", version.map { .int($0) })])
    }
}

public struct Revert: Sendable {
    /// Ops as applied, in order, and their exact inverses (to apply in order).
    public var applied = Document.Applied()
    /// Conflicts found (all of them, whatever the policy).
    public var conflicts: [Conflict] = []
    /// Ops left out: conflicting ones under `skip`, and ones that could not apply at all.
    public var skipped: [Conflict] = []
    /// The document after the revert.
    public var document: Document
}

extension UndoHistory {
    /// Reverts `group`'s current effect on `document` (the head) for `user`.
    /// Conflicting ops are left out unless `force`; under `prompt` the caller
    /// asks the user first (`DocumentLedger.revertOrAsk`).
    public func revert(_ group: Group, on document: Document, user: Int64, policy: ConflictPolicy,
                       limits: Limits) throws(RewindError) -> Revert
    {
        var r = Revert(document: document)
        // Ops of this revert applied so far: later ops for the older events of the group.
        var appliedSoFar: [Op] = []
        for v in group.effect.reversed() {
            guard let entry = logged(v) else { continue }
            let block = entry.inverse
            let nodes = Set(block.map(\.node))
            var laterVersions: [Int64] = []
            for n in nodes { laterVersions += touches(of: n, after: v) }
            laterVersions = Array(Set(laterVersions)).sorted()
            let transformThrough = cancellingPairsRemoved(laterVersions, after: v)
            var later: [Op] = transformThrough.flatMap { ver in logged(ver)!.ops.filter { $0.isText && nodes.contains($0.node) } }
            later += appliedSoFar.filter { $0.isText && nodes.contains($0.node) }

            for op in block {
                let conflict = findConflict(op, after: v, in: laterVersions, user: user, document: r.document)
                var transformed = [op]
                var laterAfter = later
                if op.isText && !later.isEmpty {
                    (transformed, laterAfter) = TextTransform.transform([op], later)
                }
                // Text is transformed through later text ops, never a conflict
                // (SPEC section 4): undoing an insert removes what is left of it
                // (what someone else removed already is not taken from them), as
                // Yjs and Loro do. Re-inserting into a node that is gone is one (`gone`).
                let conflictHere = conflict
                if let c = conflictHere {
                    r.conflicts.append(c)
                    if policy != .force {
                        r.skipped.append(c)
                        continue
                    }
                }
                var allApplied = true
                for t in transformed {
                    do {
                        let (applied, inverse) = try r.document.apply(t, limits: limits)
                        r.applied.ops.append(applied)
                        r.applied.inverse.insert(inverse, at: 0)
                        appliedSoFar.append(applied)
                    } catch {
                        allApplied = false
                        if conflictHere == nil || r.skipped.last?.op != op {
                            r.skipped.append(Conflict(op: t, reason: conflictHere?.reason ?? .deleted,
                                                      user: conflictHere?.user, version: conflictHere?.version))
                        }
                    }
                }
                if allApplied { later = laterAfter }
            }
        }
        return r
    }

    /// `versions` without the changes that were made and then reverted with
    /// nothing in between (an edit and its undo, a redo and the next undo):
    /// together they changed nothing, and transforming through the pair could
    /// lose text (a remove followed by the insert that restores it). Pairs that
    /// others' edits interleave with stay, and are transformed through in order.
    func cancellingPairsRemoved(_ versions: [Int64], after v: Int64) -> [Int64] {
        let present = Set(versions)
        var kept: [Int64] = []
        for ver in versions {
            let reverted = logged(ver)!.reverted
            if !reverted.isEmpty, reverted.allSatisfy({ $0 > v }) {
                let inList = reverted.filter(present.contains)
                if !inList.isEmpty, kept.count >= inList.count, kept.suffix(inList.count).elementsEqual(inList) {
                    kept.removeLast(inList.count)
                    continue
                }
            }
            kept.append(ver)
        }
        return kept
    }

    /// A later change by someone else that this inverse op would undo or cannot live with.
    private func findConflict(_ op: Op, after v: Int64, in later: [Int64], user: Int64, document: Document) -> Conflict? {
        func gone(_ n: Key) -> Conflict? {
            guard document[n] == nil else { return nil }
            let by = newestOther(later, user: user) { o in
                if case .delete = o { return document[o.node] == nil }
                return false
            }
            return Conflict(op: op, reason: .deleted, user: by?.user, version: by?.version)
        }
        switch op {
        case let .set(n, key, _):
            if let c = gone(n) { return c }
            if let by = newestOther(later, user: user, where: { if case let .set(m, k, _) = $0 { return m == n && k == key }; return false }) {
                return Conflict(op: op, reason: .set, user: by.user, version: by.version)
            }
        case let .move(n, parent, _):
            if let c = gone(n) ?? gone(parent) { return c }
            if let by = newestOther(later, user: user, where: { if case let .move(m, _, _) = $0 { return m == n }; return false }) {
                return Conflict(op: op, reason: .moved, user: by.user, version: by.version)
            }
        case let .delete(n):
            if let c = gone(n) { return c }
            if let by = newestOther(later, user: user, where: { o in
                if o.node == n { return true }
                if case let .create(_, p, _) = o { return p == n }
                if case let .move(_, p, _) = o { return p == n }
                return false
            }) {
                return Conflict(op: op, reason: .changed, user: by.user, version: by.version)
            }
        case let .create(spec, parent, _):
            if let c = gone(parent) { return c }
            if document[spec.id] != nil { return Conflict(op: op, reason: .exists, user: nil, version: nil) }
        case let .insert(n, _, _), let .remove(n, _, _):
            if let c = gone(n) { return c }
        }
        return nil
    }

    /// The newest of `versions` by another user with an op matching `match`.
    private func newestOther(_ versions: [Int64], user: Int64, where match: (Op) -> Bool) -> (user: Int64, version: Int64)? {
        for v in versions.reversed() {
            guard let e = logged(v), e.user != user else { continue }
            if e.ops.contains(where: match) { return (e.user, v) }
        }
        return nil
    }
}
