/// Serialises JSON compactly, deterministically (members in stored order),
/// writing non-ASCII characters as UTF-8 rather than escapes.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []

    public init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public static func encode(_ v: JSON) -> [UInt8] {
        var w = JSONWriter()
        w.write(v)
        return w.bytes
    }

    public static func string(_ v: JSON) -> String { String(decoding: encode(v), as: UTF8.self) }

    public mutating func write(_ v: JSON) {
        switch v {
        case .null: raw("null")
        case let .bool(b): raw(b ? "true" : "false")
        case let .int(i): raw(String(i))
        case let .double(d): writeDouble(d)
        case let .string(s): write(string: s)
        case let .array(a):
            bytes.append(UInt8(ascii: "["))
            for (k, item) in a.enumerated() {
                if k > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case let .object(o):
            bytes.append(UInt8(ascii: "{"))
            for (k, m) in o.members.enumerated() {
                if k > 0 { bytes.append(UInt8(ascii: ",")) }
                write(string: m.key)
                bytes.append(UInt8(ascii: ":"))
                write(m.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func writeDouble(_ d: Double) {
        // Swift's description is the shortest text that reads back as the same
        // double ("0.1", "1e+20"); both forms are valid JSON.
        raw(d.description)
    }

    private mutating func raw(_ s: String) { bytes.append(contentsOf: s.utf8) }

    /// Bytes already encoded (a prefix built elsewhere, punctuation).
    public mutating func write(raw b: [UInt8]) { bytes.append(contentsOf: b) }

    public mutating func write(string s: String) {
        bytes.append(UInt8(ascii: "\""))
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): bytes.append(0x5C); bytes.append(c)
            case UInt8(ascii: "\\"): bytes.append(0x5C); bytes.append(c)
            case 0x0A: raw("\\n")
            case 0x0D: raw("\\r")
            case 0x09: raw("\\t")
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                raw("\\u00")
                bytes.append(hex[Int(c >> 4)])
                bytes.append(hex[Int(c & 0xF)])
            default: bytes.append(c)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
