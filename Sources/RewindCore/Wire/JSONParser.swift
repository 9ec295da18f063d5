/// Parses one JSON text from bytes, strictly (RFC 8259) and with limits.
///
/// Rejects: invalid UTF-8, trailing garbage, duplicate keys, nesting past
/// `maxDepth`, non-finite numbers and the NUL character (PostgreSQL text
/// cannot store U+0000, so accepting it would fail a commit later).
public struct JSONParser {
    public struct Failure: Error, Equatable, Sendable {
        public enum Kind: Sendable { case syntax, duplicateKey, tooDeep, nul }
        public let kind: Kind
        public let message: String
        public let offset: Int
    }

    public static let defaultMaxDepth = 64

    public static func parse(_ buf: UnsafeBufferPointer<UInt8>, maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSON {
        var p = JSONParser(bytes: buf, maxDepth: maxDepth)
        p.skipSpace()
        let v = try p.value(depth: 0)
        p.skipSpace()
        if p.i != buf.count { throw p.fail(.syntax, "unexpected data after the JSON value") }
        return v
    }

    public static func parse(_ bytes: [UInt8], maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSON {
        try bytes.withUnsafeBufferPointer { buf throws(Failure) in try parse(buf, maxDepth: maxDepth) }
    }

    /// Straight from the string's UTF-8 storage (no copy of the text).
    public static func parse(_ text: String, maxDepth: Int = defaultMaxDepth) throws(Failure) -> JSON {
        var text = text
        let result = text.withUTF8 { buf in Result { () throws(Failure) -> JSON in try parse(buf, maxDepth: maxDepth) } }
        return try result.get()
    }

    private let b: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private var i = 0

    private init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.b = bytes
        self.maxDepth = maxDepth
    }

    private func fail(_ kind: Failure.Kind, _ message: String) -> Failure {
        Failure(kind: kind, message: message, offset: i)
    }

    private mutating func skipSpace() {
        while i < b.count, b[i] == 0x20 || b[i] == 0x09 || b[i] == 0x0A || b[i] == 0x0D { i += 1 }
    }

    private mutating func value(depth: Int) throws(Failure) -> JSON {
        guard i < b.count else { throw fail(.syntax, "unexpected end of input") }
        switch b[i] {
        case UInt8(ascii: "{"): return try object(depth: depth + 1)
        case UInt8(ascii: "["): return try array(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw fail(.syntax, "unexpected character")
        }
    }

    private mutating func literal(_ word: StaticString) throws(Failure) {
        let n = word.utf8CodeUnitCount
        guard i + n <= b.count else { throw fail(.syntax, "unexpected end of input") }
        for k in 0..<n where b[i + k] != word.utf8Start[k] { throw fail(.syntax, "invalid literal") }
        i += n
    }

    private mutating func object(depth: Int) throws(Failure) -> JSON {
        if depth > maxDepth { throw fail(.tooDeep, "nesting deeper than \(maxDepth)") }
        i += 1
        var members: [(key: String, value: JSON)] = []
        // Objects on the wire have a handful of members: comparing each new key
        // with the ones before is cheaper than hashing; big ones switch to a set.
        var seen: Set<Key>?
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "}") { i += 1; return .object(JSONObject(members)) }
        while true {
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: "\"") else { throw fail(.syntax, "expected a string key") }
            let key = try string()
            let duplicate: Bool
            if members.count < 16 {
                duplicate = members.contains { Bytes.equal($0.key, key) }
            } else {
                if seen == nil { seen = Set(members.map { Key($0.key) }) }
                duplicate = !seen!.insert(Key(key)).inserted
            }
            if duplicate { throw fail(.duplicateKey, "duplicate key \"\(key)\"") }
            skipSpace()
            guard i < b.count, b[i] == UInt8(ascii: ":") else { throw fail(.syntax, "expected ':'") }
            i += 1
            skipSpace()
            members.append((key: key, value: try value(depth: depth)))
            skipSpace()
            guard i < b.count else { throw fail(.syntax, "unexpected end of input") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "}") { i += 1; return .object(JSONObject(members)) }
            throw fail(.syntax, "expected ',' or '}'")
        }
    }

