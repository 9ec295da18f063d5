import CLibUV
import Glibc

/// Work that would stall the loop (encoding a large snapshot) runs on
/// libuv's thread pool; its result comes back on the loop thread.
///
///     loop thread:  run(work, done) ── uv_queue_work ─┐            ┌─ done(result)
///     pool thread:                                     └─ work() ───┘
///
/// `work` must be `@Sendable` and its result `Sendable`: it shares nothing
/// with the loop while it runs. `done` runs on the loop, like any callback.
public enum BackgroundWork {
    public static func run<T: Sendable>(on loop: EventLoop, _ work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        let job = Job(work: work, done: done)
        let req = allocateHandle(uv_work_t.self)
        req.pointee.data = Unmanaged.passRetained(job as AnyJob).toOpaque()
        let rc = uv_queue_work(loop.raw, req, { req in
            Unmanaged<AnyJob>.fromOpaque(req!.pointee.data).takeUnretainedValue().runWork()
        }, { req, _ in
            let job = Unmanaged<AnyJob>.fromOpaque(req!.pointee.data).takeRetainedValue()
            free(req)
            job.finish()
        })
        if rc != 0 {  // cannot happen with a live loop; do it here rather than lose it
            Unmanaged<AnyJob>.fromOpaque(req.pointee.data).release()
            free(req)
            job.runWork()
            job.finish()
        }
    }
}

/// A value handed to background work and let go there. A closure's captures
/// are released when the job is freed, on the loop: 100,000 decoded log
/// entries freed there held up every terminal. `work` takes the value out
/// (`take`) and it ends on the pool thread. `@unchecked Sendable`: taken once,
/// by the pool thread, after libuv has handed the job over.
public final class Handoff<T>: @unchecked Sendable {
    private var value: T?
    public init(_ value: T) { self.value = value }
    /// The value; the box holds nothing after.
    public func take() -> T {
        defer { value = nil }
        return value!
    }
}

/// The one place here that crosses threads by hand: a job is touched by the
/// pool thread (`runWork`) and then by the loop thread (`finish`), never at
/// once — libuv orders the two — so it is `@unchecked Sendable`.
private class AnyJob: @unchecked Sendable {
    func runWork() {}
    func finish() {}
}

private final class Job<T: Sendable>: AnyJob, @unchecked Sendable {
    private let work: @Sendable () -> T
    private let done: (T) -> Void
    private var result: T?

    init(work: @escaping @Sendable () -> T, done: @escaping (T) -> Void) {
        self.work = work
        self.done = done
    }

    override func runWork() { result = work() }
    override func finish() { if let result { done(result) } }
}
