#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import RewindCore

/// A non-blocking TCP connection carrying newline-terminated lines: plain
/// POSIX sockets, so the client needs nothing but the C library (no libuv on
/// the client's side; an app watches `fd` with its own run loop, or calls
/// `RewindClient.run`).
public final class LineSocket {
    public let fd: Int32
    private var decoder = FrameDecoder(maxFrameBytes: 64 << 20)
    private var pendingOutput: [UInt8] = []
    private var sentOffset = 0

    /// Connects, waiting at most `timeoutMs`.
    public init(host: String, port: Int, timeoutMs: Int32 = 5_000) throws(ClientError) {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let first = list else {
            throw ClientError(code: "unreachable", message: "cannot resolve \(host)")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let a = entry {
            entry = a.pointee.ai_next
            let s = socket(a.pointee.ai_family, a.pointee.ai_socktype, a.pointee.ai_protocol)
            guard s >= 0 else { continue }
            _ = fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK)
            var one: Int32 = 1
            _ = setsockopt(s, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if connect(s, a.pointee.ai_addr, a.pointee.ai_addrlen) == 0 || (errno == EINPROGRESS && Self.finishConnect(s, timeoutMs)) {
                fd = s
                return
            }
            lastError = String(cString: strerror(errno))
            close(s)
        }
        throw ClientError(code: "unreachable", message: "cannot connect to \(host):\(port): \(lastError)")
    }

    private static func finishConnect(_ s: Int32, _ timeoutMs: Int32) -> Bool {
        var p = pollfd(fd: s, events: Int16(POLLOUT), revents: 0)
        guard poll(&p, 1, timeoutMs) == 1 else { errno = ETIMEDOUT; return false }
        var err: Int32 = 0
        var len = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len)
        errno = err
        return err == 0
    }

    deinit { close(fd) }

    /// Queues a line (with its newline) and writes what the socket takes now.
    public func write(_ line: [UInt8]) throws(ClientError) {
        pendingOutput += line
        if line.last != 0x0A { pendingOutput.append(0x0A) }
        try flush()
    }

    /// True while bytes wait for the socket to take them (watch `fd` for writing).
    public var wantsWrite: Bool { sentOffset < pendingOutput.count }

    public func flush() throws(ClientError) {
        while sentOffset < pendingOutput.count {
            let n = pendingOutput.withUnsafeBytes { b in
                send(fd, b.baseAddress! + sentOffset, b.count - sentOffset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 { sentOffset += n; continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            if n < 0 && errno == EINTR { continue }
            throw ClientError(code: "disconnected", message: "write: \(String(cString: strerror(errno)))")
        }
        if sentOffset == pendingOutput.count { pendingOutput.removeAll(keepingCapacity: true); sentOffset = 0 }
    }

    /// Reads what has arrived and returns the complete lines. Throws when the server closed the connection.
    public func readLines() throws(ClientError) -> [[UInt8]] {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[..<n])) }
                if n < buffer.count { break }
                continue
            }
            if n == 0 { throw ClientError(code: "disconnected", message: "the server closed the connection") }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { break }
            throw ClientError(code: "disconnected", message: "read: \(String(cString: strerror(errno)))")
        }
        var lines: [[UInt8]] = []
        while let f = decoder.next() {
            if case let .line(l) = f { lines.append(l) }
        }
        return lines
    }
}
