import Crypto
import RewindCore
import RewindLoop

/// What a connection speaks, from its first bytes (after a PROXY header,
/// where one is expected): `GET ` (or another HTTP method) is HTTP, anything
/// else NDJSON. HTTP is one request: a file of the web editor, a refusal, or
/// the upgrade to a WebSocket at `/ws`, after which the connection is a
/// terminal like any other, its messages in text frames (`WebSocketTransport`).
extension Connection {
    /// Bytes read, handed on by mode.
    func take(_ data: UnsafeRawBufferPointer) {
        switch mode {
        case .lines, .webSocket:
            transport.received(data)
            if mode == .webSocket { webSocketRead() }
            pump()
        case .detecting:
            head.append(contentsOf: data)
            if let refusal { return refuse(refusal, http: HTTPRequest.startsRequest(head)) }
            switch HTTPRequest.startsRequest(head) {
            case nil: return  // too few bytes to tell
            case false?:
                mode = .lines
                let first = head
                head = []
                first.withUnsafeBytes { transport.received($0) }
                pump()
            case true?:
                mode = .http
                httpHeadRead()
            }
        case .http:
            head.append(contentsOf: data)
            httpHeadRead()
        }
    }

    private func httpHeadRead() {
        switch HTTPRequest.parse(head) {
        case .needMore: return
        case let .refused(status, reason): respond(HTTPResponse(status, reason))
        case let .request(r, length):
            switch WebRoute.decide(r, origins: settings.config.allowedOrigins, publicOrigins: settings.config.publicOrigins) {
            case let .refuse(status, reason, headers):
                respond(HTTPResponse(status, reason, extraHeaders: headers.map { $0 + "\r\n" }.joined()))
            case let .file(path):
                guard let file = settings.webFiles[path] else { return respond(HTTPResponse(404, "\(path) is not installed on this server")) }
                respond(HTTPResponse(200, body: file.bytes, contentType: file.contentType))
            case let .upgrade(key):
                let rest = Array(head[length...])
                head = []
                upgrade(key: key, rest: rest)
            }
        }
    }

    /// `101 Switching Protocols`; from here on the connection speaks WebSocket.
    private func upgrade(key: String, rest: [UInt8]) {
        let accept = Base64.encode(Array(Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))))
        let response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n"
        output.append(SharedBytes(Array(response.utf8)))
        outputBytes += response.utf8.count
        mode = .webSocket
        transport = WebSocketTransport(maxMessageBytes: settings.config.limits.maxFrameBytes)
        lastHeard = host.now
        host.webSocketOpened(self)
        rest.withUnsafeBytes { take($0) }
        flush(budgeted: false)
    }

    /// After a WebSocket read: its own frames (pongs, a close echo) go out;
    /// a close from the peer, or a protocol error wslay closed it for, ends it.
    private func webSocketRead() {
        guard let ws = transport as? WebSocketTransport else { return }
        if ws.heardSomething {
            ws.heardSomething = false
            lastHeard = host.now
        }
        queueOwnFrames()
        if ws.readEnded { endAfterWriting(reason: ws.peerClosed ? "closed by peer" : "WebSocket protocol error") }
    }

    func queueOwnFrames() {
        let own = transport.takeOwnOutput()
        guard !own.isEmpty else { return }
        // Control frames go ahead of what waits behind a reply being streamed: they may come between its fragments.
        for b in own { output.append(b); outputBytes += b.count }
        markDirty()
    }

    /// A WebSocket silent for a third of the idle timeout is pinged (a browser page
    /// cannot send pings itself); its pong counts as activity (`webSocketRead`).
    func keepAlive() {
        guard mode == .webSocket, let ws = transport as? WebSocketTransport else { return }
        ws.ping()
        queueOwnFrames()
    }

    /// Writes what is queued, then closes, without a `bye`: an HTTP exchange
    /// done, or a WebSocket whose peer closed (its close echoed).
    func endAfterWriting(reason: String) {
        guard !isClosed else { return }
        behind = []
        flush(budgeted: false)
        isClosed = true
        stream.close()
        host.connectionEnded(self, reason: reason)
        host.closeHardLater(stream)
    }

    /// Refused at the door (`Connection.refusal`): nothing it sent is read;
    /// it is told in HTTP or NDJSON, whichever its first bytes are.
    private func refuse(_ r: (reason: String, message: String, until: UInt64), http: Bool?) {
        switch http {
        case nil: return  // too few bytes to tell
        case true?:
            head = []
            respond(HTTPResponse(503, r.message + "; retry", extraHeaders: "Retry-After: 1\r\n"))
        case false?:
            head = []
            close(reason: r.reason, retry: true, message: r.message)
        }
    }

    private func respond(_ r: HTTPResponse) {
        head = []
        output.append(SharedBytes(r.bytes))
        outputBytes += r.bytes.count
        endAfterWriting(reason: "HTTP \(r.status)")
    }
}
