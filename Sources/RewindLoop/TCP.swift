import CLibUV
import Glibc

/// A listening TCP socket.
public final class TCPListener {
    private let handle = allocateHandle(uv_tcp_t.self)
    private let loop: EventLoop
    private var onConnection: (TCPStream) -> Void = { _ in }
    /// An accept that failed (out of descriptors, …): the libuv error code.
    public var onAcceptError: (Int32) -> Void = { _ in }

    public init(loop: EventLoop) {
        self.loop = loop
        uv_tcp_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    /// Binds and listens; throws a readable libuv error (address in use, …).
    public func listen(host: String, port: Int, backlog: Int32 = 1024, _ body: @escaping (TCPStream) -> Void) throws(LoopError) {
        onConnection = body
        var storage = sockaddr_storage()
        var rc = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_addr(host, Int32(port), $0) }
        }
        if rc != 0 {
            rc = withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_addr(host, Int32(port), $0) }
            }
        }
        guard rc == 0 else { throw LoopError("not an IP address: \(host)") }
        rc = withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(handle, $0, 0) }
        }
        guard rc == 0 else { throw LoopError("cannot bind \(host):\(port): \(uvErrorText(rc))") }
        rc = uv_listen(UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self), backlog) { server, status in
            let me = Unmanaged<TCPListener>.fromOpaque(server!.pointee.data).takeUnretainedValue()
            guard status == 0 else { return me.onAcceptError(status) }
            let stream = TCPStream(loop: me.loop)
            let rc = uv_accept(server, stream.stream)
            if rc == 0 {
                me.onConnection(stream)
            } else {
                stream.close(now: true)
                me.onAcceptError(rc)
            }
        }
        guard rc == 0 else { throw LoopError("cannot listen on \(host):\(port): \(uvErrorText(rc))") }
    }

    /// The port actually bound (useful with port 0).
    public var port: Int {
        var storage = sockaddr_storage()
        var len = Int32(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &len) }
        }
        return withUnsafePointer(to: &storage) { p in
            p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    private var closed = false

    public func close() {
        guard !closed else { return }
        closed = true
        onConnection = { _ in }
        onAcceptError = { _ in }
        closeHandle(handle)
    }
}

public struct LoopError: Error, CustomStringConvertible {
    public let description: String
    public init(_ d: String) { description = d }
}

/// What a connected socket reports to whoever serves it. One reference to
/// the owner, not two closures: a closure capturing its owner is an
/// allocation of its own, for every connection, for as long as it lives.
public protocol TCPStreamOwner: AnyObject {
    /// Data read, or nil at end of stream / error (the connection is then finished).
    func streamRead(_ data: UnsafeRawBufferPointer?)
    /// A write's queued rest (see `TCPStream.write`) is written, or failed:
    /// `bytes` is what `write` returned.
    func streamQueuedWritten(_ bytes: Int, ok: Bool)
}

/// A connected TCP socket: reads are pushed to its owner, writes take shared bytes.
public final class TCPStream {
    private let handle = allocateHandle(uv_tcp_t.self)
    public let loop: EventLoop
    var stream: UnsafeMutablePointer<uv_stream_t> { UnsafeMutableRawPointer(handle).assumingMemoryBound(to: uv_stream_t.self) }
    public private(set) var isClosed = false
    /// True while libuv reads from the socket for us (see `pauseReading`).
    public private(set) var isReading = false
    /// A write failed (the peer reset the connection, or it is gone): nothing
    /// written from now on reaches anyone. The read side may never say so —
    /// a server that stops reading a peer which does not read is the usual
    /// case — so the writer must look here.
    public private(set) var writeFailed = false
    /// True once `uv_close` was called: the handle must not be touched again.
    private var handleClosing = false
    /// Held strongly (a weak reference would make every retain of the owner
    /// take the runtime's slow path) from `start` until the handle is closed,
    /// after the last write callback: reads stop reaching it at `close`.
    private var owner: (any TCPStreamOwner)?

    init(loop: EventLoop) {
        self.loop = loop
        uv_tcp_init(loop.raw, handle)
        uv_tcp_nodelay(handle, 1)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    /// Starts reading for `owner`, which is told what is read and written.
    public func start(_ owner: any TCPStreamOwner) {
        self.owner = owner
        resumeReading()
    }

    /// Stops taking bytes from the socket: what the peer sends waits in the
    /// kernel's buffers (and then in the peer's), which is back-pressure.
    public func pauseReading() {
        guard isReading, !isClosed else { return }
        isReading = false
        uv_read_stop(stream)
    }

    public func resumeReading() {
        guard !isReading, !isClosed else { return }
        isReading = true
        uv_read_start(stream, { h, _, buf in
            let me = Unmanaged<TCPStream>.fromOpaque(h!.pointee.data).takeUnretainedValue()
            buf!.pointee = uv_buf_init(me.loop.readBuffer.assumingMemoryBound(to: CChar.self), UInt32(EventLoop.readBufferSize))
        }, { s, n, _ in
            let me = Unmanaged<TCPStream>.fromOpaque(s!.pointee.data).takeUnretainedValue()
            guard !me.isClosed, let owner = me.owner else { return }
            if n > 0 {
                owner.streamRead(UnsafeRawBufferPointer(start: me.loop.readBuffer, count: n))
            } else if n < 0 {
                uv_read_stop(s)
                me.isReading = false
                owner.streamRead(nil)
            }
        })
    }

    /// Writes `chunks` in order. What the socket takes at once is written
    /// now, with one `writev` and no allocation; only the rest (the socket's
    /// buffer is full, or earlier writes are still queued) is handed to libuv,
    /// holding the chunks it needs until the owner's `streamQueuedWritten` reports it.
    /// Returns the bytes queued: 0 means all of it was written now (or the
    /// stream is closed, or the socket failed: `writeFailed` says so).
    public func write(_ chunks: [SharedBytes]) -> Int {
        guard !isClosed, !chunks.isEmpty else { return 0 }
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
                let me = Unmanaged<TCPStream>.fromOpaque(req!.pointee.handle!.pointee.data).takeUnretainedValue()
                free(req)
                if status != 0 { me.writeFailed = true }
                me.owner?.streamQueuedWritten(request.bytes, ok: status == 0)
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
    public func close(now: Bool = false) {
        if isClosed {
            if now { closeStreamHandle() }
            return
        }
        isClosed = true
        uv_read_stop(stream)
        if now { closeStreamHandle(); return }
        let req = allocateHandle(uv_shutdown_t.self)
        req.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        if uv_shutdown(req, stream, { req, _ in
            let me = Unmanaged<TCPStream>.fromOpaque(req!.pointee.data).takeUnretainedValue()
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
    public func reset() {
        if !isClosed {
            isClosed = true
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

    private func closeStreamHandle() {
        guard !handleClosing else { return }
        handleClosing = true
        let h = handlePointer(handle)
        if uv_is_closing(h) != 0 { return }
        uv_close(h) { h in
            guard let h else { return }
            if let data = h.pointee.data {
                let me = Unmanaged<TCPStream>.fromOpaque(data)
                me.takeUnretainedValue().owner = nil  // pending writes were cancelled before this
                me.release()
            }
            free(h)
        }
    }

    public var peer: String {
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
