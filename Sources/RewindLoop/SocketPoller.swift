import CLibUV
import Glibc

/// Every connected socket of a loop (`TCPSocket`) watched through one epoll
/// set, itself watched by one libuv poll handle: libuv's loop wakes when any
/// of them is ready, and the poller asks the set which and tells each socket.
///
/// Why not a `uv_poll_t` per socket: that handle is 160 bytes, held by every
/// idle terminal for as long as it is connected (a quarter of what one held,
/// `scripts/bench/idle`); here a socket costs the kernel's entry in the set
/// and nothing in this process. The set is level-triggered and its entries
/// follow libuv's own rules for a poll handle (`src/unix/poll.c`): an error
/// on the descriptor stops watching it and is reported once; a hang-up is
/// reported as the events watched; a socket that wants nothing is removed
/// from the set, so a paused, hung-up socket does not wake the loop again.
///
/// A closed socket is told so on the next loop turn (`TCPSocket.socketHandleClosed`),
/// as `uv_close`'s callback did, and the set's reference to it is held until
/// then: an event already taken from the set for a socket closed meanwhile
/// (by another socket's read in the same batch) finds it still allocated,
/// and closed.
final class SocketPoller {
    private let epoll: Int32
    /// Watches `epoll`, readable while any socket is in the set; active only then.
    private let handle = allocateHandle(uv_poll_t.self)
    /// Runs `notices` on the next turn; active only while there are some.
    private let noticer = allocateHandle(uv_idle_t.self)
    /// How many events one wake-up takes at most (libuv's own batch); the rest wait for the next turn.
    static let batch = 1024
    private let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: SocketPoller.batch)
    /// Sockets in the set.
    private var watched = 0
    /// Sockets adopted and not yet told they are closed (`EventLoop.openHandles` lists them).
    private(set) var open = 0
    /// What sockets are told on the next turn: closed, or their set entry could not be made.
    private var notices: [(socket: TCPSocket, closed: Bool)] = []

    /// nil when the kernel will not make an epoll set (out of descriptors).
    init?(loop: UnsafeMutablePointer<uv_loop_t>) {
        epoll = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard epoll >= 0, uv_poll_init(loop, handle, epoll) == 0 else {
            if epoll >= 0 { _ = Glibc.close(epoll) }
            free(handle)
            free(noticer)
            events.deallocate()
            return nil
        }
        uv_idle_init(loop, noticer)
        handle.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        noticer.pointee.data = handle.pointee.data
    }

    private static func of<T>(_ h: UnsafeMutablePointer<T>?) -> SocketPoller {
        Unmanaged<SocketPoller>.fromOpaque(handlePointer(h!).pointee.data).takeUnretainedValue()
    }

    /// Whether `h` is one of the poller's own handles (the loop does not count them as open).
    func owns(_ h: UnsafeMutablePointer<uv_handle_t>) -> Bool {
        h == handlePointer(handle) || h == handlePointer(noticer)
    }

    /// A socket was adopted: it is counted open until it is told it is closed.
    func adopted() { open += 1 }

    /// Watches `socket` for `events` (`UV_READABLE`, `UV_WRITABLE`) instead of
    /// `previously`: added to the set, changed, or removed when it wants nothing.
    /// False when the kernel refused (the socket is then told so next turn, as an error).
    func watch(_ socket: TCPSocket, fd: Int32, _ events: UInt8, previously: UInt8) -> Bool {
        var event = epoll_event()
        if events & UInt8(UV_READABLE.rawValue) != 0 { event.events |= EPOLLIN.rawValue }
        if events & UInt8(UV_WRITABLE.rawValue) != 0 { event.events |= EPOLLOUT.rawValue }
        event.data.ptr = Unmanaged.passUnretained(socket).toOpaque()
        let op = previously == 0 ? EPOLL_CTL_ADD : events == 0 ? EPOLL_CTL_DEL : EPOLL_CTL_MOD
        guard epoll_ctl(epoll, op, fd, &event) == 0 else {
            if previously != 0 { _ = epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nil); changeWatched(by: -1) }
            notify(socket, closed: false)
            return false
        }
        if previously == 0 { changeWatched(by: 1) } else if events == 0 { changeWatched(by: -1) }
        return true
    }

    private func changeWatched(by n: Int) {
        watched += n
        if watched == 0 {
            uv_poll_stop(handle)
        } else if watched == n {
            // The status is never an error: an epoll set polls readable or
            // not (the kernel's `ep_eventpoll_poll`), never with POLLERR.
            uv_poll_start(handle, Int32(UV_READABLE.rawValue)) { h, _, _ in SocketPoller.of(h).ready() }
        }
    }

    /// The set has events: each socket is told its own, one batch a turn.
    private func ready() {
        let n = Int(epoll_wait(epoll, events, Int32(Self.batch), 0))
        for i in 0..<max(n, 0) {
            let event = events[i]
            Unmanaged<TCPSocket>.fromOpaque(event.data.ptr).takeUnretainedValue().polled(event.events)
        }
    }

    /// `socket` is told on the next turn: closed (then the set's reference to it is given up), or that it cannot be watched.
    func notify(_ socket: TCPSocket, closed: Bool) {
        notices.append((socket, closed))
        if notices.count == 1 { uv_idle_start(noticer) { h in SocketPoller.of(h).tell() } }
    }

    private func tell() {
        while !notices.isEmpty {
            let now = notices
            notices = []
            for (socket, closed) in now {
                if closed { open -= 1 }
                socket.noticed(closed: closed)
            }
        }
        uv_idle_stop(noticer)
    }

    /// Closes the set and the handles (the loop is closing: no socket is open).
    func close() {
        tell()
        _ = Glibc.close(epoll)
        events.deallocate()
        for h in [handlePointer(handle), handlePointer(noticer)] {
            uv_close(h) { h in free(h) }
        }
    }
}
