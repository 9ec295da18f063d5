import CLibUV
import Glibc

/// A connected TCP socket: what is read and written is told to the subclass
/// that serves it (`socketRead`, `socketQueuedWritten`), writes take shared
/// bytes. The server's terminal connection is such a subclass, so that the
/// socket's state and the connection's are one allocation (every idle
/// terminal holds one: `scripts/bench/idle`); `TCPStream` is the subclass
/// that tells an owner instead, for connections few enough not to matter.
open class TCPSocket {
    private let handle = allocateHandle(uv_tcp_t.self)
    /// The loop the socket is on (kept by libuv in the handle, not here: a word less a connection).
    public final var loop: EventLoop { Unmanaged<EventLoop>.fromOpaque(handle.pointee.loop.pointee.data).takeUnretainedValue() }
    final var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }
    /// Closed (`close`, `reset`): nothing more is read or written.
    public private(set) final var isSocketClosed = false
    /// True while libuv reads from the socket for us (see `pauseReading`).
    public private(set) final var isReading = false
    /// A write failed (the peer reset the connection, or it is gone): nothing
    /// written from now on reaches anyone. The read side may never say so —
    /// a server that stops reading a peer which does not read is the usual
    /// case — so the writer must look here.
    public private(set) final var writeFailed = false
    /// True once `uv_close` was called: the handle must not be touched again.
    private final var handleClosing = false

    /// The socket holds itself (through its handle) until the handle is
    /// closed, after the last write callback: whatever it is, it lives as
    /// long as libuv may call it.
    public init(loop: EventLoop) {
        uv_tcp_init(loop.raw, handle)
        uv_tcp_nodelay(handle, 1)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    /// Data read, or nil at end of stream / error (the connection is then
    /// finished). Not called once the socket is closed.
    open func socketRead(_ data: UnsafeRawBufferPointer?) {}
    /// A write's queued rest (see `write`) is written, or failed: `bytes` is what `write` returned.
    open func socketQueuedWritten(_ bytes: Int, ok: Bool) {}
    /// The handle is closed: libuv will call nothing more.
    open func socketHandleClosed() {}

    /// Stops taking bytes from the socket: what the peer sends waits in the
    /// kernel's buffers (and then in the peer's), which is back-pressure.
    public final func pauseReading() {
        guard isReading, !isSocketClosed else { return }
        isReading = false
        uv_read_stop(stream)
    }

    public final func resumeReading() {
        guard !isReading, !isSocketClosed else { return }
        isReading = true
        uv_read_start(stream, { h, _, buf in
            let me = Unmanaged<TCPSocket>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            buf!.pointee = uv_buf_init(me.loop.readBuffer.assumingMemoryBound(to: CChar.self), UInt32(EventLoop.readBufferSize))
        }, { s, n, _ in
            let me = Unmanaged<TCPSocket>.fromOpaque(s!.pointee.data).takeUnretainedValue()
            guard !me.isSocketClosed else { return }
            if n > 0 {
                me.socketRead(UnsafeRawBufferPointer(start: me.loop.readBuffer, count: n))
            } else if n < 0 {
                uv_read_stop(s)
                me.isReading = false
                me.socketRead(nil)
            }
        })
    }

    /// Writes `chunks` in order. What the socket takes at once is written
    /// now, with one `writev` and no allocation; only the rest (the socket's
    /// buffer is full, or earlier writes are still queued) is handed to libuv,
    /// holding the chunks it needs until `socketQueuedWritten` reports it.
    /// Returns the bytes queued: 0 means all of it was written now (or the
    /// stream is closed, or the socket failed: `writeFailed` says so).
    public final func write(_ chunks: [SharedBytes]) -> Int {
        guard !isSocketClosed, !chunks.isEmpty else { return 0 }
        loop.writesThisTurn += 1
        let n = chunks.count
        return withUnsafeTemporaryAllocation(of: uv_buf_t.self, capacity: n) { bufs -> Int in
            var total = 0
            for i in 0..<n {
                let c = chunks[i]
                bufs[i] = uv_buf_init(c.base.assumingMemoryBound(to: CChar.self), UInt32(c.count))
                total += c.count
            }
            var written = Int(uv_try_write(stream, bufs.baseAddress, UInt32(n)))
            if written == total { return 0 }
            if written < 0 {
                // UV_EAGAIN: nothing taken (the socket is full, or a queued write is ahead: order is kept).
                guard written == Int(UV_EAGAIN.rawValue) else { writeFailed = true; return 0 }
                written = 0
            }
            // Queue the rest, from the first chunk not written whole.
            var first = 0
            var skip = written
            while skip >= chunks[first].count { skip -= chunks[first].count; first += 1 }
            let request = WriteRequest(chunks: chunks[first...], skip: skip, bytes: total - written)
            let req = allocateHandle(uv_write_t.self)
            req.pointee.data = Unmanaged.passRetained(request).toOpaque()
            let rc = uv_write(req, stream, request.buffers, UInt32(request.chunks.count)) { req, status in
                let request = Unmanaged<WriteRequest>.fromOpaque(req!.pointee.data).takeRetainedValue()
                let me = Unmanaged<TCPSocket>.fromOpaque(req!.pointee.handle!.pointee.data).takeUnretainedValue()
                free(req)
                if status != 0 { me.writeFailed = true }
                me.socketQueuedWritten(request.bytes, ok: status == 0)
            }
            if rc != 0 {
                Unmanaged<WriteRequest>.fromOpaque(req.pointee.data).release()
                free(req)
                writeFailed = true
                return 0
            }
            return total - written
        }
    }

    /// Closes after queued writes are flushed (shutdown), or at once if `now`.
    /// A stream whose shutdown is still waiting on a peer that does not read
    /// can be closed again with `now: true`: pending writes are then cancelled.
    public final func close(now: Bool = false) {
        if isSocketClosed {
            if now { closeStreamHandle() }
            return
        }
        isSocketClosed = true
        uv_read_stop(stream)
        if now { closeStreamHandle(); return }
        let req = allocateHandle(uv_shutdown_t.self)
        req.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        if uv_shutdown(req, stream, { req, _ in
            let me = Unmanaged<TCPSocket>.fromOpaque(req!.pointee.data).takeUnretainedValue()
            free(req)
            me.closeStreamHandle()
        }) != 0 {
            free(req)
            closeStreamHandle()
        }
    }

    /// Closes at once with a reset (RST): what the kernel still holds for a
    /// peer that does not read is dropped, not kept sending, and the peer's
    /// next read fails (`ECONNRESET`) — never a clean end of stream in the
    /// middle of a message. SO_LINGER set to zero by hand: libuv's
    /// `uv_tcp_close_reset` refuses a handle with a shutdown pending, which is
    /// exactly the case (`close()` waits for a peer that does not read).
    public final func reset() {
        if !isSocketClosed {
            isSocketClosed = true
            uv_read_stop(stream)
        }
        guard !handleClosing else { return }
        var fd: uv_os_fd_t = -1
        if uv_fileno(handlePointer(handle), &fd) == 0 {
            var l = linger(l_onoff: 1, l_linger: 0)
            _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        }
        closeStreamHandle()
    }

    private final func closeStreamHandle() {
        guard !handleClosing else { return }
        handleClosing = true
        let h = handlePointer(handle)
        if uv_is_closing(h) != 0 { return }
        uv_close(h) { h in
            guard let h else { return }
            if let data = h.pointee.data {
                let me = Unmanaged<TCPSocket>.fromOpaque(data)
                me.takeUnretainedValue().socketHandleClosed()  // pending writes were cancelled before this
                me.release()
            }
            free(h)
        }
    }

    /// "address:port" of the peer, asked of the kernel each time ("?" once it is gone).
    public final var peerName: String {
        var storage = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        let rc = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(handle, $0, &len) }
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

/// Keeps the bytes of a write's queued rest alive until libuv is done with them.
private final class WriteRequest {
    let chunks: ArraySlice<SharedBytes>
    let buffers: UnsafeMutablePointer<uv_buf_t>
    let bytes: Int

    /// `skip`: bytes of the first chunk already written.
    init(chunks: ArraySlice<SharedBytes>, skip: Int, bytes: Int) {
        self.chunks = chunks
        self.bytes = bytes
        buffers = .allocate(capacity: chunks.count)
        var skip = skip
        for (i, c) in chunks.enumerated() {
            buffers[i] = uv_buf_init(c.base.advanced(by: skip).assumingMemoryBound(to: CChar.self), UInt32(c.count - skip))
            skip = 0
        }
    }

    deinit { buffers.deallocate() }
}
