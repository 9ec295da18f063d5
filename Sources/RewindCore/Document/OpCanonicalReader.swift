/// Ops read back from the log without a JSON tree. Every entry's ops were
/// written by `Op.encodeList` through `JSONWriter` — compact, keys in one
/// order — so a reader that expects exactly that form reads each field in
/// turn; building the generic tree and looking fields up in it was 12 % of a
/// replay (perf, 1,000,000 events). Anything else (an older writer, an
/// import, damage) makes it give up, and `parseList` reads the text and names
/// what is wrong, so both paths accept and refuse the same texts.
extension Op {
    /// The ops of `text` if it is in `encodeList`'s form (else nil), as `parseList` with `limits` would read them.
    public static func readCanonicalList(_ text: UnsafeBufferPointer<UInt8>, limits: Limits) -> [Op]? {
        var r = JSONParser(reading: text, maxDepth: limits.maxJSONDepth)
        do {
            guard let ops = try readCanonicalList(&r, limits: limits, depth: 0) else { return nil }
            return r.isAtEnd ? ops : nil
        } catch {
            return nil
        }
    }

    /// The list where `r` stands, sitting `depth` deep in its text (0: the
    /// text is the list; 1: a member of the object that is the text, as in a
    /// `submit` line), or nil when it is not in `encodeList`'s form.
    static func readCanonicalList(_ r: inout JSONParser, limits: Limits, depth: Int) throws(JSONParser.Failure) -> [Op]? {
        // Depths counted as `parse` counts them (the list 1, an op 2, its values 2,
        // a level of children 2 more; `depth` more for each), against the same bound.
        guard depth + 1 <= limits.maxJSONDepth, r.take("[") else { return nil }
        var ops: [Op] = []
        var weight = 0
        if !r.take("]") {
            guard depth + 2 <= limits.maxJSONDepth else { return nil }
            repeat {
                guard let op = try readOp(&r, limits, base: depth) else { return nil }
                weight += op.weight
                guard weight <= limits.maxOpsPerTransaction else { return nil }
                ops.append(op)
            } while r.take(",")
            guard r.take("]") else { return nil }
        }
        return ops
    }

    private static func readOp(_ r: inout JSONParser, _ limits: Limits, base: Int) throws(JSONParser.Failure) -> Op? {
        guard r.take("{\"op\":"), let kind = try r.readString(), r.take(",\"node\":"), let node = try name(&r, limits) else { return nil }
        let op: Op
        switch kind {
        case "insert":
            guard r.take(",\"pos\":"), let pos = try position(&r, limits), r.take(",\"text\":"), let text = try r.readString() else { return nil }
            op = .insert(node, pos: pos, text: Array(text.unicodeScalars))
        case "remove":
            guard r.take(",\"pos\":"), let pos = try position(&r, limits), r.take(",\"len\":"), let len = try position(&r, limits) else { return nil }
            op = .remove(node, pos: pos, len: len)
        case "set":
            guard r.take(",\"key\":"), let key = try r.readString(), !key.isEmpty, key.utf8.count <= limits.maxNameBytes,
                  r.take(",\"value\":") else { return nil }
            op = .set(node, key: key, value: try r.readValue(depth: base + 2))
        case "delete":
            op = .delete(node)
        case "move":
            guard r.take(",\"parent\":"), let parent = try name(&r, limits), r.take(",\"index\":"), let index = try index(&r) else { return nil }
            op = .move(node, parent: parent, index: index)
        case "create":
            guard r.take(",\"parent\":"), let parent = try name(&r, limits), r.take(",\"index\":"), let index = try index(&r),
                  let spec = try specRest(&r, id: node, limits, depth: 0, base: base) else { return nil }
            return .create(spec, parent: parent, index: index)  // `specRest` read its closing brace
        default:
            return nil
        }
        return r.take("}") ? op : nil
    }

    /// A node's fields after its `node`, up to and including its closing brace.
    private static func specRest(_ r: inout JSONParser, id: Key, _ limits: Limits, depth: Int, base: Int) throws(JSONParser.Failure) -> NodeSpec? {
        guard r.take(",\"kind\":"), let kind = try r.readString(), !kind.isEmpty, kind.utf8.count <= limits.maxNameBytes,
              r.take(",\"frame\":"), let frame = try? parseFrame(try r.readValue(depth: base + 2 + 2 * depth)),
              r.take(",\"clips\":"), let clips = r.readBool(), r.take(",\"focusable\":"), let focusable = r.readBool(),
              r.take(",\"undoScope\":"), let undoScope = r.readBool(), r.take(",\"props\":") else { return nil }
        var spec = NodeSpec(id: id, kind: kind, frame: frame)
        spec.clips = clips
        spec.focusable = focusable
        spec.undoScope = undoScope
        guard let props = try r.readValue(depth: base + 2 + 2 * depth).objectValue, props.members.count <= limits.maxPropsPerNode else { return nil }
        for m in props.members where !m.value.isNull { spec.props[Key(m.key)] = m.value }
        guard r.take(",\"text\":"), let text = try r.readString() else { return nil }
        spec.text = Array(text.unicodeScalars)
        if r.take(",\"children\":[") {
            // The children's list and each child object, as deep as `parse` would find them.
            guard depth < limits.maxJSONDepth, base + 4 + 2 * depth <= limits.maxJSONDepth else { return nil }
            if !r.take("]") {
                repeat {
                    guard r.take("{\"node\":"), let id = try name(&r, limits),
                          let child = try specRest(&r, id: id, limits, depth: depth + 1, base: base) else { return nil }
                    spec.children.append(child)
                } while r.take(",")
                guard r.take("]") else { return nil }
            }
        }
        return r.take("}") ? spec : nil
    }

    private static func name(_ r: inout JSONParser, _ limits: Limits) throws(JSONParser.Failure) -> Key? {
        guard let s = try r.readString(), !s.isEmpty, s.utf8.count <= limits.maxNameBytes else { return nil }
        return Key(s)
    }

    private static func index(_ r: inout JSONParser) throws(JSONParser.Failure) -> Int? {
        guard let i = try r.readInt(), i >= 0 else { return nil }
        return Int(clamping: i)
    }

    private static func position(_ r: inout JSONParser, _ limits: Limits) throws(JSONParser.Failure) -> Int? {
        guard let i = try index(&r), i <= limits.maxTextPerNode else { return nil }
        return i
    }
}
