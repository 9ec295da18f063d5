import CLibUV
import Glibc

/// A connected TCP socket: what is read and written is told to the subclass
/// that serves it (`socketRead`, `socketQueuedWritten`), writes take shared
/// bytes. The server's terminal connection is such a subclass, so that the
/// socket's state and the connection's are one allocation (every idle
/// terminal holds one: `scripts/bench/idle`); `TCPStream` is the subclass
/// that tells an owner instead, for connections few enough not to matter.
///
/// The socket is read and written here, as Redis does, not through libuv's
/// stream (`uv_tcp_t`, 248 bytes, class 256: it keeps a write queue and a read
/// callback in every handle, and the connection keeps its own already), and
/// watched through the loop's one epoll set (`SocketPoller`), not a poll
/// handle of its own (`uv_poll_t`, 160 bytes). An idle terminal holds no
/// libuv handle at all.
open class TCPSocket {
    /// The loop the socket is on (the socket lives no longer than its loop).
    public final unowned(unsafe) let loop: EventLoop
    /// What the socket could not take at once, in order; nil when nothing waits.
    private final var queued: QueuedWrites?
    /// The descriptor: -1 until adopted, and from the moment it is closed.
    private final var fd: Int32 = -1
    /// Closed (`close`, `reset`): nothing more is read or written.
    public private(set) final var isSocketClosed = false
    /// True while the socket's bytes are read for the subclass (see `pauseReading`).
    public private(set) final var isReading = false
    /// A write failed (the peer reset the connection, or it is gone): nothing
    /// written from now on reaches anyone. The read side may never say so —
    /// a server that stops reading a peer which does not read is the usual
    /// case — so the writer must look here.
    public private(set) final var writeFailed = false
    /// The events watched now (`UV_READABLE`, `UV_WRITABLE`; 0: not in the
    /// poller's set). Pausing leaves `UV_READABLE` watched until the socket is
    /// next readable (as libuv's own streams do): a pause and a resume in
    /// between, which every request that waits for a commit makes, cost no
    /// system call.
    private final var watching: UInt8 = 0

    private final var isOpen: Bool { fd >= 0 }

    /// The socket is not open until the listener hands it a descriptor
    /// (`adopt`); it then holds itself (through the loop's poller) until it
    /// is told it is closed: whatever it is, it lives as long as it may be called.
    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// Takes an accepted, connected descriptor: 0, or a libuv error (the
    /// descriptor is then the caller's to close).
    final func adopt(_ descriptor: Int32) -> Int32 {
        guard let poller = loop.socketPoller() else { return Int32(UV_EMFILE.rawValue) }
        fd = descriptor
        poller.adopted()
        _ = Unmanaged.passRetained(self)  // given up when told it is closed (`noticed`)
        var one: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return 0
    }

    /// Data read, or nil at end of stream / error (the connection is then
    /// finished). Not called once the socket is closed.
    open func socketRead(_ data: UnsafeRawBufferPointer?) {}
    /// A write's queued rest (see `write`) is written, or failed: `bytes` is what `write` returned.
    open func socketQueuedWritten(_ bytes: Int, ok: Bool) {}
    /// The socket is closed, on the loop turn after `close` or `reset`: nothing more will be called.
    open func socketHandleClosed() {}

    /// Stops taking bytes from the socket: what the peer sends waits in the
    /// kernel's buffers (and then in the peer's), which is back-pressure.
    public final func pauseReading() {
        isReading = false  // the poll stops watching the next time the socket is readable
    }

    public final func resumeReading() {
        guard !isReading, !isSocketClosed else { return }
        isReading = true
        if watching & UInt8(UV_READABLE.rawValue) == 0 { watch() }
    }

    /// Watches what is wanted now: readable while reading, writable while writes wait.
    private final func watch() {
        guard isOpen else { return }
        var want: UInt8 = 0
        if isReading { want |= UInt8(UV_READABLE.rawValue) }
        if queued != nil { want |= UInt8(UV_WRITABLE.rawValue) }
        guard want != watching else { return }
        let previously = watching
        watching = 0
        if loop.socketPoller()!.watch(self, fd: fd, want, previously: previously) { watching = want }
    }

