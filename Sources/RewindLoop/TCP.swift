import CLibUV
import Glibc

/// A listening TCP socket.
public final class TCPListener {
    private let handle = allocateHandle(uv_tcp_t.self)
    private let loop: EventLoop
    /// Makes the socket for a connection being accepted, accepts into it and hands it on.
    private var onConnection: (UnsafeMutablePointer<uv_stream_t>) -> Void = { _ in }
    /// An accept that failed (out of descriptors, …): the libuv error code.
    public var onAcceptError: (Int32) -> Void = { _ in }

    public init(loop: EventLoop) {
        self.loop = loop
        uv_tcp_init(loop.raw, handle)
        handle.pointee.data = Unmanaged.passRetained(self as AnyObject).toOpaque()
    }

    /// Binds and listens; throws a readable libuv error (address in use, …).
    /// Each connection is a `TCPStream` handed to `body`, which makes it an owner.
    public func listen(host: String, port: Int, backlog: Int32 = 1024, _ body: @escaping (TCPStream) -> Void) throws(LoopError) {
        try listen(host: host, port: port, backlog: backlog, making: TCPStream.init(loop:), body)
    }

    /// Binds and listens; each connection is accepted into a socket `make`
    /// creates (a `TCPSocket` subclass: what serves the connection and its
    /// socket are then one allocation), then handed to `body`.
    public func listen<Socket: TCPSocket>(host: String, port: Int, backlog: Int32 = 1024, making make: @escaping (EventLoop) -> Socket,
                                          _ body: @escaping (Socket) -> Void) throws(LoopError) {
        onConnection = { [unowned self] server in
            // libuv has accepted the descriptor (its `uv__server_io`, with the
            // reserve-descriptor trick when out of them) and holds it for
            // `uv_accept`, which would open a libuv stream on it. The socket
            // is watched through the loop's epoll set instead (`TCPSocket`,
            // `SocketPoller`), so it is
            // taken as `uv_accept` takes it: from `accepted_fd`, left at -1 so
            // that libuv goes on accepting (libuv 1.x, src/unix/stream.c).
            let descriptor = server.pointee.accepted_fd
            guard descriptor >= 0 else { return }
            server.pointee.accepted_fd = -1
            let socket = make(self.loop)
            let rc = socket.adopt(descriptor)
            if rc == 0 {
                body(socket)
            } else {
                _ = Glibc.close(descriptor)
                self.onAcceptError(rc)
            }
        }
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
            me.onConnection(server!)
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

/// What a `TCPStream` reports to whoever serves it. One reference to the
/// owner, not two closures: a closure capturing its owner is an allocation
/// of its own, for every connection, for as long as it lives.
public protocol TCPStreamOwner: AnyObject {
    /// Data read, or nil at end of stream / error (the connection is then finished).
    func streamRead(_ data: UnsafeRawBufferPointer?)
    /// A write's queued rest (see `TCPSocket.write`) is written, or failed:
    /// `bytes` is what `write` returned.
    func streamQueuedWritten(_ bytes: Int, ok: Bool)
}

/// A connected TCP socket that tells an owner what is read and written (the
/// HTTP API's and the metrics endpoint's connections).
public final class TCPStream: TCPSocket {
    /// Held strongly (a weak reference would make every retain of the owner
    /// take the runtime's slow path) from `start` until the handle is closed,
    /// after the last write callback: reads stop reaching it at `close`.
    private var owner: (any TCPStreamOwner)?

    /// Starts reading for `owner`, which is told what is read and written.
    public func start(_ owner: any TCPStreamOwner) {
        self.owner = owner
        resumeReading()
    }

    public override func socketRead(_ data: UnsafeRawBufferPointer?) { owner?.streamRead(data) }
    public override func socketQueuedWritten(_ bytes: Int, ok: Bool) { owner?.streamQueuedWritten(bytes, ok: ok) }
    public override func socketHandleClosed() { owner = nil }
}
