import Dispatch

extension BackgroundWork {
    /// Runs an async call (a library whose API is async: jwt-kit's keys are an
    /// actor) to its end on the calling thread — a pool thread inside `run`'s
    /// `work`, start-up, or a test; never the loop's.
    @discardableResult
    public static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = AsyncResult<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            box.value = await body()
            done.signal()
        }
        done.wait()
        return box.value!
    }
}

/// Written by the task before it signals, read after the wait: never at once.
private final class AsyncResult<T>: @unchecked Sendable { var value: T? }
