/// The wire form of a document's state written straight into bytes: the same
/// text as encoding `Node.json` / `Document.json`, without building their JSON
/// trees first (an `open` or a scrub step of a 200-node document spent most of
/// its encoding building and freeing them: ~27k instructions a node, callgrind).
extension Node {
    /// What `JSONWriter.write(json)` writes, byte for byte.
    public func write(to w: inout JSONWriter) {
        w.write(raw: "{\"parent\":" as StaticString)
        if let parent { w.write(string: parent.string) } else { w.write(raw: "null" as StaticString) }
        w.write(raw: ",\"children\":[" as StaticString)
        for (i, c) in children.enumerated() {
            if i > 0 { w.write(raw: "," as StaticString) }
            w.write(string: c.string)
        }
        w.write(raw: "],\"kind\":" as StaticString)
        w.write(string: kind)
        w.write(raw: ",\"frame\":" as StaticString)
        w.write(.array(frame))
        w.write(raw: clips ? ",\"clips\":true" as StaticString : ",\"clips\":false")
        w.write(raw: focusable ? ",\"focusable\":true" as StaticString : ",\"focusable\":false")
        w.write(raw: undoScope ? ",\"undoScope\":true" as StaticString : ",\"undoScope\":false")
        w.write(raw: ",\"props\":{" as StaticString)
        for (i, k) in props.keys.sorted().enumerated() {
            if i > 0 { w.write(raw: "," as StaticString) }
            w.write(string: k.string)
            w.write(raw: ":" as StaticString)
            w.write(props[k]!)
        }
        w.write(raw: "},\"text\":" as StaticString)
        w.write(scalars: text)
        w.write(raw: "}" as StaticString)
    }
}

extension Document {
    /// What `JSONWriter.write(json)` writes (`{"nodes":{…}}`, nodes in byte order of their ids), byte for byte.
    public func writeState(to w: inout JSONWriter) {
        w.write(raw: "{\"nodes\":{" as StaticString)
        for (i, id) in nodes.keys.sorted().enumerated() {
            if i > 0 { w.write(raw: "," as StaticString) }
            w.write(string: id.string)
            w.write(raw: ":" as StaticString)
            nodes[id]!.write(to: &w)
        }
        w.write(raw: "}}" as StaticString)
    }
}
