/// A request line, decoded: `{"id": 7, "type": "submit", …}`.
/// A request that could not be decoded, with its `id` when that much was readable.
public struct DecodeFailure: Error, Sendable {
    public let error: RewindError
    public let id: Int64?
}

public struct Request: Sendable {
    public let id: Int64?
    public let type: String
    public let body: JSONObject
    /// Fields every reply to this request carries besides its own: `"shortcut":
    /// true` on the result of a launch shortcut, which answers the `hello`.
    public var replyTag: [(String, JSON?)] = []
    /// A `submit`'s ops, read while decoding when the line was in the compact
    /// form (`readSubmit`); its `body` then has no `ops` member. Nil: read
    /// them from `body` (`Op.parseList`).
    public internal(set) var ops: [Op]?

    /// Decodes one frame. A failure carries the `id` when it could be read, so
    /// the error can still be addressed to the request (`re`).
    /// `submitLimits` (its depth bound `maxDepth`): a `submit` in the compact form has its
    /// ops read as `Op.parseList` with these limits reads them, without a tree (`readSubmit`).
    public static func decode(_ line: [UInt8], maxDepth: Int, submitLimits: Limits? = nil) -> Result<Request, DecodeFailure> {
        guard line.withUnsafeBufferPointer({ UTF8Text.isValid($0) }) else {
            return .failure(DecodeFailure(error: RewindError(.badFrame, "not valid UTF-8"), id: scanID(line)))
        }
        if let limits = submitLimits, limits.maxJSONDepth == maxDepth,
           let r = line.withUnsafeBufferPointer({ readSubmit($0, limits: limits) })
        {
            return .success(r)
        }
        let value: JSON
        do {
            value = try JSONParser.parse(line, maxDepth: maxDepth)
        } catch {
            let id = scanID(line)
            switch error.kind {
            case .syntax: return .failure(DecodeFailure(error: RewindError(.badFrame, "not valid JSON: \(error.message) at byte \(error.offset)"), id: id))
            case .tooDeep: return .failure(DecodeFailure(error: RewindError(.tooLarge, "JSON \(error.message)"), id: id))
            case .duplicateKey, .nul: return .failure(DecodeFailure(error: RewindError(.badRequest, error.message), id: id))
            }
        }
        guard let o = value.objectValue else { return .failure(DecodeFailure(error: RewindError(.badFrame, "a request must be a JSON object"), id: nil)) }
        var id: Int64?
        if let v = o["id"] {
            guard let i = v.intValue else { return .failure(DecodeFailure(error: RewindError(.badRequest, "`id` must be an integer"), id: nil)) }
            id = i
        }
        guard let type = o["type"]?.stringValue else {
            return .failure(DecodeFailure(error: RewindError(.badRequest, "missing string field `type`"), id: id))
        }
        return .success(Request(id: id, type: type, body: o))
    }

    /// Best effort for a line that does not parse: the integer after the first
    /// `"id":`, so that even a broken request can be answered with its `re`.
    static func scanID(_ line: [UInt8]) -> Int64? {
        let key = Array("\"id\"".utf8)
        guard line.count > key.count else { return nil }
        for start in 0...(line.count - key.count) where line[start..<(start + key.count)].elementsEqual(key) {
            var i = start + key.count
            func skip() { while i < line.count, line[i] == 0x20 || line[i] == 0x09 { i += 1 } }
            skip()
            guard i < line.count, line[i] == UInt8(ascii: ":") else { continue }
            i += 1
            skip()
            var j = i
            if j < line.count, line[j] == UInt8(ascii: "-") { j += 1 }
            while j < line.count, line[j] >= UInt8(ascii: "0"), line[j] <= UInt8(ascii: "9") { j += 1 }
            return Int64(String(decoding: line[i..<j], as: UTF8.self))
        }
        return nil
    }

    public init(id: Int64?, type: String, body: JSONObject) {
        self.id = id
        self.type = type
        self.body = body
    }

    // Typed fields: a missing or wrong-typed field is `bad_request` naming it.

    public func string(_ field: String, maxBytes: Int = 256) throws(RewindError) -> String {
        guard let s = body[field]?.stringValue, !s.isEmpty else { throw .badRequest("\(type): missing string field `\(field)`") }
        guard s.utf8.count <= maxBytes else { throw .badRequest("\(type): `\(field)` longer than \(maxBytes) bytes") }
        return s
    }

