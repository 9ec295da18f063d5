import CLibUV
import Glibc

/// A repeating or one-shot timer.
public final class Timer {
    private let handle = allocateHandle(uv_timer_t.self)
    private var callback: () -> Void = {}

    public init(loop: EventLoop) {
        uv_timer_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    public func start(after ms: UInt64, repeat every: UInt64 = 0, _ body: @escaping () -> Void) {
        callback = body
        uv_timer_start(handle, { h in
            Unmanaged<Timer>.fromOpaque(h!.pointee.data).takeUnretainedValue().callback()
        }, ms, every)
    }

    public func stop() { uv_timer_stop(handle) }

    /// Unreferenced timers do not keep the loop alive.
    public func unref() { uv_unref(handlePointer(handle)) }

    private var closed = false

    /// Idempotent: the handle's memory is gone after the first close.
    public func close() {
        guard !closed else { return }
        closed = true
        callback = {}
        closeHandle(handle)
    }
}

/// Runs a callback once per loop turn, just before the loop sleeps: where
/// queued output is flushed and queued commits are sent, once per turn.
public final class BeforeSleep {
    private let handle = allocateHandle(uv_prepare_t.self)
    private var callback: () -> Void

    public init(loop: EventLoop, _ body: @escaping () -> Void) {
        callback = body
        uv_prepare_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
        uv_prepare_start(handle) { h in
            Unmanaged<BeforeSleep>.fromOpaque(h!.pointee.data).takeUnretainedValue().callback()
        }
        uv_unref(handlePointer(handle))
    }

    private var closed = false

    public func close() {
        guard !closed else { return }
        closed = true
        callback = {}
        closeHandle(handle)
    }
}

/// A POSIX signal delivered on the loop.
public final class SignalWatcher {
    private let handle = allocateHandle(uv_signal_t.self)
    private var callback: (Int32) -> Void

    public init(loop: EventLoop, signal: Int32, _ body: @escaping (Int32) -> Void) {
        callback = body
        uv_signal_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
        uv_signal_start(handle, { h, sig in
            Unmanaged<SignalWatcher>.fromOpaque(h!.pointee.data).takeUnretainedValue().callback(sig)
        }, signal)
    }

    private var closed = false

    public func close() {
        guard !closed else { return }
        closed = true
        callback = { _ in }
        closeHandle(handle)
    }
}

/// Readiness of a file descriptor owned by someone else (libpq's socket).
/// Never two of these on one descriptor; stop and close it before the fd is closed.
public final class FDWatcher {
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int32(UV_READABLE.rawValue))
        public static let writable = Events(rawValue: Int32(UV_WRITABLE.rawValue))
    }

    private let handle = allocateHandle(uv_poll_t.self)
    private var callback: (Events, Int32) -> Void = { _, _ in }
    public let fd: Int32

    public init?(loop: EventLoop, fd: Int32) {
        self.fd = fd
        guard uv_poll_init(loop.raw, handle, fd) == 0 else { free(handle); return nil }
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    /// `body(events, status)`: status < 0 is a libuv error on the descriptor.
    public func watch(_ events: Events, _ body: @escaping (Events, Int32) -> Void) {
        callback = body
        uv_poll_start(handle, events.rawValue, { h, status, events in
            Unmanaged<FDWatcher>.fromOpaque(h!.pointee.data).takeUnretainedValue().callback(Events(rawValue: events), status)
        })
    }

    private var closed = false

    public func close() {
        guard !closed else { return }
        closed = true
        uv_poll_stop(handle)
        callback = { _, _ in }
        closeHandle(handle)
    }
}
