/// The limits a document and a transaction live within. Each is in docs/protocol.md, "Limits".
public struct Limits: Sendable {
    /// Longest request line, in bytes (PROTOCOL.md default: 1 MiB).
    public var maxFrameBytes = 1 << 20
    /// Nodes in one document, root included.
    public var maxNodes = 50_000
    /// Text of one node, in Unicode scalars.
    public var maxTextPerNode = 1 << 18
    /// Text of all nodes of a document together, in Unicode scalars.
    public var maxDocumentText = 1 << 22
    /// Ops in one transaction (nested `children` of a create count one each).
    public var maxOpsPerTransaction = 1_000
    /// Bytes of a node id, prop key, kind, client id, tx or action name.
    public var maxNameBytes = 256
    /// Levels of nodes below the root. Bounded so that the inverse of deleting a
    /// subtree (one nested create) stays within the JSON depth limit.
    public var maxTreeDepth = 24
    /// Props on one node.
    public var maxPropsPerNode = 256
    /// Bytes of one prop value, encoded as compact JSON.
    public var maxPropValueBytes = 256 << 10
    /// Bytes of all props of one node (keys and values, encoded).
    public var maxNodePropBytes = 1 << 20
    /// Bytes of all props of a document (with text and nodes, this bounds
    /// what one `open` sends and what a document costs in memory).
    public var maxDocumentPropBytes = 16 << 20
    /// Nesting depth of any JSON value on the wire.
    public var maxJSONDepth = 64
    /// How many versions `base` may lag behind the head before a submit is refused.
    public var maxRebaseDistance = 1_000

    public init() {}
}
