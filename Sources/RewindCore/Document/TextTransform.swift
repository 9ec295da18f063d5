/// Rebasing a transaction made against an older version onto the current one.
///
/// Text positions are transformed through concurrent inserts and removes in
/// the same node, so both users' text survives: an insert inside a range that
/// someone else removes concurrently is kept by splitting the remove in two.
/// When two inserts meet at one position, the one already committed goes first.
/// Non-text ops are not transformed; they apply to the current state or fail
/// because their target is gone.
public enum TextTransform {
    /// `incoming` (made at `base`) rewritten to apply after `concurrent`
    /// (everything committed after `base`, in order).
    public static func rebase(_ incoming: [Op], through concurrent: [Op]) -> [Op] {
        let relevant = concurrent.filter(\.isText)
        if relevant.isEmpty || !incoming.contains(where: \.isText) { return incoming }
        return transform(incoming, relevant).0
    }

    /// Transforms `a` (not yet applied) against `b` (applied first): returns
    /// `a` as it applies after `b`, and `b` as it would apply after `a`.
    ///
    /// The grid of `a` × `b`: each op of `a` in turn goes through `b` as the
    /// ops before it left it, one op of `b` at a time (an op may split in
    /// two, and then both halves go on). Linear in the grid: taking the rest
    /// of either list apart at every step, as a recursive definition does,
    /// made a submit far behind the head cost the square of the distance.
    public static func transform(_ a: [Op], _ b: [Op]) -> ([Op], [Op]) {
        if a.isEmpty || b.isEmpty { return (a, b) }
        if a.count == 1 && b.count == 1 { return pair(a[0], b[0]) }
        var through = b
        var out: [Op] = []
        out.reserveCapacity(a.count)
        for x in a {
            var xs = [x]
            var next: [Op] = []
            next.reserveCapacity(through.count)
            for y in through {
                var ys = [y]
                if !xs.isEmpty { (xs, ys) = transform(xs, ys) }  // one op, or the pieces it split into, against one
                next.append(contentsOf: ys)
            }
            out.append(contentsOf: xs)
            through = next
        }
        return (out, through)
    }

    /// One op against one op. `b` has priority: it was committed first.
    static func pair(_ a: Op, _ b: Op) -> ([Op], [Op]) {
        guard a.node == b.node else { return ([a], [b]) }
        switch (a, b) {
        case let (.insert(n, p, s), .insert(_, q, t)):
            let a2: Op = q <= p ? .insert(n, pos: p + t.count, text: s) : a
            let b2: Op = p < q ? .insert(n, pos: q + s.count, text: t) : b
            return ([a2], [b2])

        case let (.insert(n, p, s), .remove(_, q, l)):
            return ([.insert(n, pos: mapThroughRemove(p, q, l), text: s)], removeAroundInsert(n, q, l, p, s.count))

        case let (.remove(n, p, l), .insert(_, q, t)):
            return (removeAroundInsert(n, p, l, q, t.count), [.insert(n, pos: mapThroughRemove(q, p, l), text: t)])

        case let (.remove(n, p, l1), .remove(_, q, l2)):
            return (removeMinus(n, p, l1, q, l2), removeMinus(n, q, l2, p, l1))

        default:
            return ([a], [b])
        }
    }

    /// Where position `x` lands after removing `len` scalars at `at`.
    static func mapThroughRemove(_ x: Int, _ at: Int, _ len: Int) -> Int {
        if x <= at { return x }
        if x >= at + len { return x - len }
        return at
    }

    /// The remove `[p, p+l)` after an insert of `n` scalars at `q`. An insert
    /// strictly inside the range survives: the remove splits around it. An
    /// insert at the range's start stays before it, one at its end after it.
    static func removeAroundInsert(_ node: Key, _ p: Int, _ l: Int, _ q: Int, _ n: Int) -> [Op] {
        if q <= p { return [.remove(node, pos: p + n, len: l)] }
        if q >= p + l { return [.remove(node, pos: p, len: l)] }
        return [.remove(node, pos: p, len: q - p), .remove(node, pos: p + n, len: l - (q - p))]
    }

    /// The remove `[p, p+l1)` after `[q, q+l2)` is already gone.
    static func removeMinus(_ node: Key, _ p: Int, _ l1: Int, _ q: Int, _ l2: Int) -> [Op] {
        let start = mapThroughRemove(p, q, l2)
        let end = mapThroughRemove(p + l1, q, l2)
        return end > start ? [.remove(node, pos: start, len: end - start)] : []
    }
}
