import CLibUV
import Glibc

/// One libuv loop and the handles on it, as Swift objects.
///
/// Everything here runs on the loop's thread; none of it is Sendable. Each
/// handle object is retained by its C handle (`data`) from `init` until the
/// handle's close callback, which is the only place its memory is released.
public final class EventLoop {
    public let raw: UnsafeMutablePointer<uv_loop_t>
    /// One read buffer for every connection: reads are handled synchronously,
    /// so an idle connection costs no buffer at all.
    let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: EventLoop.readBufferSize, alignment: 16)
    static let readBufferSize = 64 * 1024

    public init() {
        raw = .allocate(capacity: 1)
        uv_loop_init(raw)
    }

    public func run() { uv_run(raw, UV_RUN_DEFAULT) }

    /// Runs until no handle is active; used after closing everything on shutdown.
    public func drain() { uv_run(raw, UV_RUN_DEFAULT) }

    public func stop() { uv_stop(raw) }

    /// The loop's cached clock, in milliseconds.
    public var now: UInt64 { uv_now(raw) }
}

/// Wall clock in milliseconds since 1970 (event times).
public func wallClockMillis() -> Int64 {
    var tv = uv_timeval64_t()
    uv_gettimeofday(&tv)
    return tv.tv_sec * 1000 + Int64(tv.tv_usec / 1000)
}

/// A libuv error as text: `ECONNREFUSED: connection refused`.
public func uvErrorText(_ code: Int32) -> String {
    "\(String(cString: uv_err_name(code))): \(String(cString: uv_strerror(code)))"
}

func handlePointer<T>(_ p: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
    UnsafeMutableRawPointer(p).assumingMemoryBound(to: uv_handle_t.self)
}

/// Closes a handle whose `data` holds a retained `owner`; releases both in the callback.
func closeHandle<T>(_ p: UnsafeMutablePointer<T>) {
    let h = handlePointer(p)
    if uv_is_closing(h) != 0 { return }
    uv_close(h) { h in
        guard let h else { return }
        if let data = h.pointee.data { Unmanaged<AnyObject>.fromOpaque(data).release() }
        free(h)
    }
}

func allocateHandle<T>(_: T.Type) -> UnsafeMutablePointer<T> {
    let p = calloc(1, MemoryLayout<T>.size)!
    return p.bindMemory(to: T.self, capacity: 1)
}