    private mutating func array(depth: Int) throws(Failure) -> JSON {
        if depth > maxDepth { throw fail(.tooDeep, "nesting deeper than \(maxDepth)") }
        i += 1
        var items: [JSON] = []
        skipSpace()
        if i < b.count, b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try value(depth: depth))
            skipSpace()
            guard i < b.count else { throw fail(.syntax, "unexpected end of input") }
            if b[i] == UInt8(ascii: ",") { i += 1; continue }
            if b[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            throw fail(.syntax, "expected ',' or ']'")
        }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard i + 4 <= b.count else { throw fail(.syntax, "truncated \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = b[i]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail(.syntax, "invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    private mutating func string() throws(Failure) -> String {
        i += 1  // opening quote
        let start = i
        // Fast path: no escapes.
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                let s = try utf8String(UnsafeBufferPointer(rebasing: b[start..<i]))
                i += 1
                return s
            }
            if c == UInt8(ascii: "\\") { break }
            if c < 0x20 { throw fail(c == 0 ? .nul : .syntax, c == 0 ? "NUL is not allowed" : "control character in string") }
            i += 1
        }
        var out = [UInt8](UnsafeBufferPointer(rebasing: b[start..<i]))
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") {
                i += 1
                return try out.withUnsafeBufferPointer { p throws(Failure) in try utf8String(p) }
            }
            if c < 0x20 { throw fail(c == 0 ? .nul : .syntax, c == 0 ? "NUL is not allowed" : "control character in string") }
            if c != UInt8(ascii: "\\") { out.append(c); i += 1; continue }
            i += 1
            guard i < b.count else { break }
            let e = b[i]
            i += 1
            switch e {
            case UInt8(ascii: "\""): out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C)
            case UInt8(ascii: "/"): out.append(0x2F)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                var code = try hex4()
                if code >= 0xD800 && code < 0xDC00 {
                    guard i + 2 <= b.count, b[i] == UInt8(ascii: "\\"), b[i + 1] == UInt8(ascii: "u") else {
                        throw fail(.syntax, "lone surrogate in \\u escape")
                    }
                    i += 2
                    let low = try hex4()
                    guard low >= 0xDC00 && low < 0xE000 else { throw fail(.syntax, "invalid surrogate pair") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if code >= 0xDC00 && code < 0xE000 {
                    throw fail(.syntax, "lone surrogate in \\u escape")
                }
                if code == 0 { throw fail(.nul, "NUL is not allowed") }
                guard let scalar = Unicode.Scalar(code) else { throw fail(.syntax, "invalid \\u escape") }
                out.append(contentsOf: Array(String(Character(scalar)).utf8))
            default: throw fail(.syntax, "invalid escape")
            }
        }
        throw fail(.syntax, "unterminated string")
    }

    private func utf8String(_ p: UnsafeBufferPointer<UInt8>) throws(Failure) -> String {
        // ASCII (most keys and values) cannot be invalid: the generic
        // `String(validating:)` cost ~900 instructions a string (callgrind).
        if UTF8Text.isASCII(p) { return String(decoding: p, as: UTF8.self) }
        guard let s = String(validating: p, as: UTF8.self) else { throw fail(.syntax, "invalid UTF-8") }
        return s
    }

    private mutating func number() throws(Failure) -> JSON {
        let start = i
        var isInteger = true
        if b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count else { throw fail(.syntax, "invalid number") }
        if b[i] == UInt8(ascii: "0") {
            i += 1
        } else if b[i] >= UInt8(ascii: "1") && b[i] <= UInt8(ascii: "9") {
            while i < b.count, b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") { i += 1 }
        } else {
            throw fail(.syntax, "invalid number")
        }
        if i < b.count, b[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            let d = i
            while i < b.count, b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") { i += 1 }
            if i == d { throw fail(.syntax, "invalid number") }
        }
        if i < b.count, b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            if i < b.count, b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-") { i += 1 }
            let d = i
            while i < b.count, b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") { i += 1 }
            if i == d { throw fail(.syntax, "invalid number") }
        }
        // An integer is read in place (a `String` made to be parsed was ~350
        // instructions a number, three a submit); one past Int64 is a double.
        if isInteger, let v = Bytes.decimal(UnsafeBufferPointer(rebasing: b[start..<i])) { return .int(v) }
        let text = String(decoding: UnsafeBufferPointer(rebasing: b[start..<i]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw fail(.syntax, "number out of range") }
        return .double(d)
    }
}

