/// A document: a tree of nodes under `root`. A value type; ops mutate it in place.
public struct Document: Sendable, Equatable {
    public static let rootID: Key = "root"
    /// Ids that name levels of the responder chain, never nodes.
    public static let reservedIDs: Set<Key> = ["document", "session", "application"]

    public private(set) var nodes: [Key: Node]
    /// Total text scalars over all nodes, kept to enforce the document size limit cheaply.
    public private(set) var textScalars = 0
    /// Total encoded bytes of props over all nodes (`Node.propBytes`), for the same reason.
    public private(set) var propBytes = 0

    public init() {
        nodes = [Document.rootID: Node(id: Document.rootID, parent: nil, kind: "root")]
    }

    public subscript(id: Key) -> Node? { nodes[id] }

    public var nodeCount: Int { nodes.count }

    /// True when `id` is `ancestor` or lies inside its subtree.
    public func isInSubtree(_ id: Key, of ancestor: Key) -> Bool {
        var cur: Key? = id
        while let c = cur {
            if c == ancestor { return true }
            cur = nodes[c]?.parent
        }
        return false
    }

    /// Levels above `id`: 0 for the root.
    public func depth(of id: Key) -> Int {
        var d = 0
        var cur = nodes[id]?.parent
        while let c = cur { d += 1; cur = nodes[c]?.parent }
        return d
    }

    /// Levels in the subtree at `id`: 1 for a leaf.
    public func height(of id: Key) -> Int {
        guard let n = nodes[id] else { return 0 }
        return 1 + (n.children.map { height(of: $0) }.max() ?? 0)
    }

    /// All ids of the subtree at `id`, parents before children (pre-order).
    public func subtreeIDs(_ id: Key) -> [Key] {
        var out: [Key] = []
        var stack = [id]
        while let k = stack.popLast() {
            out.append(k)
            if let n = nodes[k] { stack.append(contentsOf: n.children.reversed()) }
        }
        return out
    }

    // MARK: Primitive mutations (validated by the op layer before they are called)

    mutating func insertNode(_ node: Node, at index: Int) {
        textScalars += node.text.count
        propBytes += node.propBytes
        nodes[node.id] = node
        if let p = node.parent { nodes[p]!.children.insert(node.id, at: index) }
    }

    /// Detaches and removes the subtree at `id`; returns its nodes in pre-order.
    mutating func removeSubtree(_ id: Key) -> [Node] {
        let ids = subtreeIDs(id)
        let removed = ids.map { nodes[$0]! }
        if let p = nodes[id]?.parent, let i = nodes[p]?.children.firstIndex(of: id) {
            nodes[p]!.children.remove(at: i)
        }
        for k in ids {
            textScalars -= nodes[k]!.text.count
            propBytes -= nodes[k]!.propBytes
            nodes[k] = nil
        }
        return removed
    }

    @discardableResult
    mutating func update<T>(_ id: Key, _ body: (inout Node) -> T) -> T { updateIfPresent(id, body)! }

    /// Changes node `id` where the table holds it (one look-up, no copy of
    /// it), keeping the document's totals; nil if there is no such node. A
    /// body that throws leaves the node as it left it.
    mutating func updateIfPresent<T, E: Error>(_ id: Key, _ body: (inout Node) throws(E) -> T) throws(E) -> T? {
        guard let i = nodes.index(forKey: id) else { return nil }
        func change(_ n: inout Node) throws(E) -> (T, text: Int, props: Int) {
            let before = n.text.count, beforeProps = n.propBytes
            let result = try body(&n)
            return (result, n.text.count - before, n.propBytes - beforeProps)
        }
        let (result, text, props) = try change(&nodes.values[i])
        textScalars += text
        propBytes += props
        return result
    }

    mutating func reparent(_ id: Key, to parent: Key, at index: Int) {
        let old = nodes[id]!.parent!
        let i = nodes[old]!.children.firstIndex(of: id)!
        nodes[old]!.children.remove(at: i)
        let clamped = min(index, nodes[parent]!.children.count)
        nodes[parent]!.children.insert(id, at: clamped)
        nodes[id]!.parent = parent
    }

    // MARK: Wire form

    /// A document from its wire form (`json`), as stored in a snapshot.
    public init(json: JSON) throws(RewindError) {
        guard let nodes = json.objectValue?["nodes"]?.objectValue else { throw RewindError(.internal, "document snapshot has no nodes") }
        self.nodes = [:]
        for m in nodes.members {
            guard let o = m.value.objectValue, let kind = o["kind"]?.stringValue, let frame = o["frame"]?.arrayValue,
                  let children = o["children"]?.arrayValue, let props = o["props"]?.objectValue,
                  let text = o["text"]?.stringValue
            else { throw RewindError(.internal, "document snapshot: malformed node \(m.key)") }
            var n = Node(id: Key(m.key), parent: o["parent"]?.stringValue.map { Key($0) }, kind: kind, frame: frame)
            n.children = children.compactMap { $0.stringValue.map { Key($0) } }
            n.clips = o["clips"]?.boolValue ?? false
            n.focusable = o["focusable"]?.boolValue ?? false
            n.undoScope = o["undoScope"]?.boolValue ?? false
            n.props = Dictionary(uniqueKeysWithValues: props.members.map { (Key($0.key), $0.value) })
            n.propBytes = n.props.reduce(0) { $0 + Node.propBytes($1.key, $1.value) }
            n.text = Array(text.unicodeScalars)
            self.nodes[n.id] = n
            textScalars += n.text.count
            propBytes += n.propBytes
        }
        guard self.nodes[Document.rootID] != nil else { throw RewindError(.internal, "document snapshot has no root") }
    }

    /// A document of nodes read whole (`readState`), with their sizes summed.
    init(reading nodes: [Key: Node], textScalars: Int, propBytes: Int) {
        self.nodes = nodes
        self.textScalars = textScalars
        self.propBytes = propBytes
    }

    /// `{"nodes": {...}}`, nodes in byte order of their ids: identical for identical documents.
    public var json: JSON {
        .obj([("nodes", .object(JSONObject(nodes.keys.sorted().map { (key: $0.string, value: nodes[$0]!.json) })))])
    }

    /// `{"root", "nodes"}` with only the subtree at `id` (a preview of one node),
    /// nodes in byte order of their ids; nil when there is no such node.
    public func subtreeJSON(_ id: Key) -> JSON? {
        guard nodes[id] != nil else { return nil }
        let ids = subtreeIDs(id).sorted()
        return .obj([("root", .string(id.string)), ("nodes", .object(JSONObject(ids.map { (key: $0.string, value: nodes[$0]!.json) })))])
    }
}
