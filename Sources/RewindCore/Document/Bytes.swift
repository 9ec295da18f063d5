import Glibc

/// Byte-exact comparisons of strings, fast: keys, ids and JSON member names
/// are compared by their UTF-8 bytes (never by canonical equivalence), and
/// this is on every request's path, so compare contiguous storage with
/// `memcmp` rather than element by element.
public enum Bytes {
    @inline(__always)
    public static func equal(_ a: String, _ b: String) -> Bool {
        let (u, v) = (a.utf8, b.utf8)
        guard u.count == v.count else { return false }
        if let r = u.withContiguousStorageIfAvailable({ x in
            v.withContiguousStorageIfAvailable { y in x.count == 0 || memcmp(x.baseAddress!, y.baseAddress!, x.count) == 0 }
        }), let r { return r }
        return u.elementsEqual(v)
    }

    @inline(__always)
    public static func hash(_ s: String, into h: inout Hasher) {
        if s.utf8.withContiguousStorageIfAvailable({ h.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in s.utf8 { h.combine(byte) }
        }
    }

    /// A decimal integer (an optional `-`, digits) read from its bytes as
    /// `Int64(_:)` reads the text; nil for anything else, overflow included.
    /// Database cells, JSON integers and notices are read with it in place.
    public static func decimal(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        let negative = b.first == UInt8(ascii: "-")
        var i = negative ? 1 : 0
        guard i < b.count else { return nil }
        var v: Int64 = 0  // accumulated below zero, so that Int64.min fits
        while i < b.count {
            let d = b[i] &- UInt8(ascii: "0")
            guard d < 10 else { return nil }
            let (m, o1) = v.multipliedReportingOverflow(by: 10)
            let (n, o2) = m.subtractingReportingOverflow(Int64(d))
            guard !o1, !o2 else { return nil }
            v = n
            i += 1
        }
        if negative { return v }
        return v == .min ? nil : -v
    }
}
