import Glibc
import RewindLoop
import XCTest

/// The socket under every terminal (`TCPSocket`) reads and writes its
/// descriptor itself, watched through the loop's one epoll set (`SocketPoller`),
/// not a libuv handle of its own: what the socket cannot
/// take at once waits, in order, and is written as the peer reads; a close
/// waits for it; a reset or a peer gone tells the writer. Real sockets on
/// loopback, the loop turned by the test.
final class TCPSocketTests: XCTestCase {
    /// 16 MiB in 64 KiB writes to a peer that reads nothing at first: most of
    /// it waits in the socket; then the peer reads, and gets every byte in
    /// order and then the end of the stream, which the close waited for.
    func testWritesThatWaitArriveWholeAndInOrderAndTheCloseWaitsForThem() throws {
        let (loop, listener, peer, socket, owner) = try connectedPair()
        defer { listener.close(); close(peer) }
        let chunks = (0..<256).map { i in SharedBytes(Array(repeating: UInt8(i), count: 64 * 1024)) }
        var queued = 0
        for c in chunks { queued += socket.write([c]) }
        XCTAssertGreaterThan(queued, 0, "a peer that does not read leaves writes waiting")
        socket.close()  // after what waits
        var received: [UInt8] = []
        received.reserveCapacity(16 << 20)
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            _ = loop.runOnce()
            let n = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { received += buffer[..<n] } else if n == 0 { break } else { usleep(100) }
        }
        XCTAssertEqual(received.count, 16 << 20, "every byte, then the end of the stream")
        for i in stride(from: 0, to: received.count, by: 64 * 1024) where received[i] != UInt8(i / (64 * 1024)) {
            return XCTFail("chunk \(i / (64 * 1024)) out of order")
        }
        XCTAssertEqual(owner.written, queued, "every queued byte is reported written")
        XCTAssertEqual(owner.failed, 0)
    }

    /// A reset drops what waits, and the writer is told each waiting write failed.
    func testAResetDropsWhatWaitsAndSaysSo() throws {
        let (loop, listener, peer, socket, owner) = try connectedPair()
        defer { listener.close(); close(peer) }
        var queued = 0
        for _ in 0..<256 { queued += socket.write([SharedBytes(Array(repeating: 7, count: 64 * 1024))]) }
        XCTAssertGreaterThan(queued, 0)
        socket.reset()
        try turn(loop, until: { owner.closed }, "the handle to close")
        XCTAssertEqual(owner.failed, queued, "the waiting writes are reported failed")
        XCTAssertTrue(socket.writeFailed)
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var total = 0
        var n = 0
        repeat {
            n = buffer.withUnsafeMutableBytes { recv(peer, $0.baseAddress, $0.count, 0) }
            total += max(n, 0)
        } while n > 0
        XCTAssertEqual(n, -1, "the peer's read fails")
        XCTAssertEqual(errno, ECONNRESET, "with a reset, not a clean end")
        XCTAssertLessThan(total, 16 << 20)
    }

    /// A peer that resets while writes wait: they are reported failed, and the reader hears the end.
    func testAPeerThatResetsFailsWhatWaits() throws {
        let (loop, listener, peer, socket, owner) = try connectedPair()
        defer { listener.close() }
        var queued = 0
        for _ in 0..<256 { queued += socket.write([SharedBytes(Array(repeating: 7, count: 64 * 1024))]) }
        XCTAssertGreaterThan(queued, 0)
        var l = linger(l_onoff: 1, l_linger: 0)
        setsockopt(peer, SOL_SOCKET, SO_LINGER, &l, socklen_t(MemoryLayout<linger>.size))
        close(peer)
        try turn(loop, until: { owner.ended && owner.failed == queued }, "the socket to see the reset")
        XCTAssertTrue(socket.writeFailed)
        XCTAssertEqual(socket.write([SharedBytes([1, 2, 3])]), 0, "nothing is queued on a failed socket")
        socket.close()
        try turn(loop, until: { owner.closed }, "the handle to close")
    }

    /// A paused socket reads nothing, however much arrives; resumed, it reads all of it, in order.
    func testAPausedSocketReadsNothingUntilResumed() throws {
        let (loop, listener, peer, socket, owner) = try connectedPair()
        defer { listener.close(); close(peer) }
        socket.pauseReading()
        let sent = Array("a line\n".utf8) + Array(repeating: UInt8(ascii: "x"), count: 100_000)
        var offset = 0
        while offset < sent.count {
            let n = sent[offset...].withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { offset += n }
            _ = loop.runOnce()
        }
        for _ in 0..<50 { _ = loop.runOnce(); usleep(200) }
        XCTAssertTrue(owner.read.isEmpty, "nothing read while paused")
        socket.resumeReading()
        try turn(loop, until: { owner.read.count == sent.count }, "everything sent to be read")
        XCTAssertEqual(owner.read, sent)
        socket.close(now: true)
        try turn(loop, until: { owner.closed }, "the handle to close")
    }

    /// Two hundred connected sockets add no libuv handle to the loop (a
    /// poll handle each was 160 bytes an idle terminal): each still reads
    /// its own peer's bytes, hears its own peer leave, and is told when it is closed.
    func testManySocketsShareTheLoopsOneHandle() throws {
        let (loop, listener, firstPeer, first, _) = try connectedPair()
        defer { listener.close() }
        let handlesWithOne = loop.openHandles.filter { $0 != "socket" }
        XCTAssertEqual(loop.openHandles.filter { $0 == "socket" }.count, 1)
        var sockets: [Closing] = []
        var peers: [Int32] = []
        for _ in 0..<200 {
            let (peer, socket) = try connect(loop, listener)
            peers.append(peer)
            sockets.append(socket)
        }
        XCTAssertEqual(loop.openHandles.filter { $0 != "socket" }, handlesWithOne, "no libuv handle a socket")
        XCTAssertEqual(loop.openHandles.filter { $0 == "socket" }.count, 201, "every socket is counted open")
        for (i, peer) in peers.enumerated() {
            let line = Array("peer \(i)\n".utf8)
            XCTAssertEqual(line.withUnsafeBytes { Glibc.send(peer, $0.baseAddress, $0.count, 0) }, line.count)
        }
        try turn(loop, until: { sockets.allSatisfy { !$0.owner.read.isEmpty && $0.owner.read.last == 10 } }, "every peer's line")
        for (i, socket) in sockets.enumerated() { XCTAssertEqual(socket.owner.read, Array("peer \(i)\n".utf8)) }
        for peer in peers.prefix(100) { close(peer) }
        try turn(loop, until: { sockets.prefix(100).allSatisfy { $0.owner.ended } }, "the end of the first hundred's streams")
        XCTAssertFalse(sockets.suffix(100).contains { $0.owner.ended }, "only the sockets whose peers left hear it")
        for socket in sockets + [first] { socket.close() }
        try turn(loop, until: { (sockets + [first]).allSatisfy { $0.owner.closed } }, "every socket to be told it is closed")
        XCTAssertFalse(loop.openHandles.contains("socket"))
        for peer in peers.suffix(100) + [firstPeer] { close(peer) }
    }

    /// A paused socket whose peer hangs up is taken out of the set: it does
    /// not wake the loop on every turn (the set is level-triggered, and a
    /// hang-up is reported whatever is watched), and once the listener is
    /// closed nothing keeps the loop running.
    func testAPausedSocketWhosePeerHangsUpLeavesTheLoopAsleep() throws {
        let (loop, listener, peer, socket, owner) = try connectedPair()
        listener.close()
        socket.pauseReading()
        close(peer)
        for _ in 0..<20 { _ = loop.runOnce(); usleep(1000) }
        XCTAssertFalse(loop.runOnce(), "nothing active: the socket is out of the set")
        XCTAssertFalse(owner.ended, "a paused socket reads nothing, not even the end")
        socket.resumeReading()
        try turn(loop, until: { owner.ended }, "the end of the stream once resumed")
        socket.close()
        try turn(loop, until: { owner.closed }, "the socket to be told it is closed")
        XCTAssertTrue(loop.close(), "the loop closes: nothing is left on it")
    }

    /// Two sockets readable in the same batch of events, the first closing
    /// the second as it reads (a terminal's request can end another's
    /// connection: a take-over, an operator's erase): the second's event,
    /// already taken from the set, finds it closed — it reads nothing and is
    /// told it is closed on the next turn, once, while the first goes on.
    func testASocketClosedByAnotherInTheSameBatchReadsNothingMore() throws {
        let (loop, listener, firstPeer, first, _) = try connectedPair()
        defer { listener.close(); close(firstPeer) }
        let (secondPeer, second) = try connect(loop, listener)
        defer { close(secondPeer) }
        first.onRead = { second.reset() }
        second.onRead = { first.reset() }
        for peer in [firstPeer, secondPeer] {
            XCTAssertEqual(Glibc.send(peer, "x\n", 2, 0), 2)
        }
        usleep(20_000)  // both lines are in, so that one poll takes both events
        _ = loop.runOnce()
        let readers = [first, second].filter { !$0.owner.read.isEmpty }
        XCTAssertEqual(readers.count, 1, "the socket closed by the other's read reads nothing")
        XCTAssertFalse(first.owner.ended || second.owner.ended, "nor hears an end it did not read")
        try turn(loop, until: { [first, second].contains { $0.owner.closed } }, "the closed socket to be told")
        for socket in [first, second] { socket.close() }
        try turn(loop, until: { first.owner.closed && second.owner.closed }, "the other to be told too")
        XCTAssertEqual(first.closedNotices + second.closedNotices, 2, "each is told once")
        XCTAssertFalse(loop.openHandles.contains("socket"))
    }

    // MARK: - Harness

    final class Owner: TCPStreamOwner {
        var read: [UInt8] = []
        var ended = false
        var written = 0
        var failed = 0
        var closed = false

        func streamRead(_ data: UnsafeRawBufferPointer?) {
            if let data { read += data } else { ended = true }
        }

        func streamQueuedWritten(_ bytes: Int, ok: Bool) {
            if ok { written += bytes } else { failed += bytes }
        }
    }

    /// A stream that notes when its handle is closed.
    final class Closing: TCPSocket {
        let owner = Owner()
        /// Run on each read (after the owner has it).
        var onRead: () -> Void = {}
        var closedNotices = 0
        override func socketRead(_ data: UnsafeRawBufferPointer?) {
            owner.streamRead(data)
            onRead()
        }
        override func socketQueuedWritten(_ bytes: Int, ok: Bool) { owner.streamQueuedWritten(bytes, ok: ok) }
        override func socketHandleClosed() {
            owner.closed = true
            closedNotices += 1
            onRead = {}  // it held the other socket
        }
    }

    /// A listener on loopback, a peer connected to it with a small receive
    /// buffer (so that writes wait), and the server's side of the connection, reading.
    private func connectedPair() throws -> (EventLoop, TCPListener, Int32, Closing, Owner) {
        let loop = EventLoop()
        let listener = TCPListener(loop: loop)
        try listener.listen(host: "127.0.0.1", port: 0, making: { Closing(loop: $0) }) { self.accepted.append($0) }
        let (peer, socket) = try connect(loop, listener)
        return (loop, listener, peer, socket, socket.owner)
    }

    private var accepted: [Closing] = []

    /// A peer connected to `listener`, and the server's side, reading.
    private func connect(_ loop: EventLoop, _ listener: TCPListener) throws -> (Int32, Closing) {
        let before = accepted.count
        let peer = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size: Int32 = 4096
        setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(peer, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(listener.port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(peer, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        XCTAssertEqual(rc, 0, "connect")
        try turn(loop, until: { accepted.count > before }, "the connection to be accepted")
        let socket = accepted[before]
        XCTAssertTrue(socket.peerName.hasPrefix("127.0.0.1:"), socket.peerName)
        socket.resumeReading()
        return (peer, socket)
    }

    struct Waited: Error, CustomStringConvertible {
        let what: String
        var description: String { "waited 10 s for \(what)" }
    }

    private func turn(_ loop: EventLoop, until done: () -> Bool, _ what: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while !done() {
            guard Date() < deadline else { throw Waited(what: what) }
            _ = loop.runOnce()
            usleep(100)
        }
    }
}
