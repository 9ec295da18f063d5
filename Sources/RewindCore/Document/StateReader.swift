/// A document read back from the text `writeState` writes (a snapshot's
/// `document`) without a JSON tree: each field in the order the writer put
/// it. Building the generic tree of a 200 KB snapshot, turning it into a
/// `Document` and freeing it was over half of a scrub step (perf). Anything
/// not in that exact form (an older writer, damage) makes the reader give up
/// (nil), and the caller reads the text with `JSONParser.parse` and
/// `Document(json:)`, which accept the same documents and name what is wrong.
extension Document {
    /// The document where `r` stands, its object sitting `depth` deep in the
    /// text (as `JSONParser.parse` counts), or nil when it is not in
    /// `writeState`'s form or is not one `Document(json:)` would take as it is.
    static func readState(_ r: inout JSONParser, depth: Int, maxDepth: Int) throws(JSONParser.Failure) -> Document? {
        // The values inside a node's props sit three objects deeper than the document.
        guard depth + 3 <= maxDepth, r.take("{\"nodes\":{") else { return nil }
        var nodes: [Key: Node] = [:]
        var textScalars = 0, propBytes = 0
        if !r.take("}") {
            repeat {
                guard let id = try r.readString(), r.take(":"), let n = try readNode(&r, id: Key(id), depth: depth + 2) else { return nil }
                guard nodes.updateValue(n, forKey: n.id) == nil else { return nil }  // a repeated id: `parse` refuses it
                textScalars += n.text.count
                propBytes += n.propBytes
            } while r.take(",")
            guard r.take("}") else { return nil }
        }
        guard r.take("}"), nodes[Document.rootID] != nil else { return nil }
        return Document(reading: nodes, textScalars: textScalars, propBytes: propBytes)
    }

    /// One node written by `Node.write(to:)`, its object `depth` deep, up to and including its closing brace.
    private static func readNode(_ r: inout JSONParser, id: Key, depth: Int) throws(JSONParser.Failure) -> Node? {
        guard r.take("{\"parent\":") else { return nil }
        var parent: Key?
        if !r.take("null") {
            guard let p = try r.readString() else { return nil }
            parent = Key(p)
        }
        guard r.take(",\"children\":[") else { return nil }
        var children: [Key] = []
        if !r.take("]") {
            repeat {
                guard let c = try r.readString() else { return nil }
                children.append(Key(c))
            } while r.take(",")
            guard r.take("]") else { return nil }
        }
        guard r.take(",\"kind\":"), let kind = try r.readString(), r.take(",\"frame\":"),
              case let .array(frame) = try r.readValue(depth: depth),
              r.take(",\"clips\":"), let clips = r.readBool(), r.take(",\"focusable\":"), let focusable = r.readBool(),
              r.take(",\"undoScope\":"), let undoScope = r.readBool(), r.take(",\"props\":{")
        else { return nil }
        var n = Node(id: id, parent: parent, kind: kind, frame: frame)
        n.children = children
        n.clips = clips
        n.focusable = focusable
        n.undoScope = undoScope
        if !r.take("}") {
            repeat {
                guard let k = try r.readString(), r.take(":") else { return nil }
                let key = Key(k), value = try r.readValue(depth: depth + 1)
                guard n.props.updateValue(value, forKey: key) == nil else { return nil }
                n.propBytes += Node.propBytes(key, value)
            } while r.take(",")
            guard r.take("}") else { return nil }
        }
        guard r.take(",\"text\":"), let text = try r.readScalars(), r.take("}") else { return nil }
        n.text = text
        return n
    }
}
