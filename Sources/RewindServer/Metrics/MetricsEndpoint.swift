import Logging
import RewindCore
import RewindLoop

/// `--metrics HOST:PORT`: a tiny HTTP/1.1 server on the server's own loop,
/// for Prometheus (`GET /metrics`) and load balancers or orchestrators
/// (`GET /health`). Each connection carries one request: its head is read
/// (at most `maxRequestBytes`, within `requestTimeoutMs`), answered, and the
/// connection closed (`Connection: close`). Anything else: 404 for another
/// path, 405 for another method, 400 for what is not HTTP, 431 past the size,
/// 408 past the time.
final class MetricsEndpoint {
    static let maxRequestBytes = 8 << 10
    static let requestTimeoutMs: UInt64 = 5_000
    /// Exchanges open at once; past it a new one is closed unanswered (a scraper needs one).
    static let maxExchanges = 64

    private let logger: Logger
    /// What `GET /metrics` answers (the text format).
    private let metricsText: () -> [UInt8]
    /// What `GET /health` asks: healthy, and why not.
    private let checkHealth: (@escaping (_ healthy: Bool, _ reason: String) -> Void) -> Void
    private let listener: TCPListener
    private var exchanges: [Int: Exchange] = [:]
    private var nextID = 1

    init(loop: EventLoop, logger: Logger, metricsText: @escaping () -> [UInt8],
         checkHealth: @escaping (@escaping (_ healthy: Bool, _ reason: String) -> Void) -> Void) {
        self.logger = logger
        self.metricsText = metricsText
        self.checkHealth = checkHealth
        listener = TCPListener(loop: loop)
    }

    /// Binds and listens; returns the port bound.
    func start(host: String, port: Int) throws(LoopError) -> Int {
        listener.onAcceptError = { [unowned self] code in
            self.logger.warning("metrics endpoint: accept failed", metadata: ["error": "\(uvErrorText(code))"])
        }
        try listener.listen(host: host, port: port, backlog: 64) { [unowned self] stream in self.accept(stream) }
        return listener.port
    }

    func stop() {
        listener.close()
        for e in exchanges.values { e.finish(now: true) }
        exchanges = [:]
    }

    private func accept(_ stream: TCPStream) {
        guard exchanges.count < Self.maxExchanges else { return stream.close(now: true) }
        let e = Exchange(id: nextID, stream: stream, endpoint: self)
        nextID += 1
        exchanges[e.id] = e
        e.start()
    }

    fileprivate func ended(_ e: Exchange) { exchanges[e.id] = nil }

    /// The answer to a complete request head.
    fileprivate func respond(to head: HTTPRequest.Head, _ answer: @escaping (HTTPResponse) -> Void) {
        switch head {
        case .needMore: return
        case let .refused(status, why): answer(HTTPResponse(status, why))
        case let .request(r, _):
            let (method, path) = (r.method, r.path)
            guard path == "/metrics" || path == "/health" else { return answer(HTTPResponse(404, "no \(path) here: GET /metrics or GET /health")) }
            guard method == "GET" else { return answer(HTTPResponse(405, "\(path) answers GET only", extraHeaders: "Allow: GET\r\n")) }
            if path == "/metrics" {
                answer(HTTPResponse(200, body: metricsText(), contentType: "text/plain; version=0.0.4; charset=utf-8"))
            } else {
                checkHealth { healthy, reason in answer(HTTPResponse(healthy ? 200 : 503, reason)) }
            }
        }
    }

    /// One connection, one request, one answer.
    fileprivate final class Exchange: TCPStreamOwner {
        let id: Int
        private let stream: TCPStream
        private unowned let endpoint: MetricsEndpoint
        private var head: [UInt8] = []
        private let timer: Timer
        private var answered = false
        private var finished = false

        init(id: Int, stream: TCPStream, endpoint: MetricsEndpoint) {
            self.id = id
            self.stream = stream
            self.endpoint = endpoint
            timer = Timer(loop: stream.loop)
        }

        func start() {
            // One timer bounds the whole exchange: reading the head, then
            // the peer reading the answer (a peer that does not is cut off).
            timer.start(after: MetricsEndpoint.requestTimeoutMs) { [unowned self] in
                if self.answered { self.finish(now: true) } else { self.answer(HTTPResponse(408, "no complete request within \(MetricsEndpoint.requestTimeoutMs / 1000) s")) }
            }
            stream.start(self)
        }

        func streamRead(_ data: UnsafeRawBufferPointer?) {
            guard let data else { return finish(now: true) }
            guard !answered else { return }  // a body or a second request: ignored, the answer says close
            head.append(contentsOf: data)
            // The port's own parser (Web/): bounded, 431 past 8 KiB.
            let parsed = HTTPRequest.parse(head, maxBytes: MetricsEndpoint.maxRequestBytes)
            if parsed == .needMore { return }
            stream.pauseReading()
            endpoint.respond(to: parsed) { [self] response in self.answer(response) }
        }

        func streamQueuedWritten(_ bytes: Int, ok: Bool) {}

        private func answer(_ r: HTTPResponse) {
            guard !answered, !finished else { return }
            answered = true
            // Usually the socket takes it all at once; otherwise the timer
            // (restarted here) cuts off a peer that does not read it.
            if stream.write([SharedBytes(r.bytes)]) == 0 { return finish(now: false) }
            stream.close()  // shuts down once the answer is written
            timer.start(after: MetricsEndpoint.requestTimeoutMs) { [unowned self] in self.finish(now: true) }
        }

        /// `now`: the socket is closed at once, unsent bytes dropped.
        func finish(now: Bool) {
            guard !finished else { return }
            finished = true
            timer.close()
            stream.close(now: now)
            endpoint.ended(self)
        }
    }
}

/// An HTTP/1.1 answer that closes the connection.
struct HTTPResponse {
    let status: Int
    let bytes: [UInt8]

    /// A short text answer: `body` and a newline.
    init(_ status: Int, _ body: String, extraHeaders: String = "") {
        self.init(status, body: Array((body + "\n").utf8), contentType: "text/plain; charset=utf-8", extraHeaders: extraHeaders)
    }

    init(_ status: Int, body: [UInt8], contentType: String, extraHeaders: String = "") {
        let head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
            + "Cache-Control: no-cache\r\nConnection: close\r\n\(extraHeaders)\r\n"
        bytes = Array(head.utf8) + body
        self.status = status
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 426: "Upgrade Required"
        case 431: "Request Header Fields Too Large"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
