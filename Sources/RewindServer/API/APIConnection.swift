import RewindCore
import RewindLoop

/// One HTTP/1.1 connection to the server API: requests read by http-parser,
/// answered one at a time in the order they came (pipelining keeps its
/// order), kept alive unless the client or an error says otherwise. While
/// more than `maxQueued` requests wait, the socket is not read (back-pressure);
/// a request left half sent past `requestTimeoutMs`, or a connection silent
/// past `idleTimeoutMs`, is closed (`ServerAPI.sweep`).
final class APIConnection: APIStreamSink, TCPStreamOwner {
    static let maxQueued = 16
    /// Bytes of a stream the peer may leave unread before it is cut.
    static let maxUnreadStreamBytes = 1 << 20

    let id: Int
    let stream: TCPStream
    unowned let api: ServerAPI
    let peer: String
    private let parser: HTTPRequestParser
    private var queue: [APIRequest] = []
    /// Why the bytes stopped being HTTP: answered after the requests before it, then the connection ends.
    private var refusal: APIResponse?
    private var answering = false
    private(set) var isClosed = false
    /// Monotonic ms of the last byte read or response written.
    private(set) var lastActive: UInt64
    /// When the request being read began (nil: none is half read).
    private(set) var partialSince: UInt64?
    /// A streamed response is under way: no other request is read or answered.
    private(set) var streaming = false
    /// Bytes handed to the socket and not yet written (queued in it).
    private var unwritten = 0

    init(id: Int, stream: TCPStream, api: ServerAPI, now: UInt64) {
        self.id = id
        self.stream = stream
        self.api = api
        peer = stream.peerName
        lastActive = now
        parser = HTTPRequestParser(maxHeaderBytes: api.limits.maxHeaderBytes, maxBodyBytes: api.limits.maxBodyBytes)
    }

    // Held by the stream until its handle is closed: libuv reports queued writes after `close()` too.
    func start() { stream.start(self) }

    func streamRead(_ data: UnsafeRawBufferPointer?) {
        guard let data else { return close() }
        if streaming { return }  // a streamed response: nothing the peer sends is read, only its end
        received(data)
    }

    func streamQueuedWritten(_ bytes: Int, ok: Bool) { unwritten -= bytes }

    private func received(_ data: UnsafeRawBufferPointer) {
        lastActive = api.now
        let (requests, failure) = parser.feed(data)
        queue += requests
        if let failure {
            // Nothing after it is understood: stop reading; it is answered after what came before it.
            stream.pauseReading()
            var p = APIResponse.problem(RewindError(.badRequest, failure.message), status: failure.status)
            if failure.status == 405 { p.headers.append(("Allow", "GET, POST, PUT, DELETE")) }
            refusal = p
            partialSince = nil
            return answerNext()
        }
        partialSince = parser.inRequest ? (partialSince ?? api.now) : nil
        if queue.count >= Self.maxQueued { stream.pauseReading() }
        answerNext()
    }

    private func answerNext() {
        guard !answering, !isClosed else { return }
        guard !queue.isEmpty else {
            if let refusal { send(refusal, keepAlive: false) }
            return
        }
        answering = true
        let r = queue.removeFirst()
        api.answer(r, from: self) { [weak self] response in
            guard let self, !self.isClosed else { return }
            self.answering = false
            self.send(response, keepAlive: r.keepAlive && !self.api.stopping)
            if r.keepAlive && self.refusal == nil && queue.count < Self.maxQueued { self.stream.resumeReading() }
            self.answerNext()
        }
    }

    private func send(_ response: APIResponse, keepAlive: Bool) {
        guard !isClosed else { return }
        lastActive = api.now
        unwritten += stream.write([SharedBytes(response.encoded(keepAlive: keepAlive))])
        api.answered(response.status)
        if let body = response.stream {
            // Nothing else on this connection: what the peer sends is not read, the stream runs until it leaves.
            streaming = true
            answering = true
            queue.removeAll()
            stream.resumeReading()  // for its end (`streamRead`), nothing more
            return body(self)
        }
        if !keepAlive { close() }
    }

    // MARK: A streamed response (APIStreamSink)

    var isOpen: Bool { !isClosed }

    @discardableResult
    func write(_ bytes: [UInt8]) -> Bool {
        guard !isClosed else { return false }
        guard unwritten <= Self.maxUnreadStreamBytes, !stream.writeFailed else {
            close(now: true)  // a follower that stopped reading: cut at once (it resumes from its last position)
            return false
        }
        lastActive = api.now
        unwritten += stream.write([SharedBytes(bytes)])
        return true
    }

    func end() { close() }

    /// A half-read request past the timeout: 408, then closed.
    func timedOut() {
        guard !answering else { return close() }
        send(.problem(RewindError(.badRequest, "the request was not complete within \(api.limits.requestTimeoutMs / 1000) s"), status: 408),
             keepAlive: false)
    }

    /// Closes after what is queued is written; a peer that never reads it is
    /// reset after `ServerAPI.closeGraceMs` (`now`: at once, queued bytes dropped).
    func close(now: Bool = false) {
        guard !isClosed else { return }
        isClosed = true
        stream.close(now: now)
        api.ended(self, stillWriting: !now && unwritten > 0 ? stream : nil)
    }
}
