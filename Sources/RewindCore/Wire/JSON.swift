/// A JSON value that round-trips exactly through the log.
///
/// Foundation's JSON loses the integer/float distinction, cannot hold integers
/// past 2^53 and silently drops duplicate keys; Rewind stores what clients send
/// and hashes what it stores, so it keeps its own small value type.
///
/// Strings compare by Unicode scalars, not by canonical equivalence: `"é"` and
/// `"e\u{301}"` are different values here, as they are in PostgreSQL.
public enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

/// An object keeps its members in the order they were written.
public struct JSONObject: Sendable, Equatable {
    public var members: [(key: String, value: JSON)]

    public init(_ members: [(key: String, value: JSON)] = []) { self.members = members }

    public subscript(key: String) -> JSON? {
        for m in members where Bytes.equal(m.key, key) { return m.value }
        return nil
    }

    public var keys: [String] { members.map(\.key) }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        guard a.members.count == b.members.count else { return false }
        for (x, y) in zip(a.members, b.members) {
            guard Bytes.equal(x.key, y.key), x.value == y.value else { return false }
        }
        return true
    }
}

extension JSON: Equatable {
    public static func == (a: JSON, b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case let (.bool(x), .bool(y)): return x == y
        case let (.int(x), .int(y)): return x == y
        case let (.double(x), .double(y)): return x == y
        case let (.string(x), .string(y)): return Bytes.equal(x, y)  // same scalars ⇔ same UTF-8 bytes
        case let (.array(x), .array(y)): return x == y
        case let (.object(x), .object(y)): return x == y
        default: return false
        }
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }
    public init(floatLiteral value: Double) { self = .double(value) }
}

extension JSON {
    public var objectValue: JSONObject? { if case let .object(o) = self { return o }; return nil }
    public var stringValue: String? { if case let .string(s) = self { return s }; return nil }
    public var arrayValue: [JSON]? { if case let .array(a) = self { return a }; return nil }
    public var boolValue: Bool? { if case let .bool(b) = self { return b }; return nil }
    /// An integer written as one: `100`, never `1e2` or `100.0`. Versions and
    /// positions are counts; a client that writes them as floats has a bug
    /// worth reporting rather than a value worth guessing.
    public var intValue: Int64? {
        if case let .int(i) = self { return i }
        return nil
    }

    /// Bytes of the compact encoding (what a value costs in a document).
    public var encodedSize: Int {
        switch self {
        case .null: return 4
        case let .bool(b): return b ? 4 : 5
        case let .int(i): return JSONWriter.withDecimal(i) { $0.count }  // no array written (a prop set counts both values' sizes)
        case .double: return JSONWriter.encode(self).count
        case let .string(s): return JSON.encodedSize(of: s)
        case let .array(a): return 2 + a.reduce(max(0, a.count - 1)) { $0 + $1.encodedSize }
        case let .object(o): return 2 + o.members.reduce(max(0, o.members.count - 1)) { $0 + JSON.encodedSize(of: $1.key) + 1 + $1.value.encodedSize }
        }
    }

    static func encodedSize(of s: String) -> Int {
        var n = 2
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0x0A, 0x0D, 0x09: n += 2
            case 0..<0x20: n += 6
            default: n += 1
            }
        }
        return n
    }
    public var doubleValue: Double? {
        switch self {
        case let .int(i): return Double(i)
        case let .double(d): return d
        default: return nil
        }
    }
    public var isNumber: Bool {
        switch self { case .int, .double: return true; default: return false }
    }
    public var isNull: Bool { if case .null = self { return true }; return false }

    /// Builds an object from members, in the order given; nil values are left out.
    public static func obj(_ members: [(String, JSON?)]) -> JSON {
        .object(JSONObject(members.compactMap { m in m.1.map { (key: m.0, value: $0) } }))
    }
}
