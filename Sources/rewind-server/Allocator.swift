import CJemalloc

/// jemalloc, linked into this executable, replaces glibc's malloc for the
/// whole process (the Swift runtime's allocations included) when the dynamic
/// linker binds `malloc` to it, which holds while it is loaded before libc.
/// Checked at start, for the start-up log.
enum Allocator {
    /// "jemalloc 5.3.0-…" and whether the process's `malloc` is its.
    static func describe() -> (text: String, servesMalloc: Bool) {
        var version: UnsafePointer<CChar>?
        var size = MemoryLayout<UnsafePointer<CChar>?>.size
        let name = mallctl("version", &version, &size, nil, 0) == 0 && version != nil
            ? "jemalloc " + String(cString: version!) : "jemalloc (version unknown)"
        switch rewind_jemalloc_serves_malloc() {
        case 1: return (name, true)
        case 0: return (name + ", not serving malloc", false)
        default: return (name + ", malloc's library unknown", false)
        }
    }
}
