/// Ops to and from their wire form (PROTOCOL.md "Ops"), with strict field types.
extension Op {
    public static func parseList(_ value: JSON?, limits: Limits) throws(RewindError) -> [Op] {
        guard let list = value?.arrayValue else { throw .badRequest("`ops` must be an array of ops") }
        var ops: [Op] = []
        var weight = 0
        for (i, item) in list.enumerated() {
            let op: Op
            do { op = try parse(item, limits: limits) } catch { throw error.at(op: i) }
            weight += op.weight
            if weight > limits.maxOpsPerTransaction {
                throw RewindError(.tooLarge, "a transaction holds at most \(limits.maxOpsPerTransaction) ops",
                                  details: ["limit": .int(Int64(limits.maxOpsPerTransaction))])
            }
            ops.append(op)
        }
        return ops
    }

    public static func parse(_ value: JSON, limits: Limits) throws(RewindError) -> Op {
        guard let o = value.objectValue else { throw .badRequest("an op must be an object") }
        guard let kind = o["op"]?.stringValue else { throw .badRequest("op: missing string field `op`") }
        let f = Fields(o, limits: limits)
        switch kind {
        case "create":
            let spec = try parseSpec(o, limits: limits, depth: 0)
            return .create(spec, parent: try f.name("parent"), index: try f.index("index", default: Int.max))
        case "delete":
            return .delete(try f.name("node"))
        case "set":
            guard let key = o["key"]?.stringValue, !key.isEmpty else { throw .badRequest("set: missing string field `key`") }
            guard key.utf8.count <= limits.maxNameBytes else { throw .badRequest("set: `key` longer than \(limits.maxNameBytes) bytes") }
            guard let value = o["value"] else { throw .badRequest("set: missing field `value` (null removes a prop)") }
            return .set(try f.name("node"), key: key, value: value)
        case "move":
            return .move(try f.name("node"), parent: try f.name("parent"), index: try f.index("index", default: Int.max))
        case "insert":
            guard let text = o["text"]?.stringValue else { throw .badRequest("insert: missing string field `text`") }
            return .insert(try f.name("node"), pos: try f.position("pos"), text: Array(text.unicodeScalars))
        case "remove":
            return .remove(try f.name("node"), pos: try f.position("pos"), len: try f.position("len"))
        default:
            throw .badRequest("unknown op \"\(kind)\"; expected create, delete, set, move, insert or remove")
        }
    }

    private static func parseSpec(_ o: JSONObject, limits: Limits, depth: Int) throws(RewindError) -> NodeSpec {
        let f = Fields(o, limits: limits)
        let id: Key = try f.name("node")
        guard let kind = o["kind"]?.stringValue, !kind.isEmpty, kind.utf8.count <= limits.maxNameBytes else {
            throw .badRequest("create: `kind` must be a non-empty string")
        }
        var spec = NodeSpec(id: id, kind: kind, frame: try parseFrame(o["frame"] ?? [0, 0, 0, 0]))
        spec.clips = try f.bool("clips")
        spec.focusable = try f.bool("focusable")
        spec.undoScope = try f.bool("undoScope")
        if let props = o["props"], !props.isNull {
            guard let p = props.objectValue else { throw .badRequest("create: `props` must be an object") }
            guard p.members.count <= limits.maxPropsPerNode else { throw .badRequest("create: more than \(limits.maxPropsPerNode) props") }
            for m in p.members where !m.value.isNull { spec.props[Key(m.key)] = m.value }
        }
        if let t = o["text"], !t.isNull {
            guard let s = t.stringValue else { throw .badRequest("create: `text` must be a string") }
            spec.text = Array(s.unicodeScalars)
        }
        if let c = o["children"], !c.isNull {
            guard let list = c.arrayValue, depth < limits.maxJSONDepth else { throw .badRequest("create: `children` must be an array") }
            for item in list {
                guard let child = item.objectValue else { throw .badRequest("create: each child must be an object") }
                spec.children.append(try parseSpec(child, limits: limits, depth: depth + 1))
            }
        }
        return spec
    }

    static func parseFrame(_ v: JSON) throws(RewindError) -> [JSON] {
        guard let a = v.arrayValue, a.count == 4, a.allSatisfy(\.isNumber) else {
            throw .badRequest("`frame` must be [x, y, w, h], four numbers")
        }
        return a
    }

