/// `submit` lines, the requests a busy server reads most, read without a
/// JSON tree of their ops: a line in the compact form clients write (no
/// spaces; its ops in `Op.encodeList`'s form, which `JSON.stringify` of
/// `{op, node, …}` objects gives) has its ops read in place
/// (`Op.readCanonicalList`) and its other members as `decode` reads them.
/// Anything else — spaces, another key order inside an op, a duplicate key,
/// a value too deep, an op out of bounds — gives up, and `decode` reads the
/// line and names what is wrong, so both accept and refuse the same lines
/// (`SubmitReaderTests`). Building the tree of the ops and reading the ops
/// out of it was most of a submit's decoding (issue 25's instruction count).
extension Request {
    /// The `submit` in `line` with its ops read (`ops`), exactly as `decode`
    /// and then `Op.parseList` with `limits` would give it; nil for any line
    /// not in that form, which `decode` then reads.
    static func readSubmit(_ line: UnsafeBufferPointer<UInt8>, limits: Limits) -> Request? {
        var r = JSONParser(reading: line, maxDepth: limits.maxJSONDepth)
        guard limits.maxJSONDepth >= 1, r.take("{") else { return nil }
        var members: [(key: String, value: JSON)] = []
        members.reserveCapacity(8)
        var ops: [Op]?
        do {
            repeat {
                guard let key = try r.readString(), r.take(":") else { return nil }
                // A duplicate is `decode`'s to name. Keys are compared with each before them, so past
                // a handful (a submit has at most eight) the line goes to `decode`, which hashes them.
                let isOps = Bytes.equal(key, "ops")
                guard members.count < 16, ops == nil || !isOps,
                      isOps || !members.contains(where: { Bytes.equal($0.key, key) }) else { return nil }
                if isOps {
                    guard let list = try Op.readCanonicalList(&r, limits: limits, depth: 1) else { return nil }
                    ops = list
                } else {
                    members.append((key: key, value: try r.readValue(depth: 1)))
                }
            } while r.take(",")
            guard r.take("}"), r.isAtEnd else { return nil }
        } catch {
            return nil
        }
        let body = JSONObject(members)
        guard let ops, let type = body["type"]?.stringValue, Bytes.equal(type, "submit") else { return nil }
        var id: Int64?
        if let v = body["id"] {
            guard let i = v.intValue else { return nil }
            id = i
        }
        var request = Request(id: id, type: type, body: body)
        request.ops = ops
        return request
    }
}
