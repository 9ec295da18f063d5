/// Base64 (RFC 4648, with padding): the WebSocket key and accept value, the
/// master key file, and sealed content (`DocumentCipher`), where it is on
/// the read path of every replay: decoding goes through a table, straight
/// from the string's UTF-8 storage.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// Each byte's 6-bit value; 64 for "=", 255 for anything else.
    private static let values: [UInt8] = {
        var t = [UInt8](repeating: 255, count: 256)
        for (i, c) in alphabet.enumerated() { t[Int(c)] = UInt8(i) }
        t[Int(UInt8(ascii: "="))] = 64
        return t
    }()

    /// The same values shifted to their place in a quad's 24 bits, a table
    /// per place (4 × 256); 2^24 for anything else, "=" included.
    private static let shifted: [UInt32] = {
        var t = [UInt32](repeating: 1 << 24, count: 1024)
        for (i, c) in alphabet.enumerated() {
            for place in 0..<4 { t[place * 256 + Int(c)] = UInt32(i) << (18 - 6 * place) }
        }
        return t
    }()

    public static func encode(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: encodedCount(bytes.count)) { encode(bytes, into: $0) }
    }

    /// Characters `encode` makes of `count` bytes.
    public static func encodedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

    /// Each 12 bits' two characters, the first in the low byte: a full
    /// group of 3 bytes is two look-ups and one store (a character at a time
    /// was ~7 instructions a character; sealed content is encoded at every append).
    private static let pairs: [UInt16] = (0..<4096).map { UInt16(alphabet[$0 >> 6]) | UInt16(alphabet[$0 & 63]) << 8 }

    /// Writes the text of `bytes` at the start of `out` (at least `encodedCount` long); returns its length.
    @discardableResult
    public static func encode(_ bytes: [UInt8], into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(out.count >= encodedCount(bytes.count), "base64 output buffer too short")
        return bytes.withUnsafeBufferPointer { b in
            var i = 0, o = 0
            if let to = out.baseAddress, b.count >= 3 {
                let raw = UnsafeMutableRawPointer(to)
                pairs.withUnsafeBufferPointer { p in
                    while i + 3 <= b.count {
                        let v = Int(b[i]) << 16 | Int(b[i + 1]) << 8 | Int(b[i + 2])
                        let quad = UInt32(p[v >> 12]) | UInt32(p[v & 0xFFF]) << 16
                        raw.storeBytes(of: quad.littleEndian, toByteOffset: o, as: UInt32.self)
                        i += 3
                        o += 4
                    }
                }
            }
            // The last 1 or 2 bytes, padded.
            if i < b.count {
                let two = i + 1 < b.count
                let v = UInt32(b[i]) << 16 | (two ? UInt32(b[i + 1]) << 8 : 0)
                out[o] = alphabet[Int(v >> 18 & 63)]
                out[o + 1] = alphabet[Int(v >> 12 & 63)]
                out[o + 2] = two ? alphabet[Int(v >> 6 & 63)] : UInt8(ascii: "=")
                out[o + 3] = UInt8(ascii: "=")
                o += 4
            }
            return o
        }
    }

    public static func decode(_ s: String) -> [UInt8]? {
        var s = s
        return s.withUTF8 { decode($0) }
    }

    public static func decode(_ s: Substring) -> [UInt8]? {
        var s = s
        return s.withUTF8 { decode($0) }
    }

    /// Canonical base64 only: padding only at the end, and the bits it leaves over zero ("dGg=", not "dGh=").
    public static func decode(_ u: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard u.count % 4 == 0 else { return nil }
        if u.isEmpty { return [] }
        let pad = u[u.count - 1] == UInt8(ascii: "=") ? (u[u.count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
        let n = u.count / 4 * 3 - pad
        var ok = true
        let out = [UInt8](unsafeUninitializedCapacity: n + 2) { out, count in
            var i = 0, o = 0
            // Every quad but the last (the only one that may hold padding):
            // one lookup a character, one check a quad.
            shifted.withUnsafeBufferPointer { q in
                while i + 4 < u.count {
                    let v = q[Int(u[i])] | q[256 + Int(u[i + 1])] | q[512 + Int(u[i + 2])] | q[768 + Int(u[i + 3])]
                    if v > 0xFF_FFFF { ok = false; break }
                    out[o] = UInt8(truncatingIfNeeded: v >> 16)
                    out[o + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[o + 2] = UInt8(truncatingIfNeeded: v)
                    i += 4
                    o += 3
                }
            }
            if ok { values.withUnsafeBufferPointer { t in
                while i < u.count {
                    let a = t[Int(u[i])], b = t[Int(u[i + 1])], c = t[Int(u[i + 2])], d = t[Int(u[i + 3])]
                    let last = i + 4 == u.count
                    // Any non-alphabet byte is 255, "=" is 64: both fail here unless "=" is padding at the end.
                    if (a | b) > 63 || (!last && (c | d) > 63) { ok = false; break }
                    if last {
                        if pad == 2 && (c != 64 || d != 64 || b & 15 != 0) || pad == 1 && (c > 63 || d != 64 || c & 3 != 0)
                            || pad == 0 && (c | d) > 63 { ok = false; break }
                    }
                    let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c & 63) << 6 | UInt32(d & 63)
                    out[o] = UInt8(v >> 16 & 0xFF)
                    out[o + 1] = UInt8(v >> 8 & 0xFF)
                    out[o + 2] = UInt8(v & 0xFF)
                    i += 4
                    o += 3
                }
            } }
            count = ok ? n : 0
        }
        return ok ? out : nil
    }
}