/// UTF-8 checks that cost nothing for ASCII, the common case.
public enum UTF8Text {
    public static func isASCII(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        // Eight bytes at a time: no high bit in any of them.
        if let base = p.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= p.count {
                if raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
                i += 8
            }
        }
        while i < p.count {
            if p[i] >= 0x80 { return false }
            i += 1
        }
        return true
    }

    public static func isValid(_ p: UnsafeBufferPointer<UInt8>) -> Bool {
        isASCII(p) || String(validating: p, as: UTF8.self) != nil
    }
}

/// Reading a text of a known shape one piece at a time (`Op.readCanonicalList`):
/// the same strings, numbers and values as `parse`, with no tree around them.
/// A reader that meets anything it does not expect gives up and leaves the
/// text to `parse`, which names the problem.
extension JSONParser {
    init(reading bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) { self.init(bytes: bytes, maxDepth: maxDepth) }

    var isAtEnd: Bool { i == b.count }

    /// Steps over `literal` if the text goes on with exactly it.
    mutating func take(_ literal: StaticString) -> Bool {
        let n = literal.utf8CodeUnitCount
        guard i + n <= b.count else { return false }
        for k in 0..<n where b[i + k] != literal.utf8Start[k] { return false }
        i += n
        return true
    }

    /// A string here, or nil (nothing read) if there is none.
    mutating func readString() throws(Failure) -> String? {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
        return try string()
    }

    /// A string here as Unicode scalars (what `Array(readString()!.unicodeScalars)`
    /// gives), or nil (nothing read) if there is none. ASCII without escapes,
    /// most text, goes byte by byte with no String in between.
    mutating func readScalars() throws(Failure) -> [Unicode.Scalar]? {
        guard i < b.count, b[i] == UInt8(ascii: "\"") else { return nil }
        var end = i + 1
        while end < b.count, b[end] >= 0x20, b[end] < 0x80, b[end] != UInt8(ascii: "\""), b[end] != UInt8(ascii: "\\") { end += 1 }
        guard end < b.count, b[end] == UInt8(ascii: "\"") else { return Array(try string().unicodeScalars) }
        let start = i + 1
        i = end + 1
        return [Unicode.Scalar](unsafeUninitializedCapacity: end - start) { out, n in
            for k in start..<end { out[k - start] = Unicode.Scalar(b[k]) }
            n = end - start
        }
    }

    /// `true` or `false` here, or nil (nothing read).
    mutating func readBool() -> Bool? {
        if take("true") { return true }
        if take("false") { return false }
        return nil
    }

    /// An integer here, or nil (nothing read) if there is no number or it is not an integer.
    mutating func readInt() throws(Failure) -> Int64? {
        guard i < b.count, b[i] == UInt8(ascii: "-") || (b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9")) else { return nil }
        let start = i
        if case let .int(v) = try number() { return v }
        i = start
        return nil
    }

    /// A value that sits `depth` deep in the text (as `parse` counts it: its depth bound applies the same).
    mutating func readValue(depth: Int) throws(Failure) -> JSON { try value(depth: depth) }
}
