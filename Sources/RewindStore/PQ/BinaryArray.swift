/// PostgreSQL's binary format for one-dimensional arrays, to send a whole
/// batch of rows as a few array parameters (`unnest($1::text[], …)`): one
/// plan whatever the row count, and no escaping of any value.
///
///     ndim=1 | has nulls | element type oid | length | lower bound=1 | (length, bytes)…
///
/// (all integers 4 bytes big-endian; a null element is length −1, no bytes).
struct BinaryArray {
    enum Element: UInt32 {
        case bytea = 17, int8 = 20, text = 25, uuid = 2950
    }

    private let type: Element
    /// The header's 20 bytes (filled in by `finish`), then the elements, in
    /// `used` bytes of a buffer kept longer than that (zeros past `used`):
    /// written through a pointer, a value is one copy; `append(contentsOf:)`
    /// cost ~150 instructions a call, forty-odd calls a row (callgrind).
    private var items: [UInt8]
    private var used = 20
    private var count: Int32 = 0
    private var hasNull = false

    var isEmpty: Bool { count == 0 }

    init(_ type: Element, capacity: Int = 0) {
        self.type = type
        items = [UInt8](repeating: 0, count: 20 + max(capacity, 64))
    }

    mutating func append(_ s: String?) {
        guard let s else { return appendNull() }
        precondition(type == .text)
        // A native string's bytes are read in place (`withUTF8` needs a
        // mutable copy of the string); any other is made contiguous once.
        if s.utf8.withContiguousStorageIfAvailable({ element(UnsafeRawBufferPointer($0)) }) == nil {
            var copy = s
            copy.withUTF8 { element(UnsafeRawBufferPointer($0)) }
        }
    }

    mutating func append(_ v: Int64?) {
        guard let v else { return appendNull() }
        precondition(type == .int8)
        withUnsafeBytes(of: v.bigEndian) { element($0) }
    }

    mutating func append(bytes: [UInt8]) {
        precondition(type == .bytea || type == .uuid)
        bytes.withUnsafeBytes { element($0) }
    }

    /// A uuid in its text form (`8-4-4-4-12` hex digits) as its 16 bytes,
    /// decoded into a buffer and appended once (appended a byte at a time,
    /// ~2,000 instructions a commit; now ~1,000).
    mutating func append(uuid: String) {
        precondition(type == .uuid)
        var raw: (UInt64, UInt64) = (0, 0)
        let n = withUnsafeMutableBytes(of: &raw) { out in Self.hexBytes(uuid) { i, b in if i < 16 { out[i] = b } } }
        guard n == 16 else {
            // Not a uuid: the n bytes its hex digits make, with length n (not
            // 16), for PostgreSQL to refuse with a clear error.
            var bytes: [UInt8] = []
            _ = Self.hexBytes(uuid) { _, b in bytes.append(b) }
            return append(bytes: bytes)
        }
        withUnsafeBytes(of: &raw) { element($0) }
    }

    /// Gives `byte` each byte (and its index) that pairs of hex digits in
    /// `text` make, skipping anything else; returns how many there were.
    private static func hexBytes(_ text: String, _ byte: (Int, UInt8) -> Void) -> Int {
        var text = text
        return text.withUTF8 { u in
            var hi: UInt8?
            var n = 0
            for c in u {
                let v: UInt8
                switch c {
                case 48...57: v = c - 48
                case 97...102: v = c - 87
                case 65...70: v = c - 55
                default: continue
                }
                guard let h = hi else { hi = v; continue }
                hi = nil
                byte(n, h << 4 | v)
                n += 1
            }
            return n
        }
    }

    private mutating func appendNull() {
        put32(-1)
        hasNull = true
        count += 1
    }

    private mutating func put32(_ v: Int32) { put(v.bigEndian) }

    /// One element: its length (4 bytes, big-endian) and its bytes, written
    /// with one check of room and one access to the buffer (two `put`s, one
    /// for each, made ~260 instructions an element; 13 of them a row).
    private mutating func element(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        if used + 4 + n > items.count { items += repeatElement(0, count: max(4 + n, items.count)) }
        let at = used
        items.withUnsafeMutableBytes { out in
            out.storeBytes(of: UInt32(truncatingIfNeeded: n).bigEndian, toByteOffset: at, as: UInt32.self)
            if n > 0 { (out.baseAddress! + at + 4).copyMemory(from: bytes.baseAddress!, byteCount: n) }
        }
        used += 4 + n
        count += 1
    }

    /// An integer's bytes as they are in memory (the caller made them big-endian).
    private mutating func put<T: FixedWidthInteger>(_ v: T) {
        withUnsafeBytes(of: v) { put($0) }
    }

    private mutating func put(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        if used + n > items.count { items += repeatElement(0, count: max(n, items.count)) }
        guard let from = bytes.baseAddress, n > 0 else { return }
        let at = used
        items.withUnsafeMutableBytes { $0.baseAddress!.advanced(by: at).copyMemory(from: from, byteCount: n) }
        used += n
    }

    /// The array as PostgreSQL reads it: the header written into place, the
    /// buffer cut to what was written and handed over (not copied).
    /// Once: the array is empty after it.
    mutating func finish() -> [UInt8] {
        precondition(used >= 20, "BinaryArray.finish() called twice")
        let (nulls, type, count) = (UInt32(hasNull ? 1 : 0), type.rawValue, UInt32(count))
        items.withUnsafeMutableBytes { head in
            head.storeBytes(of: UInt32(1).bigEndian, toByteOffset: 0, as: UInt32.self)  // one dimension
            head.storeBytes(of: nulls.bigEndian, toByteOffset: 4, as: UInt32.self)
            head.storeBytes(of: type.bigEndian, toByteOffset: 8, as: UInt32.self)
            head.storeBytes(of: count.bigEndian, toByteOffset: 12, as: UInt32.self)
            head.storeBytes(of: UInt32(1).bigEndian, toByteOffset: 16, as: UInt32.self)  // lower bound
        }
        items.removeLast(items.count - used)
        let out = items
        items = []
        used = 0
        return out
    }
}
