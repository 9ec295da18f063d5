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
}
