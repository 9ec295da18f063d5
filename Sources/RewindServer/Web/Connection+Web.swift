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
            // Usually the first read tells; bytes too few to tell are held until more come.
            let first = takeHead(adding: data)
            guard let http = HTTPRequest.startsRequest(first) else { return hold(first) }
            if let refusal { return refuse(refusal, http: http) }
            if http {
                wire.mode = .http
                httpHeadRead(first)
            } else {
                wire.mode = .lines
                first.withUnsafeBytes { wire.received($0) }
                pump()
            }
        case .http:
            httpHeadRead(takeHead(adding: data))
        }
    }

    /// `bytes`: the request head so far (held again if it is not whole).
    private func httpHeadRead(_ bytes: [UInt8]) {
        switch HTTPRequest.parse(bytes) {
        case .needMore: hold(bytes)
        case let .refused(status, reason): respond(HTTPResponse(status, reason))
        case let .request(r, length):
            switch WebRoute.decide(r, origins: settings.config.allowedOrigins, publicOrigins: settings.config.publicOrigins) {
            case let .refuse(status, reason, headers):
                respond(HTTPResponse(status, reason, extraHeaders: headers.map { $0 + "\r\n" }.joined()))
            case let .file(path):
                guard let file = settings.webFiles[path] else { return respond(HTTPResponse(404, "\(path) is not installed on this server")) }
                respond(HTTPResponse(200, body: file.bytes, contentType: file.contentType))
            case let .upgrade(key):
                upgrade(key: key, rest: Array(bytes[length...]))
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
        heard()
        host.webSocketOpened(self)
        rest.withUnsafeBytes { take($0) }
        flush(budgeted: false)
    }

    /// After a read: the transport's own frames (a WebSocket's pongs, its
    /// close echo) go out; a close from the peer, or a protocol error, ends it.
    private func transportRead() {
        if wire.takeHeardSomething() { heard() }
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
    private func refuse(_ r: (reason: String, message: String, until: UInt64), http: Bool) {
        if http {
            respond(HTTPResponse(503, r.message + "; retry", extraHeaders: "Retry-After: 1\r\n"))
        } else {
            close(reason: r.reason, retry: true, message: r.message)
        }
    }

    private func respond(_ r: HTTPResponse) {
        out.queue.append(SharedBytes(r.bytes))
        out.bytes += r.bytes.count
        close(afterWriting: "HTTP \(r.status)")
    }
}
