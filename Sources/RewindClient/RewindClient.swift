#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RewindCore

/// A client for one document over TCP: a `ClientSession` carried by a
/// `LineSocket`, with the timers a connection needs: `ping` every 15 s (the
/// server closes a connection silent for 45 s), a connection that has said
/// nothing for 40 s taken for dead, and reconnection with backoff (0.25 s
/// doubling to 5 s) after any loss the server did not call final.
///
/// Single-threaded: call `descriptor`/`handle` and `tick` from one thread
/// (`run` does it for a program with nothing else to watch; `rewind connect`
/// adds the keyboard to the same `poll`).
public final class RewindClient {
    public let session: ClientSession
    public let host: String
    public let port: Int
    private var socket: LineSocket?
    private var nextAttempt: Int64 = 0
    private var backoffMs: Int64 = 250
    private var lastHeard: Int64 = 0
    private var lastPing: Int64 = 0
    private var stopped = false

    public init(host: String, port: Int, options: ClientSession.Options) {
        self.host = host
        self.port = port
        session = ClientSession(options: options)
    }

    public var onChange: ((ClientSession.Change) -> Void)? {
        get { session.onChange }
        set { session.onChange = newValue }
    }

    public var isConnected: Bool { socket != nil }

    /// Milliseconds on a monotonic clock.
    public static func now() -> Int64 {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Int64(t.tv_sec) * 1000 + Int64(t.tv_nsec) / 1_000_000
    }

    /// What to `poll` for: the socket, for reading, and for writing while output waits.
    public var descriptor: pollfd? {
        guard let s = socket else { return nil }
        return pollfd(fd: s.fd, events: Int16(POLLIN) | (s.wantsWrite ? Int16(POLLOUT) : 0), revents: 0)
    }

    /// The socket is readable or writable (`revents` from `poll`).
    public func handle(_ revents: Int16) {
        guard let s = socket else { return }
        do {
            if revents & Int16(POLLOUT) != 0 { try s.flush() }
            if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                let lines = try s.readLines()
                if !lines.isEmpty { lastHeard = Self.now() }
                for l in lines { session.receive(l) }
            }
            try flushSession()
        } catch {
            drop(error.message)
        }
    }

    /// Timers; returns how long the caller may sleep (ms) before calling again.
    @discardableResult
    public func tick() -> Int32 {
        let now = Self.now()
        if stopped { return 1000 }
        if socket == nil {
            if case .closed = session.status { return 1000 }
            if now >= nextAttempt { connect(now) }
            return socket == nil ? Int32(max(1, nextAttempt - now)) : 0
        }
        if case .disconnected = session.status, socket != nil {
            // The session gave up on this connection (a `bye`, an unavailable server).
            drop(nil)
            return Int32(backoffMs)
        }
        if case .closed = session.status { socket = nil; return 1000 }
        session.pollToken()
        if now - lastHeard > 40_000 { drop("no answer from the server for 40 s"); return 0 }
        if now - lastPing >= 15_000 {
            lastPing = now
            session.send("ping", [])
        }
        do { try flushSession() } catch { drop(error.message) }
        if session.awaitsToken { return 10 }  // the app's getToken answers on another thread: look again soon
        return Int32(max(1, 15_000 - (now - lastPing)))
    }

    /// Writes what the session has queued (call after edits and requests).
    public func flush() {
        do { try flushSession() } catch { drop(error.message) }
    }

    /// Closes the connection for good.
    public func stop() {
        stopped = true
        socket = nil
        session.disconnected("stopped")
    }

    /// Runs until `done()` is true: for programs with nothing else to watch.
    public func run(until done: () -> Bool) {
        while !done() {
            let wait = tick()
            var fds = descriptor.map { [$0] } ?? []
            let n = poll(&fds, nfds_t(fds.count), min(wait, 100))
            if n > 0, let r = fds.first?.revents { handle(r) }
        }
    }

    private func connect(_ now: Int64) {
        do {
            socket = try LineSocket(host: host, port: port)
            lastHeard = now
            lastPing = now
            session.connected()
            try flushSession()
            backoffMs = 250
        } catch {
            socket = nil
            session.disconnected(error.message)
            scheduleReconnect(now)
        }
    }

    private func flushSession() throws(ClientError) {
        guard let s = socket else { return }
        for line in session.takeOutgoing() { try s.write(line) }
    }

    private func drop(_ reason: String?) {
        socket = nil
        if let reason { session.disconnected(reason) }
        scheduleReconnect(Self.now())
    }

    private func scheduleReconnect(_ now: Int64) {
        nextAttempt = now + backoffMs + Int64.random(in: 0...(backoffMs / 4))
        backoffMs = min(backoffMs * 2, 5_000)
    }
}
