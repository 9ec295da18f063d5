/// One node of a document tree, like a view in a view hierarchy.
public struct Node: Sendable, Equatable {
    public var id: Key
    public var parent: Key?
    public var children: [Key] = []
    public var kind: String
    /// `[x, y, w, h]` in the parent's coordinates, kept as the numbers the client sent.
    public var frame: [JSON]
    public var clips = false
    public var focusable = false
    public var undoScope = false
    public var props: [Key: JSON] = [:]
    /// Encoded bytes of `props` (keys and values), kept to enforce the size limits cheaply.
    public var propBytes = 0
    /// Text in Unicode scalars: protocol positions are scalar offsets.
    public var text: [Unicode.Scalar] = []

    public init(id: Key, parent: Key?, kind: String, frame: [JSON] = [0, 0, 0, 0]) {
        self.id = id
        self.parent = parent
        self.kind = kind
        self.frame = frame
    }

    /// What one prop costs: its key and its value, encoded.
    public static func propBytes(_ key: Key, _ value: JSON) -> Int { key.string.utf8.count + value.encodedSize }

    static func checkPropValue(_ value: JSON, limits: Limits) throws(RewindError) {
        guard limits.maxPropValueBytes < Int.max else { return }
        try checkPropValue(encodedSize: value.encodedSize, limits: limits)
    }

    /// The same, for a value whose encoded size the caller has.
    static func checkPropValue(encodedSize: Int, limits: Limits) throws(RewindError) {
        guard encodedSize > limits.maxPropValueBytes else { return }
        throw RewindError(.tooLarge, "a prop value holds at most \(limits.maxPropValueBytes) bytes (encoded)",
                          details: ["limit": .int(Int64(limits.maxPropValueBytes))])
    }

    public var textString: String {
        var s = String.UnicodeScalarView()
        s.append(contentsOf: text)
        return String(s)
    }

    /// The wire form of `state.nodes[id]` (PROTOCOL.md), props sorted by key bytes.
    public var json: JSON {
        .obj([
            ("parent", parent.map { .string($0.string) } ?? .null),
            ("children", .array(children.map { .string($0.string) })),
            ("kind", .string(kind)),
            ("frame", .array(frame)),
            ("clips", .bool(clips)),
            ("focusable", .bool(focusable)),
            ("undoScope", .bool(undoScope)),
            ("props", .object(JSONObject(props.keys.sorted().map { (key: $0.string, value: props[$0]!) }))),
            ("text", .string(textString)),
        ])
    }
}
