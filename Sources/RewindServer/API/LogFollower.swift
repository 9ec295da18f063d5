import RewindCore
import RewindLoop
import RewindStore

/// One `GET /v1/events` stream (PROTOCOL.md, "Following the log"): the log
/// read by position on a PostgreSQL connection of its own, on libuv's thread
/// pool (`Follow.page`), written to the API connection as Server-Sent Events
/// on the loop — `id:` the position, `data:` the entry — a page after
/// another while there is more, then every 200 ms (a head that moved, or a
/// transaction elsewhere that ended, lets the horizon move on), with a
/// comment line every 15 s so proxies and clients see it alive. It ends when
/// the client leaves or stops reading (the connection's bound: it resumes
/// with `Last-Event-ID`).
final class LogFollower {
    /// What one read on the pool needs, used by one job at a time.
    private final class Reader: @unchecked Sendable {
        let conninfo: String
        let keys: Follow.Keys?
        /// The API key the stream was opened with: checked again now and then (a revoked key's stream ends).
        let apiKey: Int64
        var keyCheckedAt: UInt64 = 0
        var db: Database?
        init(conninfo: String, keys: Follow.Keys?, apiKey: Int64) {
            self.conninfo = conninfo
            self.keys = keys
            self.apiKey = apiKey
        }
    }

    static let page = 500
    static let pollMs: UInt64 = 200
    static let heartbeatMs: UInt64 = 15_000

    private let sink: APIStreamSink
    private let loop: EventLoop
    private let reader: Reader
    private let prefix: String?
    private var position: Int64
    private let timer: Timer
    private var lastWrite: UInt64
    private let clock: () -> UInt64
    private var onEnd: (LogFollower) -> Void

    /// How often the stream's key is checked again, ms.
    static let keyCheckMs: UInt64 = 5_000

    init(sink: APIStreamSink, loop: EventLoop, conninfo: String, content: DocumentKeys?, after: Int64, prefix: String?, key: Int64,
         clock: @escaping () -> UInt64, onEnd: @escaping (LogFollower) -> Void) {
        self.sink = sink
        self.loop = loop
        reader = Reader(conninfo: conninfo, keys: content.map { Follow.Keys($0) }, apiKey: key)
        self.prefix = prefix
        position = after
        timer = Timer(loop: loop)
        self.clock = clock
        lastWrite = clock()
        self.onEnd = onEnd
    }

    func start() {
        sink.write(Array(": following the log after position \(position)\n\n".utf8))
        read()
    }

    private func read() {
        guard sink.isOpen else { return finish() }
        let reader = self.reader, after = position, prefix = self.prefix, now = clock()
        BackgroundWork.run(on: loop, { () -> Result<Follow.Page?, RewindError> in
            do throws(RewindError) {
                if reader.db == nil { reader.db = try Database(reader.conninfo) }
                if now - reader.keyCheckedAt >= LogFollower.keyCheckMs {
                    guard try APIKeys.isLive(reader.apiKey, db: reader.db!) else { return .success(nil) }
                    reader.keyCheckedAt = now
                }
                return .success(try Follow.page(after: after, prefix: prefix, limit: LogFollower.page, keys: reader.keys, db: reader.db!))
            } catch {
                reader.db = nil  // a lost connection is made again on the next read
                return .failure(error)
            }
        }) { [self] result in
            guard self.sink.isOpen else { return self.finish() }
            switch result {
            case .success(nil):
                self.sink.write(Array(": the API key was revoked\n\n".utf8))
                return self.finish()
            case let .success(page?):
                var out: [UInt8] = []
                for e in page.entries {
                    out += Array("id: \(e.position)\ndata: ".utf8) + JSONWriter.encode(e.json) + [0x0A, 0x0A]
                }
                // Past entries of other documents (a prefix): an `id:` alone moves the client's Last-Event-ID and
                // fires nothing, so a reconnect does not read that stretch again (at most once a second when idle).
                let moved = page.next > (page.entries.last?.position ?? self.position)
                if moved && (!out.isEmpty || self.clock() - self.lastWrite >= 1_000) {
                    out += Array("id: \(page.next)\n\n".utf8)
                }
                if !out.isEmpty {
                    guard self.sink.write(out) else { return self.finish() }
                    self.lastWrite = self.clock()
                }
                self.position = page.next  // all there is below it has been read
                if page.entries.count == Self.page { return self.read() }
            case let .failure(e):
                // Told as a comment (an SSE client ignores it), and tried again: the follower keeps its position.
                guard self.sink.write(Array(": the log could not be read (\(e.code.rawValue)); trying again\n\n".utf8)) else { return self.finish() }
            }
            if self.clock() - self.lastWrite >= Self.heartbeatMs {
                guard self.sink.write(Array(": alive\n\n".utf8)) else { return self.finish() }
                self.lastWrite = self.clock()
            }
            self.timer.start(after: Self.pollMs) { [self] in self.read() }
        }
    }

    private func finish() {
        timer.close()
        let reader = self.reader
        BackgroundWork.run(on: loop, { reader.db = nil }) { _ in }  // its PostgreSQL connection closed off the loop
        onEnd(self)
    }
}