    /// What the poller's set says of the socket (epoll's events), read as
    /// libuv reads a poll handle's: an error stops the watching and is told
    /// once; a hang-up alone counts as the events watched.
    final func polled(_ events: UInt32) {
        guard isOpen, watching != 0 else { return }  // closed, or stopped, since the set said so
        if events & EPOLLERR.rawValue != 0 { return failed() }
        var events = events
        if events & (EPOLLIN.rawValue | EPOLLOUT.rawValue) == 0 && events & EPOLLHUP.rawValue != 0 {
            events |= EPOLLIN.rawValue | EPOLLOUT.rawValue
        }
        if events & EPOLLOUT.rawValue != 0 && watching & UInt8(UV_WRITABLE.rawValue) != 0 { writeQueued() }
        if events & EPOLLIN.rawValue != 0 && watching & UInt8(UV_READABLE.rawValue) != 0 { readable() }
    }

    /// An error on the socket (the peer reset it), or the poller could not watch it: nothing more is watched.
    private final func failed() {
        if watching != 0 {
            _ = loop.socketPoller()!.watch(self, fd: fd, 0, previously: watching)
            watching = 0
        }
        failQueued()
        if isReading && !isSocketClosed { ended() }
    }

    /// Told by the poller, on a later loop turn: the socket is closed (the
    /// poller's reference to it is given up: usually the last), or it could not be watched.
    final func noticed(closed: Bool) {
        guard closed else { return isOpen ? failed() : () }
        handleClosed()
        Unmanaged.passUnretained(self).release()
    }

    private final func readable() {
        guard !isSocketClosed else { return }
        guard isReading else { return watch() }  // paused: stop watching now
        let buffer = loop.readBuffer
        let n = Glibc.read(fd, buffer, EventLoop.readBufferSize)
        if n > 0 {
            socketRead(UnsafeRawBufferPointer(start: buffer, count: n))
        } else if n == 0 || !Self.wouldBlock(errno) {
            ended()
        }
    }

    /// End of stream, or a read failed: nothing more is read.
    private final func ended() {
        isReading = false
        watch()
        socketRead(nil)
    }

    /// IOV_MAX on Linux (the C macro does not reach Swift): more buffers go in the next call.
    private static let maxBuffers = 1024

    private static func wouldBlock(_ e: Int32) -> Bool { e == EAGAIN || e == EWOULDBLOCK || e == EINTR }

    /// One `sendmsg` (a `writev` that raises no SIGPIPE) of up to IOV_MAX buffers.
    private final func send(_ buffers: UnsafeMutablePointer<iovec>, _ count: Int) -> Int {
        var message = msghdr()
        message.msg_iov = buffers
        message.msg_iovlen = min(count, Self.maxBuffers)
        return Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
    }

    /// Writes `chunks` in order. What the socket takes at once is written
    /// now, with one `sendmsg` and no allocation; only the rest (the socket's
    /// buffer is full, or earlier writes are still queued) is kept, holding
    /// the chunks it needs, and written as the socket takes it;
    /// `socketQueuedWritten` reports when all of it is.
    /// Returns the bytes queued: 0 means all of it was written now (or the
    /// stream is closed, or the socket failed: `writeFailed` says so).
    public final func write(_ chunks: [SharedBytes]) -> Int {
        guard !isSocketClosed, isOpen, !chunks.isEmpty else { return 0 }
        loop.writesThisTurn += 1
        var total = 0
        var written = 0
        if queued == nil {  // else order is kept: all of it goes behind
            written = withUnsafeTemporaryAllocation(of: iovec.self, capacity: chunks.count) { buffers -> Int in
                for (i, c) in chunks.enumerated() {
                    buffers[i] = iovec(iov_base: c.base, iov_len: c.count)
                    total += c.count
                }
                return send(buffers.baseAddress!, chunks.count)
            }
            if written == total { return 0 }
            if written < 0 {
                guard Self.wouldBlock(errno) else { writeFailed = true; return 0 }
                written = 0
            }
        } else {
            for c in chunks { total += c.count }
        }
        var first = 0
        var skip = written
        while skip >= chunks[first].count { skip -= chunks[first].count; first += 1 }
        let request = QueuedWrite(chunks: chunks[first...], skip: skip, bytes: total - written)
        if let queued {
            queued.requests.append(request)
        } else {
            queued = QueuedWrites(request)
            watch()
        }
        return total - written
    }

    /// The socket takes more: writes what waits, in order, reporting each write's rest once it is all written.
    private final func writeQueued() {
        while let q = queued, isOpen {
            let request = q.requests[0]
            let n = send(request.buffers + request.next, request.count - request.next)
            if n < 0 {
                if Self.wouldBlock(errno) { return }
                return failQueued()
            }
            guard request.advance(by: n) else { return }  // taken in part: the socket is full again
            q.requests.removeFirst()
            if q.requests.isEmpty {
                queued = nil
                if q.shutdownWhenWritten {
                    _ = shutdown(fd, Int32(SHUT_WR))
                    closeDescriptor()
                } else {
                    watch()
                }
            }
            socketQueuedWritten(request.bytes, ok: true)
        }
    }

