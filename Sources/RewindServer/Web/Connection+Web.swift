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
        switch wire.mode {
        case .proxyHeader:
            readProxyHeader(data)
        case .lines, .webSocket:
            wire.received(data)
            transportRead()
            pump()
        case .detecting:
            wire.head.append(contentsOf: data)
            if let refusal { return refuse(refusal, http: HTTPRequest.startsRequest(wire.head)) }
            switch HTTPRequest.startsRequest(wire.head) {
            case nil: return  // too few bytes to tell
            case false?:
                wire.mode = .lines
                let first = wire.head
                wire.head = []
                first.withUnsafeBytes { wire.received($0) }
                pump()
            case true?:
                wire.mode = .http
                httpHeadRead()
            }
        case .http:
            wire.head.append(contentsOf: data)
            httpHeadRead()
        }
    }

    private func httpHeadRead() {
        switch HTTPRequest.parse(wire.head) {
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
                let rest = Array(wire.head[length...])
                wire.head = []
                upgrade(key: key, rest: rest)
            }
        }
    }

    /// `101 Switching Protocols`; from here on the connection speaks WebSocket.
    private func upgrade(key: String, rest: [UInt8]) {
        let accept = Base64.encode(Array(Insecure.SHA1.hash(data: Array((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").utf8))))
        let response = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: \(accept)\r\n\r\n"
        out.queue.append(SharedBytes(Array(response.utf8)))
        out.bytes += response.utf8.count
        wire.mode = .webSocket
        wire.webSocket = WebSocketTransport(maxMessageBytes: settings.config.limits.maxFrameBytes)
        lastHeard = host.now
        host.webSocketOpened(self)
        rest.withUnsafeBytes { take($0) }
        flush(budgeted: false)
    }

    /// After a read: the transport's own frames (a WebSocket's pongs, its
    /// close echo) go out; a close from the peer, or a protocol error, ends it.
    private func transportRead() {
        if wire.takeHeardSomething() { lastHeard = host.now }
        queueOwnFrames()
        if wire.readEnded { close(afterWriting: wire.peerClosed ? "closed by peer" : "protocol error") }
    }

    func queueOwnFrames() {
        let own = wire.takeOwnOutput()
        guard !own.isEmpty else { return }
        // Control frames go ahead of what waits behind a reply being streamed: they may come between its fragments.
        for b in own { out.queue.append(b); out.bytes += b.count }
        markDirty()
    }

    /// A WebSocket silent for a third of the idle timeout is pinged (a browser page
    /// cannot send pings itself); its pong counts as activity (`transportRead`).
    func keepAlive() {
        wire.keepAlive()
        queueOwnFrames()
    }

    /// Refused at the door (`Connection.refusal`): nothing it sent is read;
    /// it is told in HTTP or NDJSON, whichever its first bytes are.
    private func refuse(_ r: (reason: String, message: String, until: UInt64), http: Bool?) {
        switch http {
        case nil: return  // too few bytes to tell
        case true?:
            wire.head = []
            respond(HTTPResponse(503, r.message + "; retry", extraHeaders: "Retry-After: 1\r\n"))
        case false?:
            wire.head = []
            close(reason: r.reason, retry: true, message: r.message)
        }
    }

    private func respond(_ r: HTTPResponse) {
        wire.head = []
        out.queue.append(SharedBytes(r.bytes))
        out.bytes += r.bytes.count
        close(afterWriting: "HTTP \(r.status)")
    }
}
