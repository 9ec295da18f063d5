/// Checking a transaction against the state it was made on — its `base` —
/// before anything rebases it.
///
/// A position is a client's number: it means something only in the text the
/// client saw. Rebasing moves positions through what was committed since, so
/// a position that was already out of range at `base` must be refused there,
/// with the same error as an op made at the head; moved first, it could
/// overflow the transform's arithmetic, or land inside a text the client never
/// saw (a node deleted and created again under the same id).
///
/// The ledger does not keep old states, so the text lengths at `base` are
/// found by walking back from the head through the inverses of the events
/// since (at most `Limits.maxRebaseDistance` of them), looking only at the
/// nodes the transaction's text ops and selection name.
extension DocumentLedger {
    /// Refuses `ops` (and `selection`, when it is checked) if a text position
    /// or length is out of range, or names a node that did not exist, at `base`.
    /// Errors name the op (`details.op`) as the apply's own do.
    func checkAtBase(_ ops: [Op], selection: Selection?, base: Int64) throws(RewindError) {
        guard base < version else { return }  // made at the head: `Document.apply` checks it there
        var interest = Set<Key>()
        for op in ops where op.isText { interest.insert(op.node) }
        if let selection { interest.insert(selection.node) }
        guard !interest.isEmpty else { return }
        var lengths = textLengths(of: interest, at: base)

        if let sel = selection {
            guard let length = lengths[sel.node] ?? nil else {
                throw .notFound("selection: no node \"\(sel.node)\" at version \(base)", details: ["node": .string(sel.node.string)])
            }
            guard sel.end <= length else {
                throw .badRequest("selection: need 0 <= start <= end <= \(length) (the text length of \"\(sel.node)\" at base \(base))",
                                  details: ["length": .int(Int64(length))])
            }
        }
        for (i, op) in ops.enumerated() {
            switch op {
            case let .create(spec, _, _):
                Self.visit(spec) { if interest.contains($0.id) { lengths[$0.id] = .some($0.text.count) } }
            case let .delete(n):
                if interest.contains(n) { lengths[n] = .some(nil) }
            case let .insert(n, pos, text):
                let length = try Self.length(lengths, n, base: base, op: i)
                guard pos <= length else {
                    throw RewindError.badRequest("position out of range at base \(base): \(pos) > \(length)",
                                                 details: ["length": .int(Int64(length))]).at(op: i)
                }
                lengths[n] = .some(length + text.count)
            case let .remove(n, pos, len):
                let length = try Self.length(lengths, n, base: base, op: i)
                guard pos <= length, len <= length - pos else {
                    throw RewindError.badRequest("range out of range at base \(base): \(pos)+\(len) > \(length)",
                                                 details: ["length": .int(Int64(length))]).at(op: i)
                }
                lengths[n] = .some(length - len)
            case .set, .move:
                break
            }
        }
    }

    private static func length(_ lengths: [Key: Int?], _ n: Key, base: Int64, op i: Int) throws(RewindError) -> Int {
        guard let known = lengths[n], let length = known else {
            throw RewindError.notFound("node \"\(n)\" does not exist at version \(base)", details: ["node": .string(n.string)]).at(op: i)
        }
        return length
    }

    /// The text length of each node of `nodes` at version `base` (nil: the
    /// node did not exist then). `base` must lie in the rebase window.
    func textLengths(of nodes: Set<Key>, at base: Int64) -> [Key: Int?] {
        var lengths: [Key: Int?] = [:]
        for n in nodes { lengths[n] = .some(document[n].map { $0.text.count }) }
        var v = version
        while v > base {
            let i = Int(v - recentStart)
            let forward = recent[i], inverse = recentInverse[i]
            // The inverse of version v, applied in order, turns state v into state v - 1.
            for op in inverse {
                switch op {
                case let .insert(n, _, text):
                    if let l = lengths[n] ?? nil { lengths[n] = .some(l + text.count) }
                case let .remove(n, _, len):
                    if let l = lengths[n] ?? nil { lengths[n] = .some(max(0, l - len)) }
                case let .create(spec, _, _):
                    Self.visit(spec) { if nodes.contains($0.id) { lengths[$0.id] = .some($0.text.count) } }
                case let .delete(x):
                    // Undoes a create of version v: x and what was created with it did not exist before.
                    if nodes.contains(x) { lengths[x] = .some(nil) }
                    for case let .create(spec, _, _) in forward where spec.id == x {
                        Self.visit(spec) { if nodes.contains($0.id) { lengths[$0.id] = .some(nil) } }
                    }
                case .set, .move:
                    break
                }
            }
            v -= 1
        }
        return lengths
    }

    /// The nodes `op` names (its node; the parent of a create or a move) that the head lacks.
    func nodesMissing(from op: Op) -> Set<Key> {
        var names: Set<Key> = [op.node]
        switch op {
        case let .create(_, parent, _), let .move(_, parent, _): names.insert(parent)
        default: break
        }
        return names.filter { document[$0] == nil }
    }

    /// Whether any of `nodes` existed at `base` (in the rebase window): an op
    /// naming a node deleted since is a conflict; one naming a node that
    /// never existed is `not_found`, as it would be at the head.
    func existedAtBase(_ nodes: Set<Key>, base: Int64) -> Bool {
        guard !nodes.isEmpty else { return true }
        let lengths = textLengths(of: nodes, at: base)
        return nodes.contains { (lengths[$0] ?? nil) != nil }
    }

    static func visit(_ spec: NodeSpec, _ body: (NodeSpec) -> Void) {
        var stack = [spec]
        while let s = stack.popLast() {
            body(s)
            stack.append(contentsOf: s.children)
        }
    }
}