    public func optionalString(_ field: String, maxBytes: Int = 256) throws(RewindError) -> String? {
        guard let v = body[field], !v.isNull else { return nil }
        guard let s = v.stringValue else { throw .badRequest("\(type): `\(field)` must be a string") }
        guard s.utf8.count <= maxBytes else { throw .badRequest("\(type): `\(field)` longer than \(maxBytes) bytes") }
        return s
    }

    public func int(_ field: String) throws(RewindError) -> Int64 {
        guard let v = body[field], !v.isNull else { throw .badRequest("\(type): missing integer field `\(field)`") }
        guard let i = v.intValue else { throw .badRequest("\(type): `\(field)` must be an integer") }
        return i
    }

    public func optionalInt(_ field: String) throws(RewindError) -> Int64? {
        guard let v = body[field], !v.isNull else { return nil }
        guard let i = v.intValue else { throw .badRequest("\(type): `\(field)` must be an integer") }
        return i
    }

    public func optionalBool(_ field: String) throws(RewindError) -> Bool? {
        guard let v = body[field], !v.isNull else { return nil }
        guard let b = v.boolValue else { throw .badRequest("\(type): `\(field)` must be true or false") }
        return b
    }
}

/// Server → client lines. Each is one JSON object and a newline.
public enum Message {
    public static func reply(_ re: Int64?, _ fields: [(String, JSON?)] = []) -> [UInt8] {
        // Written straight, as `line(.obj(…))` would write it (nil members left out):
        // every commit answers one, and the tree around it was most of its cost.
        var w = JSONWriter(capacity: 64)
        writeReplyHead(re, into: &w)
        for (key, value) in fields {
            guard let value else { continue }
            w.write(raw: "," as StaticString)
            w.write(string: key)
            w.write(raw: ":" as StaticString)
            w.write(value)
        }
        w.write(raw: "}\n" as StaticString)
        return w.bytes
    }

    /// `{"re":…,"ok":true,"version":…}`, a submit's answer: what `reply(re, [("version", .int(version))])`
    /// writes, without the list of members made and freed for every commit.
    public static func versionReply(_ re: Int64?, version: Int64) -> [UInt8] {
        var w = JSONWriter(capacity: 64)
        writeReplyHead(re, into: &w)
        w.write(raw: ",\"version\":" as StaticString)
        w.write(int: version)
        w.write(raw: "}\n" as StaticString)
        return w.bytes
    }

    /// `{"re":…,"ok":true` (or `{"ok":true` with no `re`): how every reply begins.
    private static func writeReplyHead(_ re: Int64?, into w: inout JSONWriter) {
        if let re {
            w.write(raw: "{\"re\":" as StaticString)
            w.write(int: re)
            w.write(raw: ",\"ok\":true" as StaticString)
        } else {
            w.write(raw: "{\"ok\":true" as StaticString)
        }
    }

    /// A reply to `r`, with its tag.
    public static func reply(to r: Request, _ fields: [(String, JSON?)] = []) -> [UInt8] { reply(r.id, r.replyTag + fields) }

    public static func reply(to r: Request, _ fields: [(String, JSON?)], events: [[UInt8]]) -> [UInt8] {
        reply(r.id, r.replyTag + fields, events: events)
    }

    /// A reply whose last field is a list of events already encoded (`Event.wireBytes`).
    public static func reply(_ re: Int64?, _ fields: [(String, JSON?)], events: [[UInt8]], after more: [(String, JSON?)] = []) -> [UInt8] {
        var head = line(.obj([("re", re.map { .int($0) }), ("ok", .bool(true))] + fields + more))
        head.removeLast(2)  // "}\n"
        head += Array(#","events":["#.utf8)
        for (i, e) in events.enumerated() {
            if i > 0 { head.append(UInt8(ascii: ",")) }
            head += e
        }
        head += Array("]}\n".utf8)
        return head
    }

    public static func error(_ re: Int64?, _ e: RewindError, tag: [(String, JSON?)] = []) -> [UInt8] {
        line(.obj([("re", re.map { .int($0) }), ("ok", .bool(false))] + tag + [("error", e.json)]))
    }

    public static func line(_ v: JSON) -> [UInt8] {
        var w = JSONWriter(capacity: 128)
        w.write(v)
        var b = w.bytes
        b.append(0x0A)
        return b
    }
}
