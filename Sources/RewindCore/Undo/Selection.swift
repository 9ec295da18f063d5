/// A terminal's text selection (a caret when `start == end`) in one node, in
/// Unicode scalars: what an undo or redo hands back to restore.
public struct Selection: Sendable, Equatable {
    public var node: Key
    public var start: Int
    public var end: Int

    public init(node: Key, start: Int, end: Int) {
        self.node = node
        self.start = start
        self.end = end
    }

    public var json: JSON { .obj([("node", .string(node.string)), ("start", .int(Int64(start))), ("end", .int(Int64(end)))]) }

    /// `{node, start, end}`; `end` defaults to `start` (a caret).
    public static func parse(_ v: JSON?, field: String = "selection") throws(RewindError) -> Selection? {
        guard let v, !v.isNull else { return nil }
        guard let o = v.objectValue, let node = o["node"]?.stringValue, !node.isEmpty,
              let start = o["start"]?.intValue, start >= 0, start <= Int64(Int32.max)
        else { throw .badRequest("`\(field)` must be {node, start, end} with a node id and positions of 0 or more") }
        let end = o["end"]?.intValue ?? start
        guard end >= start, end <= Int64(Int32.max) else { throw .badRequest("`\(field)`: `end` must be at least `start`") }
        return Selection(node: Key(node), start: Int(start), end: Int(end))
    }

    /// Which way a position moves when text is inserted exactly at it.
    public enum Gravity: Sendable { case left, right }

    /// This selection after `op` (text ops in its node move it; others do not).
    public func mapped(through op: Op, gravity: Gravity) -> Selection {
        guard op.node == node else { return self }
        func map(_ x: Int) -> Int {
            switch op {
            case let .insert(_, q, t):
                return (q < x || (q == x && gravity == .right)) ? x + t.count : x
            case let .remove(_, q, l):
                return TextTransform.mapThroughRemove(x, q, l)
            default:
                return x
            }
        }
        return Selection(node: node, start: map(start), end: max(map(start), map(end)))
    }
}

/// What an event records for undo beyond its ops: the undo scope it belongs
/// to, whether it joined a group its terminal holds open, and the selection
/// (before the ops for an edit; the one restored for an undo or redo).
/// Stored as JSON in the `meta` column; an empty meta is stored as NULL.
public struct EventMeta: Sendable, Equatable {
    public var scope: Key?
    public var open = false
    public var selection: Selection?
    /// For an undo or redo: the versions of the events whose change it reverted.
    public var reverted: [Int64] = []
    /// For an edit in an explicit group: the server instance whose terminal
    /// holds the group open. Another instance loading the document closes a
    /// group left open only when that instance is gone (SPEC section 4).
    public var instance: Int64?

    public init(scope: Key? = nil, open: Bool = false, selection: Selection? = nil, reverted: [Int64] = [], instance: Int64? = nil) {
        self.scope = scope
        self.open = open
        self.selection = selection
        self.reverted = reverted
        self.instance = instance
    }

    public var isEmpty: Bool { scope == nil && !open && selection == nil && reverted.isEmpty && instance == nil }

    public var json: JSON {
        .obj([("scope", scope.map { .string($0.string) }), ("open", open ? .bool(true) : nil), ("selection", selection?.json),
              ("reverted", reverted.isEmpty ? nil : .array(reverted.map { .int($0) })), ("instance", instance.map { .int($0) })])
    }

    public static func parse(_ v: JSON) throws(RewindError) -> EventMeta {
        guard let o = v.objectValue else { throw RewindError(.internal, "event meta is not an object") }
        return EventMeta(scope: o["scope"]?.stringValue.map { Key($0) }, open: o["open"]?.boolValue ?? false,
                         selection: try Selection.parse(o["selection"]),
                         reverted: o["reverted"]?.arrayValue?.compactMap(\.intValue) ?? [], instance: o["instance"]?.intValue)
    }
}
