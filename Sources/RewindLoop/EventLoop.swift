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

    /// Writes (`TCPSocket.write`) made since the loop last polled for I/O.
    @exclusivity(unchecked) public internal(set) var writesThisTurn = 0
    /// How many writes a turn should make at most (`mayWrite`): past it,
    /// writers put theirs off to the next turn (`deferToNextTurn`), and the
    /// loop polls for I/O in between, without sleeping.
    public var writesPerTurn = 128
    public var mayWrite: Bool { writesThisTurn < writesPerTurn }
    /// True while work waits in `deferToNextTurn`: what is ready to be
    /// written should then wait behind it, in order.
    public var hasDeferred: Bool { !deferred.isEmpty }
    /// Resets `writesThisTurn` after each poll.
    private let afterPoll = allocateHandle(uv_check_t.self)
    /// Runs `deferred`, last before the poll.
    private let runner = allocateHandle(uv_prepare_t.self)
    /// Active while work is deferred: the poll then does not wait.
    private let awake = allocateHandle(uv_idle_t.self)
    @exclusivity(unchecked) private var deferred: [any DeferredWork] = []
    /// Watches every connected socket on the loop (`TCPSocket`), made with the first.
    private var poller: SocketPoller?

    /// The loop's socket poller, made when first asked for (nil: the kernel would not make its epoll set).
    func socketPoller() -> SocketPoller? {
        if poller == nil { poller = SocketPoller(loop: raw) }
        return poller
    }

    public init() {
        raw = .allocate(capacity: 1)
        uv_loop_init(raw)
        raw.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_check_init(raw, afterPoll)
        uv_check_start(afterPoll) { h in EventLoop.of(h!.pointee.loop).writesThisTurn = 0 }
        uv_unref(handlePointer(afterPoll))
        // Prepare handles run newest first: this one, started before any
        // other, runs last, after those that send queued commits and queue
        // output (`BeforeSleep`).
        uv_prepare_init(raw, runner)
        uv_prepare_start(runner) { h in EventLoop.of(h!.pointee.loop).runDeferred() }
        uv_unref(handlePointer(runner))
        uv_idle_init(raw, awake)
        uv_unref(handlePointer(awake))
    }

    private static func of(_ raw: UnsafeMutablePointer<uv_loop_t>?) -> EventLoop {
        Unmanaged<EventLoop>.fromOpaque(raw!.pointee.data).takeUnretainedValue()
    }

    /// Runs `work` on a next loop turn, just before the poll (after every
    /// `BeforeSleep`), in the order deferred, as many as the turn's writes
    /// allow (`mayWrite`); the rest waits for the turn after. The loop does
    /// not sleep while work is deferred: it only takes the I/O that is ready.
    /// (A fan-out to thousands of terminals is so written a part per turn,
    /// with the loop reading in between.)
    public func deferToNextTurn(_ work: any DeferredWork) {
        deferred.append(work)
        guard uv_is_active(handlePointer(awake)) == 0 else { return }
        uv_idle_start(awake) { _ in }
    }

    private func runDeferred() {
        guard !deferred.isEmpty else { return }
        var done = 0
        while done < deferred.count && mayWrite {
            let work = deferred[done]
            done += 1
            work.runDeferred()
        }
        deferred.removeFirst(done)
        if deferred.isEmpty { uv_idle_stop(awake) }
    }

    public func run() { uv_run(raw, UV_RUN_DEFAULT) }

    /// One loop turn without waiting (tests step the server with it): true while handles are active.
    @discardableResult
    public func runOnce() -> Bool { uv_run(raw, UV_RUN_NOWAIT) != 0 }

    /// Runs until no handle is active; used after closing everything on shutdown.
    public func drain() { uv_run(raw, UV_RUN_DEFAULT) }

    public func stop() { uv_stop(raw) }

    /// Closes the loop once nothing but its own handles is left on it (after a
    /// server's shutdown): the kernel objects behind it (epoll, the wake-up
    /// eventfd, the signal pipe) are given back — a process that makes many
    /// servers (the tests' stepped ones) would otherwise keep every one's. False,
    /// and nothing closed, while other handles are open. The loop is unusable after.
    @discardableResult
    public func close() -> Bool {
        guard !closed, openHandles.allSatisfy({ ["check", "prepare", "idle"].contains($0) }) else { return false }
        closed = true
        poller?.close()
        closeHandle(afterPoll)
        closeHandle(runner)
        closeHandle(awake)
        uv_run(raw, UV_RUN_DEFAULT)  // their close callbacks
        guard uv_loop_close(raw) == 0 else { return false }
        raw.deallocate()
        readBuffer.deallocate()
        return true
    }

    private var closed = false

    /// The handles still on the loop that are not closing, by type name, and
    /// a "socket" for each connected socket not yet closed (a loop can be
    /// closed only without them; `close`).
    public var openHandles: [String] {
        final class Names {
            var list: [String] = []
            let poller: SocketPoller?
            init(_ poller: SocketPoller?) { self.poller = poller }
        }
        let names = Names(poller)
        uv_walk(raw, { h, arg in
            guard let h, uv_is_closing(h) == 0, let arg else { return }
            let names = Unmanaged<Names>.fromOpaque(arg).takeUnretainedValue()
            if names.poller?.owns(h) == true { return }
            names.list.append(String(cString: uv_handle_type_name(h.pointee.type)))
        }, Unmanaged.passUnretained(names).toOpaque())
        return names.list + Array(repeating: "socket", count: poller?.open ?? 0)
    }

    /// The loop's cached clock, in milliseconds.
    public var now: UInt64 { uv_now(raw) }
}

/// Work put off to a next loop turn (`EventLoop.deferToNextTurn`).
public protocol DeferredWork: AnyObject {
    func runDeferred()
}

/// Wall clock in milliseconds since 1970 (event times).
public func wallClockMillis() -> Int64 {
    var tv = uv_timeval64_t()
    uv_gettimeofday(&tv)
    return tv.tv_sec * 1000 + Int64(tv.tv_usec / 1000)
}

/// A monotonic clock in nanoseconds, not cached per loop turn (latencies).
public func monotonicNanos() -> UInt64 { uv_hrtime() }

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
