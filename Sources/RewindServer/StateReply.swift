import RewindCore

/// The reply to `open` of a large document, produced node by node:
///
///     head   {"re":3,"ok":true,"doc":"d","version":9          (the reply without its closing brace)
///     then   ,"state":{"nodes":{"a":{…},"b":{…}, …            (slices of about `max` bytes)
///     last   }}}\n
///
/// The document is a value (copy-on-write), so later commits do not change
/// what is being sent: the reply is the state at `version`, as if encoded at
/// once. Nodes go in byte order of their ids, like `Document.json`.
final class StateReply: ReplyStream {
    private var head: [UInt8]?
    private let document: Document
    private let ids: [Key]
    private var position = 0
    private(set) var remaining: Int
    private(set) var isDone = false

    /// Bytes the state of `d` takes on the wire, roughly: what the output bound counts before it exists.
    static func estimate(_ d: Document) -> Int { d.propBytes + 4 * d.textScalars + 160 * d.nodeCount }

    init(head reply: [UInt8], document: Document, estimate: Int) {
        var h = reply
        h.removeLast(2)  // "}\n": the state goes inside
        h += Array(#","state":{"nodes":{"#.utf8)
        head = h
        self.document = document
        ids = document.nodes.keys.sorted()
        remaining = estimate
    }

    func next(max: Int) -> [UInt8] {
        var w = JSONWriter(capacity: Swift.min(max, remaining) + 4096)  // (`max` may be Int.max: all of it at once)
        if let h = head {
            w.write(raw: h)
            head = nil
        }
        while position < ids.count && w.bytes.count < max {
            if position > 0 { w.write(raw: "," as StaticString) }
            let id = ids[position]
            w.write(string: id.string)
            w.write(raw: ":" as StaticString)
            document[id]!.write(to: &w)
            position += 1
        }
        if position == ids.count {
            w.write(raw: "}}}\n" as StaticString)
            isDone = true
        }
        remaining = isDone ? 0 : Swift.max(0, remaining - w.bytes.count)
        return w.bytes
    }
}