    // MARK: Encoding

    public var json: JSON {
        switch self {
        case let .create(spec, parent, index):
            var members = Op.specMembers(spec)
            members.insert((key: "op", value: "create"), at: 0)
            members.insert((key: "parent", value: .string(parent.string)), at: 2)
            members.insert((key: "index", value: .int(Int64(index))), at: 3)
            return .object(JSONObject(members))
        case let .delete(n):
            return .obj([("op", "delete"), ("node", .string(n.string))])
        case let .set(n, key, value):
            return .obj([("op", "set"), ("node", .string(n.string)), ("key", .string(key)), ("value", value)])
        case let .move(n, parent, index):
            return .obj([("op", "move"), ("node", .string(n.string)), ("parent", .string(parent.string)), ("index", .int(Int64(index)))])
        case let .insert(n, pos, text):
            var s = String.UnicodeScalarView()
            s.append(contentsOf: text)
            return .obj([("op", "insert"), ("node", .string(n.string)), ("pos", .int(Int64(pos))), ("text", .string(String(s)))])
        case let .remove(n, pos, len):
            return .obj([("op", "remove"), ("node", .string(n.string)), ("pos", .int(Int64(pos))), ("len", .int(Int64(len)))])
        }
    }

    private static func specMembers(_ spec: NodeSpec) -> [(key: String, value: JSON)] {
        var s = String.UnicodeScalarView()
        s.append(contentsOf: spec.text)
        var m: [(key: String, value: JSON)] = [
            (key: "node", value: .string(spec.id.string)),
            (key: "kind", value: .string(spec.kind)),
            (key: "frame", value: .array(spec.frame)),
            (key: "clips", value: .bool(spec.clips)),
            (key: "focusable", value: .bool(spec.focusable)),
            (key: "undoScope", value: .bool(spec.undoScope)),
            (key: "props", value: .object(JSONObject(spec.props.keys.sorted().map { (key: $0.string, value: spec.props[$0]!) }))),
            (key: "text", value: .string(String(s))),
        ]
        if !spec.children.isEmpty {
            m.append((key: "children", value: .array(spec.children.map { .object(JSONObject(specMembers($0))) })))
        }
        return m
    }

    public static func encodeList(_ ops: [Op]) -> JSON { .array(ops.map(\.json)) }
}

/// Typed access to an op's fields, with errors that name the field.
private struct Fields {
    let o: JSONObject
    let limits: Limits
    init(_ o: JSONObject, limits: Limits) { self.o = o; self.limits = limits }

    func name(_ field: String) throws(RewindError) -> Key {
        guard let s = o[field]?.stringValue, !s.isEmpty else { throw .badRequest("missing string field `\(field)`") }
        guard s.utf8.count <= limits.maxNameBytes else { throw .badRequest("`\(field)` longer than \(limits.maxNameBytes) bytes") }
        return Key(s)
    }

    func index(_ field: String, default def: Int? = nil) throws(RewindError) -> Int {
        guard let v = o[field], !v.isNull else {
            if let def { return def }
            throw .badRequest("missing integer field `\(field)`")
        }
        guard let i = v.intValue else { throw .badRequest("`\(field)` must be an integer") }
        guard i >= 0 else { throw .badRequest("`\(field)` out of range: \(i) is negative") }
        return Int(clamping: i)
    }

    /// A text position or length: no text is longer than `maxTextPerNode`, so
    /// nothing past it is in range in any state, and positions that rebasing
    /// moves stay far from the integer's bounds.
    func position(_ field: String) throws(RewindError) -> Int {
        let i = try index(field)
        guard i <= limits.maxTextPerNode else {
            throw .badRequest("`\(field)` out of range: \(i) is past the longest text a node holds (\(limits.maxTextPerNode))",
                              details: ["limit": .int(Int64(limits.maxTextPerNode))])
        }
        return i
    }

    func bool(_ field: String) throws(RewindError) -> Bool {
        guard let v = o[field], !v.isNull else { return false }
        guard let b = v.boolValue else { throw .badRequest("`\(field)` must be true or false") }
        return b
    }
}
