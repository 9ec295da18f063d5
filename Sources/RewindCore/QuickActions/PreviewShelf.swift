/// A peeked view of a document (PROTOCOL.md `peek`): what `pop` and
/// `preview_action` act on. It holds no state of the document — a preview
/// that is never popped costs its few fields and nothing else.
public struct Preview: Sendable, Equatable {
    public let id: String
    public let doc: String
    public let node: Key?
    public let version: Int64
    public let actions: [PreviewAction]
}

/// The previews one connection holds: at most `capacity`; a new one past it
/// expires the oldest, as a peek the user never committed to is let go.
public struct PreviewShelf: Sendable {
    public static let capacity = 8
    public private(set) var held: [Preview] = []
    private var made = 0

    public init() {}

    public mutating func add(doc: String, node: Key?, version: Int64, actions: [PreviewAction]) -> Preview {
        made += 1
        let p = Preview(id: "pv\(made)", doc: doc, node: node, version: version, actions: actions)
        held.append(p)
        if held.count > Self.capacity { held.removeFirst(held.count - Self.capacity) }
        return p
    }

    public func find(_ id: String) -> Preview? { held.first { $0.id == id } }

    /// Ends a preview (popped, or an action chosen).
    @discardableResult
    public mutating func end(_ id: String) -> Preview? {
        guard let i = held.firstIndex(where: { $0.id == id }) else { return nil }
        return held.remove(at: i)
    }
}
