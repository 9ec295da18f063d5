/// A node to create, with the subtree below it (the inverse of `delete` recreates
/// a whole subtree in one op).
public struct NodeSpec: Sendable, Equatable {
    public var id: Key
    public var kind: String
    public var frame: [JSON]
    public var clips = false
    public var focusable = false
    public var undoScope = false
    public var props: [Key: JSON] = [:]
    public var text: [Unicode.Scalar] = []
    public var children: [NodeSpec] = []

    public init(id: Key, kind: String, frame: [JSON]) {
        self.id = id
        self.kind = kind
        self.frame = frame
    }

    /// Levels of the subtree: 1 for a leaf.
    public var height: Int { 1 + (children.map(\.height).max() ?? 0) }

    /// How many nodes the spec creates.
    public var count: Int { 1 + children.reduce(0) { $0 + $1.count } }
}

/// One change to a document. Every op has an exact inverse computed at apply time.
public enum Op: Sendable, Equatable {
    case create(NodeSpec, parent: Key, index: Int)
    case delete(Key)
    /// `key` is `frame`, `clips`, `focusable`, `undoScope` or a prop; a null prop value removes it.
    case set(Key, key: String, value: JSON)
    case move(Key, parent: Key, index: Int)
    case insert(Key, pos: Int, text: [Unicode.Scalar])
    case remove(Key, pos: Int, len: Int)

    public var node: Key {
        switch self {
        case let .create(spec, _, _): return spec.id
        case let .delete(n), let .set(n, _, _), let .move(n, _, _), let .insert(n, _, _), let .remove(n, _, _): return n
        }
    }

    public var isText: Bool {
        switch self { case .insert, .remove: return true; default: return false }
    }

    /// Ops this one counts as against the per-transaction limit.
    public var weight: Int {
        if case let .create(spec, _, _) = self { return spec.count }
        return 1
    }
}

/// Keys of `set` that address node fields rather than props.
enum NodeField: String {
    case frame, clips, focusable, undoScope
    /// What `set` of `key` changes: a field, a prop (nil), or nothing it may
    /// (a field other ops change: kind, text, parent, children; or the op's
    /// own names). Compared, not hashed: every `set` of every commit and
    /// replay asks (short keys compare as two machine words).
    static func settable(_ key: String) -> NodeField?? {
        switch key {
        case "frame": return .frame
        case "clips": return .clips
        case "focusable": return .focusable
        case "undoScope": return .undoScope
        case "kind", "text", "parent", "children", "id", "node", "props": return .none
        default: return .some(nil)
        }
    }
}