    /// A write failed: every queued write is reported failed, and a close waiting for them goes on.
    private final func failQueued() {
        writeFailed = true
        guard let q = queued else { return }
        queued = nil
        watch()
        for request in q.requests { socketQueuedWritten(request.bytes, ok: false) }
        if q.shutdownWhenWritten { closeDescriptor() }
    }

    /// Closes after queued writes are flushed (shutdown), or at once if `now`.
    /// A stream whose shutdown is still waiting on a peer that does not read
    /// can be closed again with `now: true`: pending writes are then cancelled.
    public final func close(now: Bool = false) {
        if isSocketClosed {
            if now { closeDescriptor() }
            return
        }
        isSocketClosed = true
        isReading = false
        if let queued, !now {
            queued.shutdownWhenWritten = true
            watch()  // writable only
            return
        }
        if !now && isOpen { _ = shutdown(fd, Int32(SHUT_WR)) }
        closeDescriptor()
    }

    /// Closes at once with a reset (RST): what the kernel still holds for a
    /// peer that does not read is dropped, not kept sending, and the peer's
    /// next read fails (`ECONNRESET`) — never a clean end of stream in the
    /// middle of a message (SO_LINGER set to zero, then closed).
    public final func reset() {
        isSocketClosed = true
        isReading = false
        guard isOpen else { return }
        var l = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        closeDescriptor()
    }

    /// Stops watching and closes the descriptor now; the socket is told on
    /// the next turn (`noticed`), when what was queued is reported failed.
    private final func closeDescriptor() {
        guard isOpen else { return }
        isSocketClosed = true
        isReading = false
        let poller = loop.socketPoller()!
        if watching != 0 { _ = poller.watch(self, fd: fd, 0, previously: watching) }
        watching = 0
        _ = Glibc.close(fd)
        fd = -1
        poller.notify(self, closed: true)
    }

    private final func handleClosed() {
        if let q = queued {
            queued = nil
            writeFailed = true
            for request in q.requests { socketQueuedWritten(request.bytes, ok: false) }
        }
        socketHandleClosed()
    }

    /// "address:port" of the peer, asked of the kernel each time ("?" once it is gone).
    public final var peerName: String {
        guard isOpen else { return "?" }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &len) }
        }
        guard rc == 0 else { return "?" }
        var name = [CChar](repeating: 0, count: 64)
        let port = withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { sin -> Int in
                uv_ip4_name(sin, &name, 64)
                return Int(UInt16(bigEndian: sin.pointee.sin_port))
            }
        }
        let host = String(decoding: name.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(host):\(port)"
    }
}

/// The writes a socket could not take at once, oldest first.
private final class QueuedWrites {
    var requests: [QueuedWrite]
    /// `close()` came while writes waited: shut the socket down once they are written.
    var shutdownWhenWritten = false

    init(_ first: QueuedWrite) { requests = [first] }
}

/// A write's queued rest: keeps its bytes alive until the socket has taken them.
private final class QueuedWrite {
    let chunks: ArraySlice<SharedBytes>
    let buffers: UnsafeMutablePointer<iovec>
    let count: Int
    /// The first buffer not yet written whole (the buffers before it are spent).
    var next = 0
    let bytes: Int

    /// `skip`: bytes of the first chunk already written.
    init(chunks: ArraySlice<SharedBytes>, skip: Int, bytes: Int) {
        self.chunks = chunks
        self.bytes = bytes
        count = chunks.count
        buffers = .allocate(capacity: count)
        var skip = skip
        for (i, c) in chunks.enumerated() {
            buffers[i] = iovec(iov_base: c.base.advanced(by: skip), iov_len: c.count - skip)
            skip = 0
        }
    }

    /// `n` more bytes were written; true once all of them are.
    func advance(by n: Int) -> Bool {
        var n = n
        while next < count && n >= buffers[next].iov_len {
            n -= buffers[next].iov_len
            next += 1
        }
        if next < count {
            buffers[next].iov_base = buffers[next].iov_base! + n
            buffers[next].iov_len -= n
        }
        return next == count
    }

    deinit { buffers.deallocate() }
}
