import CLibUV
import Glibc

/// The lifecycle every handle here shares: the C handle retains its Swift
/// owner from `init` until its close callback; `close` is idempotent because
/// the handle's memory is gone after the first one.
public class LoopHandle<Raw> {
    let handle = allocateHandle(Raw.self)
    private var closed = false

    init() {}

    /// Call once the handle is initialised: from then on libuv holds the owner.
    func retainByHandle() {
        handlePointer(handle).pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    static func owner(of raw: UnsafeMutablePointer<Raw>?) -> Self {
        Unmanaged<Self>.fromOpaque(handlePointer(raw!).pointee.data).takeUnretainedValue()
    }

    /// Drops what the callbacks hold (they may capture the owner's owner).
    func releaseCallbacks() {}

    public func close() {
        guard !closed else { return }
        closed = true
        releaseCallbacks()
        closeHandle(handle)
    }
}

/// A repeating or one-shot timer.
public final class Timer: LoopHandle<uv_timer_t> {
    private var callback: () -> Void = {}

    public init(loop: EventLoop) {
        super.init()
        uv_timer_init(loop.raw, handle)
        retainByHandle()
    }

    public func start(after ms: UInt64, repeat every: UInt64 = 0, _ body: @escaping () -> Void) {
        callback = body
        uv_timer_start(handle, { h in Timer.owner(of: h).callback() }, ms, every)
    }

    public func stop() { uv_timer_stop(handle) }

    /// Unreferenced timers do not keep the loop alive.
    public func unref() { uv_unref(handlePointer(handle)) }

    override func releaseCallbacks() { callback = {} }
}

/// Runs a callback once per loop turn, just before the loop sleeps: where
/// queued output is flushed and queued commits are sent, once per turn.
public final class BeforeSleep: LoopHandle<uv_prepare_t> {
    private var callback: () -> Void

    public init(loop: EventLoop, _ body: @escaping () -> Void) {
        callback = body
        super.init()
        uv_prepare_init(loop.raw, handle)
        retainByHandle()
        uv_prepare_start(handle) { h in BeforeSleep.owner(of: h).callback() }
        uv_unref(handlePointer(handle))
    }

    override func releaseCallbacks() { callback = {} }
}

/// Runs a callback on every loop turn while started, and keeps the loop from
/// sleeping meanwhile: work left over from one turn (a connection that used
/// its share of requests) continues on the next without waiting for I/O.
public final class EveryTurn: LoopHandle<uv_idle_t> {
    private var callback: () -> Void
    public private(set) var isActive = false

    public init(loop: EventLoop, _ body: @escaping () -> Void) {
        callback = body
        super.init()
        uv_idle_init(loop.raw, handle)
        retainByHandle()
    }

    public func start() {
        guard !isActive else { return }
        isActive = true
        uv_idle_start(handle) { h in EveryTurn.owner(of: h).callback() }
    }

    public func stop() {
        guard isActive else { return }
        isActive = false
        uv_idle_stop(handle)
    }

    override func releaseCallbacks() { callback = {} }
}

/// A POSIX signal delivered on the loop.
public final class SignalWatcher: LoopHandle<uv_signal_t> {
    private var callback: (Int32) -> Void

    public init(loop: EventLoop, signal: Int32, _ body: @escaping (Int32) -> Void) {
        callback = body
        super.init()
        uv_signal_init(loop.raw, handle)
        retainByHandle()
        uv_signal_start(handle, { h, sig in SignalWatcher.owner(of: h).callback(sig) }, signal)
    }

    override func releaseCallbacks() { callback = { _ in } }
}

/// Readiness of a file descriptor owned by someone else (libpq's socket).
/// Never two of these on one descriptor; stop and close it before the fd is closed.
public final class FDWatcher: LoopHandle<uv_poll_t> {
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int32(UV_READABLE.rawValue))
        public static let writable = Events(rawValue: Int32(UV_WRITABLE.rawValue))
    }

    private var callback: (Events, Int32) -> Void = { _, _ in }
    public let fd: Int32

    public init?(loop: EventLoop, fd: Int32) {
        self.fd = fd
        super.init()
        guard uv_poll_init(loop.raw, handle, fd) == 0 else { free(handle); return nil }
        retainByHandle()
    }

    /// `body(events, status)`: status < 0 is a libuv error on the descriptor.
    public func watch(_ events: Events, _ body: @escaping (Events, Int32) -> Void) {
        callback = body
        uv_poll_start(handle, events.rawValue, { h, status, events in
            FDWatcher.owner(of: h).callback(Events(rawValue: events), status)
        })
    }

    override func releaseCallbacks() {
        uv_poll_stop(handle)
        callback = { _, _ in }
    }
}
