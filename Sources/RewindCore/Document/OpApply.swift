/// Applying ops to a document. Each application returns the op as applied
/// (indexes clamped: what the log stores, so replay is exact) and its exact
/// inverse, computed from the state it changed (old value, removed subtree,
/// removed text), so undo never replays history.
extension Document {
    public struct Applied: Sendable, Equatable {
        /// The ops as applied, in order.
        public var ops: [Op] = []
        /// The ops that revert them, in the order to apply them.
        public var inverse: [Op] = []
        public init() {}
    }

    /// Applies a transaction atomically: all ops, or (on the first failure) none.
    /// The error carries the index of the failing op in `details.op`.
    public mutating func apply(_ ops: [Op], limits: Limits) throws(RewindError) -> Applied {
        var done = Applied()
        for (i, op) in ops.enumerated() {
            do {
                let (applied, inverse) = try apply(op, limits: limits)
                done.ops.append(applied)
                done.inverse.insert(inverse, at: 0)
            } catch {
                // Roll back what this transaction already changed.
                for inv in done.inverse { _ = try? apply(inv, limits: Limits.unbounded) }
                throw error.at(op: i)
            }
        }
        return done
    }

    /// Applies ops known to be valid (from the log). A failure here means the
    /// log and the code disagree: the caller reports it as `internal`.
    public mutating func replay(_ ops: [Op]) throws(RewindError) {
        for op in ops { _ = try apply(op, limits: Limits.unbounded) }
    }

    /// `set` of a prop (the most common op): the node is changed where the
    /// table holds it — one look-up, and no copy of it (reading it through
    /// `nodes[id]` first copied its every field). Returns the old value.
    private mutating func setProp(_ id: Key, _ k: Key, _ value: JSON, limits: Limits) throws(RewindError) -> JSON {
        let documentPropBytes = propBytes
        guard let old = try updateIfPresent(id, { (n: inout Node) throws(RewindError) -> JSON in
            try Self.setProp(&n, k, value, documentPropBytes: documentPropBytes, limits: limits)
        }) else { throw .notFound("node \"\(id)\" does not exist") }
        return old
    }

    /// Returns the old value; `n` is unchanged if it throws.
    private static func setProp(_ n: inout Node, _ k: Key, _ value: JSON, documentPropBytes: Int,
                                limits: Limits) throws(RewindError) -> JSON {
        let old = n.props[k] ?? .null
        if !value.isNull && old.isNull && n.props.count >= limits.maxPropsPerNode {
            throw .badRequest("a node holds at most \(limits.maxPropsPerNode) props")
        }
        let oldBytes = old.isNull ? 0 : Node.propBytes(k, old)
        let valueBytes = value.isNull ? 0 : value.encodedSize
        let newBytes = value.isNull ? 0 : k.string.utf8.count + valueBytes
        if !value.isNull {
            try Node.checkPropValue(encodedSize: valueBytes, limits: limits)
            guard n.propBytes - oldBytes + newBytes <= limits.maxNodePropBytes else {
                throw RewindError(.tooLarge, "the props of one node hold at most \(limits.maxNodePropBytes) bytes")
            }
            guard documentPropBytes - oldBytes + newBytes <= limits.maxDocumentPropBytes else {
                throw RewindError(.tooLarge, "a document holds at most \(limits.maxDocumentPropBytes) bytes of props")
            }
        }
        if value.isNull { n.props.removeValue(forKey: k) } else { n.props[k] = value }
        n.propBytes += newBytes - oldBytes
        return old
    }

