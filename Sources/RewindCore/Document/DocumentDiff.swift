/// The ops that turn one state of a document into another (Restore Version,
/// SPEC section 8): applied in order to `from`, they give `to` exactly, and
/// their inverses (computed as they apply) give `from` back exactly — so the
/// restore is one undoable step.
///
/// In order: nodes only in `to` are created (each with the part of its
/// subtree that is new, in one op); nodes in both whose parent differs are
/// moved, parents before children (so a node never moves under its own
/// descendant); nodes only in `from` are deleted (the topmost of each removed
/// subtree, once what stays has been moved out); children are put in order;
/// fields and props are set; text is spliced (one remove and one insert
/// around the common prefix and suffix). A node whose kind differs (deleted
/// and created again under the same id) cannot be changed in place: then the
/// root's children are replaced wholesale — exact, not minimal.
public enum DocumentDiff {
    public static func ops(from a: Document, to b: Document) -> [Op] {
        if b.nodes.contains(where: { id, n in a[id].map { $0.kind != n.kind } ?? false }) { return replaceAll(from: a, to: b) }
        var work = a
        var ops: [Op] = []
        func emit(_ op: Op) {
            // Valid by construction; a failure here is a bug the caller's check catches.
            _ = try? work.apply(op, limits: .unbounded)
            ops.append(op)
        }
        let order = b.subtreeIDs(Document.rootID)

        // Creates: a new node with its new descendants (stopping at nodes that exist).
        func newSpec(_ id: Key) -> NodeSpec {
            let n = b[id]!
            var s = NodeSpec(id: id, kind: n.kind, frame: n.frame)
            s.clips = n.clips; s.focusable = n.focusable; s.undoScope = n.undoScope
            s.props = n.props; s.text = n.text
            s.children = n.children.filter { a[$0] == nil }.map(newSpec)
            return s
        }
        for id in order where a[id] == nil {
            let parent = b[id]!.parent!
            guard a[parent] != nil else { continue }  // inside a new subtree: created with it
            let index = min(b[parent]!.children.firstIndex(of: id)!, work[parent]!.children.count)
            emit(.create(newSpec(id), parent: parent, index: index))
        }
        // Moves, in `to`'s pre-order: a node's new ancestors are in place before it.
        for id in order where a[id] != nil && id != Document.rootID {
            let parent = b[id]!.parent!
            guard work[id]!.parent != parent else { continue }
            emit(.move(id, parent: parent, index: work[parent]!.children.count))
        }
        // Deletes: what is left of `from` only (nothing of `to` is inside any more).
        for id in a.subtreeIDs(Document.rootID) where b[id] == nil {
            guard let n = work[id], let p = n.parent, b[p] != nil else { continue }
            emit(.delete(id))
        }
        // Order of children.
        for id in order {
            let want = b[id]!.children
            for (i, child) in want.enumerated() where work[id]!.children[i] != child {
                emit(.move(child, parent: id, index: i))
            }
        }
        // Fields, props and text of nodes that were there before.
        for id in order where a[id] != nil {
            let x = work[id]!, y = b[id]!
            if x.frame != y.frame { emit(.set(id, key: "frame", value: .array(y.frame))) }
            if x.clips != y.clips { emit(.set(id, key: "clips", value: .bool(y.clips))) }
            if x.focusable != y.focusable { emit(.set(id, key: "focusable", value: .bool(y.focusable))) }
            if x.undoScope != y.undoScope { emit(.set(id, key: "undoScope", value: .bool(y.undoScope))) }
            for k in Set(x.props.keys).union(y.props.keys).sorted() where x.props[k] != y.props[k] {
                emit(.set(id, key: k.string, value: y.props[k] ?? .null))
            }
            if x.text != y.text {
                let prefix = zip(x.text, y.text).prefix(while: { $0 == $1 }).count
                let maxSuffix = min(x.text.count, y.text.count) - prefix
                var suffix = 0
                while suffix < maxSuffix && x.text[x.text.count - 1 - suffix] == y.text[y.text.count - 1 - suffix] { suffix += 1 }
                let removed = x.text.count - prefix - suffix
                if removed > 0 { emit(.remove(id, pos: prefix, len: removed)) }
                let inserted = Array(y.text[prefix..<(y.text.count - suffix)])
                if !inserted.isEmpty { emit(.insert(id, pos: prefix, text: inserted)) }
            }
        }
        return ops
    }

    /// Every child of the root deleted, `to`'s created, and the root's own fields set.
    private static func replaceAll(from a: Document, to b: Document) -> [Op] {
        var ops: [Op] = a[Document.rootID]!.children.map { .delete($0) }
        ops += b[Document.rootID]!.children.enumerated().map { i, c in .create(b.spec(of: c), parent: Document.rootID, index: i) }
        var rootOnly = a
        for op in ops { _ = try? rootOnly.apply(op, limits: .unbounded) }
        // The root's fields and props: the general path finds only those now.
        return ops + Self.ops(from: rootOnly, to: b)
    }
}
