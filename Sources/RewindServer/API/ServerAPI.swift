import Logging
import RewindCore
import RewindLoop
import RewindStore

/// `--api HOST:PORT`: the HTTP/1.1 JSON API for applications' backends
/// (PROTOCOL.md, "The server API"; the contract is `docs/api/openapi.yaml`),
/// on a listener of its own — never the public port. It authenticates each
/// request by its API key (`Authorization: Bearer`), limits each key's rate,
/// and hands the request to the server (`Server.answerAPI`); this class is
/// the transport: connections, bounds, timeouts.
final class ServerAPI {
    struct Limits {
        var maxHeaderBytes = 16 << 10
        var maxBodyBytes = 1 << 20
        var requestTimeoutMs: UInt64 = 10_000
        var idleTimeoutMs: UInt64 = 60_000
        var maxConnections = 1_000
        /// Requests per second per key, and the burst.
        var rate = 100.0
        var burst = 200.0
    }

    let limits: Limits
    private let logger: Logger
    private let listener: TCPListener
    private let clock: () -> UInt64
    private var connections: [Int: APIConnection] = [:]
    private var nextID = 1
    private var buckets: [Int64: TokenBucket] = [:]
    /// `GET /v1/events` streams under way.
    var followers: [ObjectIdentifier: LogFollower] = [:]
    /// Stopped accepting (shutdown): responses say `Connection: close`.
    private(set) var stopping = false
    /// The server's answer to an authenticated request (set by `Server`).
    var handle: (APIRequest, APIKeys.Key, @escaping (APIResponse) -> Void) -> Void = { _, _, done in
        done(.problem(RewindError(.unavailable, "the API is not ready")))
    }
    /// The key a bearer token is (set by `Server`: the store).
    var lookUpKey: (String, @escaping (Result<APIKeys.Key?, RewindError>) -> Void) -> Void = { _, done in done(.success(nil)) }
    /// Responses by status (metrics).
    var onAnswered: (Int) -> Void = { _ in }

    var now: UInt64 { clock() }

    init(loop: EventLoop, logger: Logger, limits: Limits, clock: @escaping () -> UInt64) {
        self.logger = logger
        self.limits = limits
        self.clock = clock
        listener = TCPListener(loop: loop)
    }

    /// Binds and listens; returns the port bound.
    func start(host: String, port: Int) throws(LoopError) -> Int {
        listener.onAcceptError = { [unowned self] code in
            self.logger.warning("API: accept failed", metadata: ["error": "\(uvErrorText(code))"])
        }
        try listener.listen(host: host, port: port, backlog: 256) { [unowned self] stream in self.accept(stream) }
        return listener.port
    }

    func stop() {
        stopping = true
        listener.close()
        for c in Array(connections.values) { c.close(now: true) }
        for (s, _) in closing { s.reset() }
        closing = []
    }

    /// Connections closed with bytes still queued for a peer that may never
    /// read them, and when they are reset if it has not (`sweep`).
    private var closing: [(stream: TCPStream, deadline: UInt64)] = []
    static let closeGraceMs: UInt64 = 5_000
    /// Streams of `GET /v1/events` at most at once (each holds a PostgreSQL connection): past it 503.
    static let maxFollowers = 32

    private func accept(_ stream: TCPStream) {
        guard connections.count < limits.maxConnections, !stopping else { return stream.close(now: true) }
        let c = APIConnection(id: nextID, stream: stream, api: self, now: now)
        nextID += 1
        connections[c.id] = c
        c.start()
    }

    func ended(_ c: APIConnection, stillWriting stream: TCPStream?) {
        connections[c.id] = nil
        if let stream { closing.append((stream, now + Self.closeGraceMs)) }
    }

    func answered(_ status: Int) { onAnswered(status) }

    /// Once a second (`Server.sweep`): half-read requests past their time, silent connections.
    func sweep() {
        let now = self.now
        for c in Array(connections.values) {
            if let since = c.partialSince, now - since > limits.requestTimeoutMs {
                c.timedOut()
            } else if now - c.lastActive > limits.idleTimeoutMs {
                c.close()
            }
        }
        if buckets.count > 10_000 { buckets = buckets.filter { var b = $0.value; return !b.isFull(now: now) } }
        closing.removeAll { entry in
            guard now >= entry.deadline else { return false }
            entry.stream.reset()  // (a stream whose writes finished is closed already: a no-op)
            return true
        }
    }

    /// Authenticates `r`, limits its key's rate, and has the server answer it.
    func answer(_ r: APIRequest, from c: APIConnection, _ done: @escaping (APIResponse) -> Void) {
        guard let auth = r.header("authorization"), auth.lowercased().hasPrefix("bearer "),
              let token = auth.dropFirst(7).split(separator: " ").first.map(String.init), token.utf8.count <= 256
        else {
            return done(.problem(RewindError(.unauthorized, "send the API key as `Authorization: Bearer <key>` (`rewind admin api-key create`)"),
                                 headers: [("WWW-Authenticate", "Bearer")]))
        }
        lookUpKey(token) { [unowned self] result in
            switch result {
            case let .failure(e): done(.problem(e))
            case .success(nil):
                self.logger.info("API: a request with an unknown or revoked key", metadata: ["peer": "\(c.peer)"])
                done(.problem(RewindError(.unauthorized, "unknown or revoked API key"), headers: [("WWW-Authenticate", "Bearer error=\"invalid_token\"")]))
            case let .success(key?):
                var bucket = self.buckets[key.id] ?? TokenBucket(rate: self.limits.rate, burst: self.limits.burst, now: self.now)
                let wait = bucket.take(now: self.now)
                self.buckets[key.id] = bucket
                if let wait {
                    let seconds = max(1, Int((wait + 999) / 1000))
                    return done(.problem(RewindError(.rateLimited, "key \(key.name): more than \(Int(self.limits.rate)) requests a second",
                                                     details: ["retry_after_ms": .int(Int64(wait))]),
                                         headers: [("Retry-After", String(seconds))]))
                }
                self.handle(r, key, done)
            }
        }
    }
}
