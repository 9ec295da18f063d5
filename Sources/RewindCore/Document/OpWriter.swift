/// Ops written straight into bytes: the same text as `JSONWriter` gives for
/// `Op.encodeList` (`EncodingFastPathTests`), without the JSON tree in
/// between. Every commit writes its ops (fingerprinted, sent, stored) and
/// their inverse (stored): through the tree that was ~12k instructions a
/// commit (callgrind, issue 25). A `create` writes its node spec through the
/// tree still — rare, and its spec is a tree of props anyway.
extension Op {
    /// `encodeList(ops)` as `JSONWriter` writes it.
    public static func encodedList(_ ops: [Op]) -> [UInt8] {
        var w = JSONWriter(capacity: 16 + 64 * ops.count)
        writeList(ops, into: &w)
        return w.bytes
    }

    public static func writeList(_ ops: [Op], into w: inout JSONWriter) {
        w.write(raw: "[" as StaticString)
        for (k, op) in ops.enumerated() {
            if k > 0 { w.write(raw: "," as StaticString) }
            op.write(into: &w)
        }
        w.write(raw: "]" as StaticString)
    }

    /// `json`, written: the members in the order `json` gives them.
    func write(into w: inout JSONWriter) {
        switch self {
        case .create:
            return w.write(json)  // the whole object, its closing brace too
        case let .delete(n):
            w.write(raw: "{\"op\":\"delete\",\"node\":" as StaticString); w.write(string: n.string)
        case let .set(n, key, value):
            w.write(raw: "{\"op\":\"set\",\"node\":" as StaticString); w.write(string: n.string)
            w.write(raw: ",\"key\":" as StaticString); w.write(string: key)
            w.write(raw: ",\"value\":" as StaticString); w.write(value)
        case let .move(n, parent, index):
            w.write(raw: "{\"op\":\"move\",\"node\":" as StaticString); w.write(string: n.string)
            w.write(raw: ",\"parent\":" as StaticString); w.write(string: parent.string)
            w.write(raw: ",\"index\":" as StaticString); w.write(int: Int64(index))
        case let .insert(n, pos, text):
            var s = String.UnicodeScalarView()
            s.append(contentsOf: text)
            w.write(raw: "{\"op\":\"insert\",\"node\":" as StaticString); w.write(string: n.string)
            w.write(raw: ",\"pos\":" as StaticString); w.write(int: Int64(pos))
            w.write(raw: ",\"text\":" as StaticString); w.write(string: String(s))
        case let .remove(n, pos, len):
            w.write(raw: "{\"op\":\"remove\",\"node\":" as StaticString); w.write(string: n.string)
            w.write(raw: ",\"pos\":" as StaticString); w.write(int: Int64(pos))
            w.write(raw: ",\"len\":" as StaticString); w.write(int: Int64(len))
        }
        w.write(raw: "}" as StaticString)
    }
}
