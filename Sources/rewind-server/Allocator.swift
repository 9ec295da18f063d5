import CJemalloc
import Glibc

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

    /// Starts jemalloc's background thread, which gives freed pages back to
    /// the system as they age (its decay, 10 s by default) also while the
    /// server is idle. Without it they go back only as later allocations
    /// happen: after a storm of reconnects, an idle server kept ~60–90 bytes a
    /// terminal more (`scripts/bench/idle`'s burst, journal 2026-11-29).
    /// Redis turns it on for the same reason (`jemalloc-bg-thread`). An
    /// operator's `MALLOC_CONF` naming `background_thread` decides instead.
    /// Returns whether it runs.
    static func startBackgroundPurging() -> Bool {
        if let conf = getenv("MALLOC_CONF"), String(cString: conf).contains("background_thread") {
            var on = false
            var size = MemoryLayout<Bool>.size
            return mallctl("background_thread", &on, &size, nil, 0) == 0 && on
        }
        var on = true
        return mallctl("background_thread", nil, nil, &on, MemoryLayout<Bool>.size) == 0
    }
}