    public mutating func apply(_ op: Op, limits: Limits) throws(RewindError) -> (applied: Op, inverse: Op) {
        switch op {
        case let .create(spec, parent, index):
            guard let p = nodes[parent] else { throw .notFound("parent \"\(parent)\" does not exist") }
            try checkCreatable(spec, limits: limits)
            guard nodeCount + spec.count <= limits.maxNodes else {
                throw RewindError(.tooLarge, "a document holds at most \(limits.maxNodes) nodes")
            }
            guard depth(of: parent) + spec.height <= limits.maxTreeDepth else {
                throw .badRequest("nodes nest at most \(limits.maxTreeDepth) levels below the root")
            }
            let at = min(index, p.children.count)
            insertSpec(spec, parent: parent, index: at)
            guard textScalars <= limits.maxDocumentText else {
                _ = removeSubtree(spec.id)
                throw RewindError(.tooLarge, "a document holds at most \(limits.maxDocumentText) characters of text")
            }
            guard propBytes <= limits.maxDocumentPropBytes else {
                _ = removeSubtree(spec.id)
                throw RewindError(.tooLarge, "a document holds at most \(limits.maxDocumentPropBytes) bytes of props")
            }
            return (.create(spec, parent: parent, index: at), .delete(spec.id))

        case let .delete(id):
            guard let n = nodes[id] else { throw .notFound("node \"\(id)\" does not exist") }
            guard let parent = n.parent else { throw .badRequest("the root node cannot be deleted") }
            let index = nodes[parent]!.children.firstIndex(of: id)!
            let spec = self.spec(of: id)
            _ = removeSubtree(id)
            return (op, .create(spec, parent: parent, index: index))

        case let .set(id, key, value):
            let settable = NodeField.settable(key)
            if case .some(.none) = settable { return (op, .set(id, key: key, value: try setProp(id, Key(key), value, limits: limits))) }
            guard let n = nodes[id] else { throw .notFound("node \"\(id)\" does not exist") }
            guard let field = settable else {
                throw .badRequest("`\(key)` cannot be changed with set")
            }
            switch field {
            case .frame:
                let frame = try Op.parseFrame(value)
                update(id) { $0.frame = frame }
                return (op, .set(id, key: key, value: .array(n.frame)))
            case .clips, .focusable, .undoScope:
                guard let b = value.boolValue else { throw .badRequest("`\(key)` must be true or false") }
                let old: Bool
                switch field! {
                case .clips: old = n.clips; update(id) { $0.clips = b }
                case .focusable: old = n.focusable; update(id) { $0.focusable = b }
                default: old = n.undoScope; update(id) { $0.undoScope = b }
                }
                return (op, .set(id, key: key, value: .bool(old)))
            case nil:
                return (op, .set(id, key: key, value: try setProp(id, Key(key), value, limits: limits)))
            }

        case let .move(id, parent, index):
            guard let n = nodes[id] else { throw .notFound("node \"\(id)\" does not exist") }
            guard let oldParent = n.parent else { throw .badRequest("the root node cannot be moved") }
            guard nodes[parent] != nil else { throw .notFound("parent \"\(parent)\" does not exist") }
            if isInSubtree(parent, of: id) {
                throw .badRequest("cannot move \"\(id)\" into its own subtree (cycle)")
            }
            guard depth(of: parent) + height(of: id) <= limits.maxTreeDepth else {
                throw .badRequest("nodes nest at most \(limits.maxTreeDepth) levels below the root")
            }
            let oldIndex = nodes[oldParent]!.children.firstIndex(of: id)!
            reparent(id, to: parent, at: index)
            let newIndex = nodes[parent]!.children.firstIndex(of: id)!
            return (.move(id, parent: parent, index: newIndex), .move(id, parent: oldParent, index: oldIndex))

        case let .insert(id, pos, text):
            guard let n = nodes[id] else { throw .notFound("node \"\(id)\" does not exist") }
            guard pos <= n.text.count else {
                throw .badRequest("position out of range: \(pos) > \(n.text.count)", details: ["length": .int(Int64(n.text.count))])
            }
            guard n.text.count + text.count <= limits.maxTextPerNode else {
                throw RewindError(.tooLarge, "a node holds at most \(limits.maxTextPerNode) characters of text")
            }
            guard textScalars + text.count <= limits.maxDocumentText else {
                throw RewindError(.tooLarge, "a document holds at most \(limits.maxDocumentText) characters of text")
            }
            update(id) { $0.text.insert(contentsOf: text, at: pos) }
            return (op, .remove(id, pos: pos, len: text.count))

        case let .remove(id, pos, len):
            guard let n = nodes[id] else { throw .notFound("node \"\(id)\" does not exist") }
            guard pos <= n.text.count, len <= n.text.count - pos else {
                throw .badRequest("range out of range: \(pos)+\(len) > \(n.text.count)", details: ["length": .int(Int64(n.text.count))])
            }
            let removed = Array(n.text[pos..<(pos + len)])
            update(id) { $0.text.removeSubrange(pos..<(pos + len)) }
            return (op, .insert(id, pos: pos, text: removed))
        }
    }

    private func checkCreatable(_ spec: NodeSpec, limits: Limits) throws(RewindError) {
        var seen = Set<Key>()
        var stack = [spec]
        while let s = stack.popLast() {
            if Document.reservedIDs.contains(s.id) { throw .badRequest("\"\(s.id)\" is a reserved id") }
            if nodes[s.id] != nil || !seen.insert(s.id).inserted {
                throw .conflict("node \"\(s.id)\" already exists", details: ["node": .string(s.id.string)])
            }
            if s.text.count > limits.maxTextPerNode {
                throw RewindError(.tooLarge, "a node holds at most \(limits.maxTextPerNode) characters of text")
            }
            var bytes = 0
            for (k, v) in s.props {
                try Node.checkPropValue(v, limits: limits)
                bytes += Node.propBytes(k, v)
            }
            if bytes > limits.maxNodePropBytes {
                throw RewindError(.tooLarge, "the props of one node hold at most \(limits.maxNodePropBytes) bytes")
            }
            stack.append(contentsOf: s.children)
        }
    }

    private mutating func insertSpec(_ spec: NodeSpec, parent: Key, index: Int) {
        var node = Node(id: spec.id, parent: parent, kind: spec.kind, frame: spec.frame)
        node.clips = spec.clips
        node.focusable = spec.focusable
        node.undoScope = spec.undoScope
        node.props = spec.props
        node.propBytes = spec.props.reduce(0) { $0 + Node.propBytes($1.key, $1.value) }
        node.text = spec.text
        insertNode(node, at: index)
        for (i, child) in spec.children.enumerated() { insertSpec(child, parent: spec.id, index: i) }
    }

    /// The spec that recreates the subtree at `id` exactly.
    public func spec(of id: Key) -> NodeSpec {
        let n = nodes[id]!
        var s = NodeSpec(id: id, kind: n.kind, frame: n.frame)
        s.clips = n.clips
        s.focusable = n.focusable
        s.undoScope = n.undoScope
        s.props = n.props
        s.text = n.text
        s.children = n.children.map { spec(of: $0) }
        return s
    }
}

extension Limits {
    /// For replaying the log and rolling back: what was accepted once is accepted again.
    public static let unbounded: Limits = {
        var l = Limits()
        l.maxNodes = .max
        l.maxTextPerNode = .max
        l.maxDocumentText = .max
        l.maxPropsPerNode = .max
        l.maxPropValueBytes = .max
        l.maxNodePropBytes = .max
        l.maxDocumentPropBytes = .max
        l.maxTreeDepth = .max
        l.maxOpsPerTransaction = .max
        l.maxNameBytes = .max
        l.maxJSONDepth = 4_096
        return l
    }()
}
