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
        case .null: write(raw: "null" as StaticString)
        case let .bool(b): write(raw: b ? "true" as StaticString : "false")
        case let .int(i): write(int: i)
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
        write(raw: d.description)
    }

    /// Bytes already encoded (a prefix built elsewhere, punctuation).
    public mutating func write(raw b: [UInt8]) { bytes.append(contentsOf: b) }
    /// Text already encoded (JSON built elsewhere).
    public mutating func write(raw s: String) {
        // From the string's storage at once (its UTF-8 view goes byte by byte).
        if s.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil { bytes.append(contentsOf: s.utf8) }
    }
    /// A constant piece (a key and its colon, punctuation), copied from where the compiler put it.
    public mutating func write(raw s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    /// Milliseconds since 1970 as an ISO 8601 string (`Timestamp.iso8601`).
    public mutating func write(timestamp millis: Int64) {
        bytes.append(UInt8(ascii: "\""))
        Timestamp.append(iso8601Millis: millis, to: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    /// An integer in decimal, without making a `String` of it first.
    public mutating func write(int i: Int64) {
        // As typed bytes: a raw buffer is appended element by element.
        Self.withDecimal(i) { bytes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
    }

    /// `body` sees the decimal digits of `i` (with a "-" if negative), as `String(i)` would hold them.
    public static func withDecimal<R>(_ i: Int64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 20 digits and a sign at most, written from the end
        return withUnsafeMutableBytes(of: &digits) { buf in
            var at = buf.count
            var m = i.magnitude
            repeat {
                at -= 1
                buf[at] = UInt8(ascii: "0") + UInt8(m % 10)
                m /= 10
            } while m > 0
            if i < 0 { at -= 1; buf[at] = UInt8(ascii: "-") }
            return body(UnsafeRawBufferPointer(rebasing: buf[at...]))
        }
    }

    public mutating func write(string s: String) {
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape: copied at once after one scan.
        let done = s.utf8.withContiguousStorageIfAvailable { u -> Bool in
            guard !Self.needsEscape(u) else { return false }
            bytes.append(contentsOf: u)
            return true
        } ?? false
        if !done { writeEscaped(s.utf8) }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether `u` holds a byte JSON escapes (a control character, `"` or
    /// `\\`): eight bytes at a time (the byte-wise scan was ~6 instructions a
    /// byte, over every id and name of every event pushed).
    static func needsEscape(_ u: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = u.baseAddress else { return false }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        var i = 0
        while i + 8 <= u.count {
            let w = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
            let quote = w ^ (ones &* 0x22), backslash = w ^ (ones &* 0x5C)
            // A byte below 0x20, or one equal to `"` or `\` (zero after the xor): exact for existence.
            let hit = ((w &- ones &* 0x20) & ~w) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            if hit & highs != 0 { return true }
            i += 8
        }
        while i < u.count {
            let c = u[i]
            if c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") { return true }
            i += 1
        }
        return false
    }

    /// A string given as its scalars (a node's text), as `write(string:)`
    /// writes the `String` made of them, byte for byte, without making it:
    /// appending scalars to a `String` one by one was a quarter of a scrub
    /// step (perf).
    public mutating func write(scalars: [Unicode.Scalar]) {
        bytes.append(UInt8(ascii: "\""))
        bytes.reserveCapacity(bytes.count + scalars.count + 1)
        for s in scalars {
            let v = s.value
            if v < 0x80 {
                let c = UInt8(v)
                switch c {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), 0..<0x20: writeEscaped(c)
                default: bytes.append(c)
                }
            } else if v < 0x800 {
                bytes.append(0xC0 | UInt8(v >> 6))
                bytes.append(0x80 | UInt8(v & 0x3F))
            } else if v < 0x10000 {
                bytes.append(0xE0 | UInt8(v >> 12))
                bytes.append(0x80 | UInt8((v >> 6) & 0x3F))
                bytes.append(0x80 | UInt8(v & 0x3F))
            } else {
                bytes.append(0xF0 | UInt8(v >> 18))
                bytes.append(0x80 | UInt8((v >> 12) & 0x3F))
                bytes.append(0x80 | UInt8((v >> 6) & 0x3F))
                bytes.append(0x80 | UInt8(v & 0x3F))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ utf8: String.UTF8View) {
        for c in utf8 { writeEscaped(c) }
    }

    private mutating func writeEscaped(_ c: UInt8) {
        switch c {
        case UInt8(ascii: "\""): bytes.append(0x5C); bytes.append(c)
        case UInt8(ascii: "\\"): bytes.append(0x5C); bytes.append(c)
        case 0x0A: write(raw: "\\n" as StaticString)
        case 0x0D: write(raw: "\\r" as StaticString)
        case 0x09: write(raw: "\\t" as StaticString)
        case 0..<0x20:
            write(raw: "\\u00" as StaticString)
            bytes.append(Hex.digit(c >> 4))
            bytes.append(Hex.digit(c & 0xF))
        default: bytes.append(c)
        }
    }
}
